package health

import (
	"strings"
	"testing"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
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
	if res := FoldBackend(src, hr, nil); res.Status != metav1.ConditionTrue || len(res.Objects) != 2 {
		t.Fatalf("both Ready at one artifact: %+v", res)
	}
	// A tag that moved: the release still runs the old artifact.
	moved := readyObservation("OCIRepository", "0.1.0@sha256:bbb")
	if res := FoldBackend(moved, hr, nil); res.Status != metav1.ConditionUnknown || res.Reason != "Installing" {
		t.Fatalf("a new artifact not applied yet: %+v", res)
	}
	// Flux's failure, without its trailing newline.
	failed := hr
	failed.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: "values don't meet the schema\n", ObservedGeneration: 2}}
	res := FoldBackend(src, failed, nil)
	if res.Status != metav1.ConditionFalse || res.Reason != "InstallFailed" || res.Message[len(res.Message)-1] == '\n' {
		t.Fatalf("a failed install: %+v", res)
	}
	// Refused by the API server under the ServiceAccount Flux
	// impersonates: the hint names what to grant it.
	forbidden := hr
	forbidden.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "InstallFailed", ObservedGeneration: 2,
		Message: "secrets is forbidden: User \"system:serviceaccount:team:installer\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\"\n"}}
	if res := FoldBackend(src, forbidden, nil); !strings.Contains(res.Message, `"team"; Flux installs the backend as that ServiceAccount (spec.backend.serviceAccountName`) {
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
	if res := FoldBackend(fetching, waiting, nil); res.Status != metav1.ConditionUnknown {
		t.Fatalf("an applier waiting for its source's first artifact: %+v", res)
	}
	broken := fetching
	broken.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "OCIPullFailed", Message: "no such tag", ObservedGeneration: 2}}
	if res := FoldBackend(broken, waiting, nil); res.Status != metav1.ConditionFalse || res.Reason != "OCIPullFailed" {
		t.Fatalf("a source that failed: %+v", res)
	}
	// An applier that has not seen its new generation yet.
	behind := hr
	behind.Generation = 3
	if res := FoldBackend(src, behind, nil); res.Status == metav1.ConditionTrue {
		t.Fatalf("an applier behind its generation: %+v", res)
	}
}

// Flux's routine reconcile of what a backend already applied keeps it
// Ready: helm-controller checking its prerequisites, kustomize-controller
// re-running the health checks of the revision it applied when the fold
// before recorded it Ready there. Without that record, or at another
// revision, it is Unknown; a failure shows at once.
func TestFoldBackendHoldsARoutineReconcile(t *testing.T) {
	src := readyObservation("OCIRepository", "v1.0.0@sha256:aaa")
	hr := readyObservation("HelmRelease", "sha256:aaa")
	hr.LastAttemptedRevision = hr.Revision
	hr.Conditions = append(hr.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: "Fulfilling prerequisites", ObservedGeneration: 2})
	if res := FoldBackend(src, hr, nil); res.Status != metav1.ConditionTrue || res.Objects[1].Ready != metav1.ConditionTrue {
		t.Errorf("helm-controller's routine reconcile: %+v", res)
	}

	ks := readyObservation("Kustomization", "v1.0.0@sha256:aaa")
	ks.LastAttemptedRevision = ks.Revision
	ks.Conditions = []metav1.Condition{
		{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "Reconciliation in progress", ObservedGeneration: 2},
		{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: "Running health checks for revision v1.0.0@sha256:aaa with a timeout of 5m0s", ObservedGeneration: 2},
		{Type: meta.HealthyCondition, Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "Running health checks", ObservedGeneration: 2},
	}
	was := []clustersv1alpha1.BackendStatus{{Kind: "OCIRepository", Name: src.Name, Ready: metav1.ConditionTrue, Revision: src.Revision},
		{Kind: "Kustomization", Name: ks.Name, Ready: metav1.ConditionTrue, Revision: ks.Revision}}
	if res := FoldBackend(src, ks, was); res.Status != metav1.ConditionTrue || res.Objects[1].Ready != metav1.ConditionTrue {
		t.Errorf("health checks run again on the revision found healthy: %+v", res)
	}
	if res := FoldBackend(src, ks, nil); res.Status != metav1.ConditionUnknown {
		t.Errorf("health checks without a record that the last passed: %+v", res)
	}
	other := []clustersv1alpha1.BackendStatus{{Kind: "Kustomization", Name: ks.Name, Ready: metav1.ConditionTrue, Revision: "v0.9.0@sha256:000"}}
	if res := FoldBackend(src, ks, other); res.Status != metav1.ConditionUnknown {
		t.Errorf("health checks of a revision not found healthy before: %+v", res)
	}
	failed := ks
	failed.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "HealthCheckFailed", Message: "timeout", ObservedGeneration: 2}}
	if res := FoldBackend(src, failed, was); res.Status != metav1.ConditionFalse {
		t.Errorf("a re-check that failed: %+v", res)
	}
}
