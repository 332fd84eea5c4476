package health

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

const (
	oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// kustomization builds a Kustomization with the status shape
// kustomize-controller v1.9 writes.
func kustomization(gen, observed int64, applied, attempted string, conds ...metav1.Condition) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api", Generation: gen}}
	ks.Status.ObservedGeneration = observed
	ks.Status.LastAppliedRevision = applied
	ks.Status.LastAttemptedRevision = attempted
	ks.Status.Conditions = conds
	return ks
}

func c(t, status, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
}

func TestFoldProvider(t *testing.T) {
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api", Generation: 2}}
	repo.Status.ObservedGeneration = 2
	repo.Status.Artifact = &meta.Artifact{Revision: newDigest, Path: "ocirepository/capi-system/core-cluster-api/x.tar.gz"}
	repo.Status.Conditions = []metav1.Condition{c("Ready", "True", "Succeeded", "stored artifact for digest '"+newDigest+"'", 2)}

	tests := []struct {
		name          string
		ks            *kustomizev1.Kustomization
		previous      string
		wantInstalled metav1.ConditionStatus
		wantReason    string
		wantAvailable metav1.ConditionStatus
		wantVersion   string
		wantMessage   string
	}{
		{
			name: "applied and healthy at the expected revision",
			ks: kustomization(2, 2, newDigest, newDigest,
				c("Ready", "True", "ReconciliationSucceeded", "Applied revision: "+newDigest, 2),
				c("Healthy", "True", "Succeeded", "Health check passed in 5s", 2)),
			previous:      "v1.13.6",
			wantInstalled: metav1.ConditionTrue, wantReason: v1alpha1.InstalledReason,
			wantAvailable: metav1.ConditionTrue, wantVersion: "v1.14.2",
		},
		{
			name: "upgrade in progress: new generation not observed yet",
			ks: kustomization(3, 2, oldDigest, oldDigest,
				c("Ready", "True", "ReconciliationSucceeded", "Applied revision: "+oldDigest, 2)),
			previous:      "v1.13.6",
			wantInstalled: metav1.ConditionFalse, wantReason: v1alpha1.UpgradingReason,
			wantAvailable: metav1.ConditionUnknown, wantVersion: "v1.13.6",
			wantMessage: "installed: v1.13.6",
		},
		{
			name: "upgrade in progress: reconciling the new revision",
			ks: kustomization(3, 3, oldDigest, newDigest,
				c("Ready", "Unknown", "Progressing", "Reconciliation in progress", 3),
				c("Reconciling", "True", "Progressing", "Running health checks for revision "+newDigest, 3)),
			previous:      "v1.13.6",
			wantInstalled: metav1.ConditionFalse, wantReason: v1alpha1.UpgradingReason,
			wantAvailable: metav1.ConditionUnknown, wantVersion: "v1.13.6",
			wantMessage: "Running health checks",
		},
		{
			name: "health checks of the new revision failed",
			ks: kustomization(3, 3, oldDigest, newDigest,
				c("Ready", "False", "HealthCheckFailed", "health check failed after 5m0s: timeout waiting for: [Deployment/capi-system/capi-controller-manager status: 'InProgress']", 3),
				c("Healthy", "False", "HealthCheckFailed", "timeout", 3)),
			previous:      "v1.13.6",
			wantInstalled: metav1.ConditionFalse, wantReason: v1alpha1.InstallFailedReason,
			wantAvailable: metav1.ConditionFalse, wantVersion: "v1.13.6",
			wantMessage: "capi-controller-manager",
		},
		{
			name: "stalled is terminal",
			ks: kustomization(1, 1, "", newDigest,
				c("Ready", "False", "BuildFailed", "kustomize build failed", 1),
				c("Stalled", "True", "BuildFailed", "kustomize build failed: missing metadata.name", 1)),
			wantInstalled: metav1.ConditionFalse, wantReason: v1alpha1.InstallFailedReason,
			wantAvailable: metav1.ConditionFalse, wantVersion: "",
			wantMessage: "missing metadata.name",
		},
		{
			name: "a Ready condition of an older generation does not count",
			ks: kustomization(2, 2, newDigest, newDigest,
				c("Ready", "True", "ReconciliationSucceeded", "Applied revision: "+newDigest, 1)),
			wantInstalled: metav1.ConditionFalse, wantReason: v1alpha1.InstallingReason,
			wantAvailable: metav1.ConditionUnknown, wantVersion: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := FoldProvider(ProviderInput{
				Generation: 5, DesiredVersion: "v1.14.2", PreviousInstalledVersion: tt.previous, ExpectedRevision: newDigest,
				Source: ObserveOCIRepository(repo), Apply: ObserveKustomization(tt.ks),
			})
			if res.Installed.Status != tt.wantInstalled || res.Installed.Reason != tt.wantReason {
				t.Errorf("Installed = %s %s (%s), want %s %s", res.Installed.Status, res.Installed.Reason, res.Installed.Message, tt.wantInstalled, tt.wantReason)
			}
			if res.Available.Status != tt.wantAvailable {
				t.Errorf("Available = %s (%s), want %s", res.Available.Status, res.Available.Message, tt.wantAvailable)
			}
			if res.InstalledVersion != tt.wantVersion {
				t.Errorf("InstalledVersion = %q, want %q", res.InstalledVersion, tt.wantVersion)
			}
			if !strings.Contains(res.Installed.Message, tt.wantMessage) {
				t.Errorf("Installed message %q does not contain %q", res.Installed.Message, tt.wantMessage)
			}
			if res.Installed.ObservedGeneration != 5 || res.Available.ObservedGeneration != 5 {
				t.Errorf("conditions must carry the provider's generation")
			}
			if len(res.FluxObjects) != 2 || res.FluxObjects[0].Ready != metav1.ConditionTrue {
				t.Errorf("FluxObjects = %+v", res.FluxObjects)
			}
		})
	}
}

func TestFoldProviderMissingObjects(t *testing.T) {
	res := FoldProvider(ProviderInput{Generation: 1, DesiredVersion: "v1.14.2", ExpectedRevision: newDigest,
		Source: Observation{Kind: "OCIRepository", Namespace: "ns", Name: "x", Missing: true},
		Apply:  Observation{Kind: "Kustomization", Namespace: "ns", Name: "x", Missing: true}})
	if res.Installed.Status == metav1.ConditionTrue || res.Available.Status != metav1.ConditionUnknown {
		t.Fatalf("missing objects: Installed %s Available %s", res.Installed.Status, res.Available.Status)
	}
	if !strings.Contains(res.Available.Message, "Kustomization ns/x does not exist") {
		t.Errorf("Available message should name the missing object: %q", res.Available.Message)
	}
}

func TestSummary(t *testing.T) {
	all := func(status string) []metav1.Condition {
		return []metav1.Condition{
			c(v1alpha1.ArtifactResolvedCondition, status, "R", "", 2),
			c(v1alpha1.CompatibleCondition, "True", "C", "", 2),
			c(v1alpha1.InstalledCondition, "True", "I", "", 2),
			c(v1alpha1.AvailableCondition, "True", "A", "", 2),
			c(v1alpha1.PausedCondition, "False", "P", "", 2),
			c(v1alpha1.DeletingCondition, "False", "D", "", 2),
		}
	}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		want       metav1.ConditionStatus
		wantReason string
	}{
		{"all good", all("True"), metav1.ConditionTrue, v1alpha1.SucceededReason},
		{"artifact failed", all("False"), metav1.ConditionFalse, "R"},
		{"artifact unknown", all("Unknown"), metav1.ConditionUnknown, v1alpha1.ReconcilingReason},
		{"paused wins over everything else", append(all("False")[:4], c(v1alpha1.PausedCondition, "True", v1alpha1.PausedReason, "", 2)), metav1.ConditionFalse, v1alpha1.PausedReason},
		{"stale generation is unknown", append(all("True")[1:], c(v1alpha1.ArtifactResolvedCondition, "True", "R", "", 1)), metav1.ConditionUnknown, v1alpha1.ReconcilingReason},
		{"nothing observed yet", nil, metav1.ConditionUnknown, v1alpha1.ReconcilingReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summary(2, tt.conds, metav1.Now())
			if got.Status != tt.want || got.Reason != tt.wantReason || got.ObservedGeneration != 2 {
				t.Errorf("Summary = %s %s (%s), want %s %s", got.Status, got.Reason, got.Message, tt.want, tt.wantReason)
			}
		})
	}
}

func TestSetConditionReportsChanges(t *testing.T) {
	var conds []metav1.Condition
	first := c("Ready", "True", "Succeeded", "ok", 1)
	if !SetCondition(&conds, first) {
		t.Fatal("first set must report a change")
	}
	stamp := conds[0].LastTransitionTime
	if SetCondition(&conds, c("Ready", "True", "Succeeded", "ok", 1)) {
		t.Fatal("setting the same condition again must report no change")
	}
	if !SetCondition(&conds, c("Ready", "True", "Succeeded", "still ok", 2)) || !conds[0].LastTransitionTime.Equal(&stamp) {
		t.Fatal("a new message keeps the transition time of an unchanged status")
	}
}
