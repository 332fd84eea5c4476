package health

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyObservation(kind, revision string) Observation {
	return Observation{Kind: kind, Name: "controlplane-a", Namespace: "team", Generation: 2, ObservedGeneration: 2, Revision: revision,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "ok", ObservedGeneration: 2}}}
}

func TestFoldBackend(t *testing.T) {
	src := readyObservation("OCIRepository", "0.1.0@sha256:aaa")
	hr := readyObservation("HelmRelease", "sha256:aaa")
	if res := FoldBackend(src, hr); res.Status != metav1.ConditionTrue || len(res.Objects) != 2 {
		t.Fatalf("both Ready at one artifact: %+v", res)
	}
	// A tag that moved: the release still runs the old artifact.
	moved := readyObservation("OCIRepository", "0.1.0@sha256:bbb")
	if res := FoldBackend(moved, hr); res.Status != metav1.ConditionUnknown || res.Reason != "Installing" {
		t.Fatalf("a new artifact not applied yet: %+v", res)
	}
	// Flux's failure, without its trailing newline.
	failed := hr
	failed.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: "values don't meet the schema\n", ObservedGeneration: 2}}
	res := FoldBackend(src, failed)
	if res.Status != metav1.ConditionFalse || res.Reason != "InstallFailed" || res.Message[len(res.Message)-1] == '\n' {
		t.Fatalf("a failed install: %+v", res)
	}
	// Refused by the API server under the ServiceAccount Flux
	// impersonates: the hint names what to grant it.
	forbidden := hr
	forbidden.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "InstallFailed", ObservedGeneration: 2,
		Message: "secrets is forbidden: User \"system:serviceaccount:team:installer\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\"\n"}}
	if res := FoldBackend(src, forbidden); !strings.Contains(res.Message, `"team"; Flux installs the backend as that ServiceAccount (spec.backend.serviceAccountName`) {
		t.Fatalf("a backend its ServiceAccount may not install: %q", res.Message)
	}
	// The applier written with its source says it fails until the
	// source's first artifact: progress, unless the source failed.
	waiting := hr
	waiting.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "SourceNotReady",
		Message: "OCIRepository 'team/controlplane-a' is not ready: latest generation of object has not been reconciled", ObservedGeneration: 2}}
	fetching := src
	fetching.Revision = ""
	fetching.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "building artifact", ObservedGeneration: 2}}
	if res := FoldBackend(fetching, waiting); res.Status != metav1.ConditionUnknown {
		t.Fatalf("an applier waiting for its source's first artifact: %+v", res)
	}
	broken := fetching
	broken.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "OCIPullFailed", Message: "no such tag", ObservedGeneration: 2}}
	if res := FoldBackend(broken, waiting); res.Status != metav1.ConditionFalse || res.Reason != "OCIPullFailed" {
		t.Fatalf("a source that failed: %+v", res)
	}
	// An applier that has not seen its new generation yet.
	behind := hr
	behind.Generation = 3
	if res := FoldBackend(src, behind); res.Status == metav1.ConditionTrue {
		t.Fatalf("an applier behind its generation: %+v", res)
	}
}
