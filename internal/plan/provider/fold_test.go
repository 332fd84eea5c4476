package provider

import (
	"errors"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
)

// TestFold: every way a reconcile ends is folded into the status in one
// place — a refusal onto its condition, a failed write onto Installed,
// and the Flux objects' health, when they were read, onto Installed and
// Available.
func TestFold(t *testing.T) {
	t.Run("an artifact refusal leaves the compatibility unknown", func(t *testing.T) {
		p := core()
		err := plan.Failing(v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolveFailedReason, "registry down", 0)
		if res := Fold(p, Desired{}, nil, err); res != nil {
			t.Errorf("health folded without the Flux objects read: %+v", res)
		}
		want(t, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason)
		want(t, p, v1alpha1.CompatibleCondition, metav1.ConditionUnknown, v1alpha1.ReconcilingReason)
		want(t, p, v1alpha1.PausedCondition, metav1.ConditionFalse, v1alpha1.NotPausedReason)
	})
	t.Run("a wait is Unknown and leaves the rest", func(t *testing.T) {
		p := core()
		conditions.True(p, v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolvedReason, "resolved")
		Fold(p, Desired{}, nil, plan.Waiting(v1alpha1.CompatibleCondition, v1alpha1.WaitingForCoreReason, "core", 0))
		want(t, p, v1alpha1.CompatibleCondition, metav1.ConditionUnknown, v1alpha1.WaitingForCoreReason)
		want(t, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason)
	})
	t.Run("a failed write fails Installed", func(t *testing.T) {
		p := core()
		Fold(p, Desired{}, nil, errors.New("applying Kustomization capi-system/core-cluster-api: forbidden"))
		want(t, p, v1alpha1.InstalledCondition, metav1.ConditionFalse, v1alpha1.InstallFailedReason)
	})
	t.Run("the Flux objects' health", func(t *testing.T) {
		p := core()
		p.Spec.Suspend = true
		in := &health.ProviderInput{Generation: p.Generation, DesiredVersion: p.Spec.Version, Suspended: true, Now: metav1.Now(),
			Source: health.Observation{Kind: sourcev1.OCIRepositoryKind, Name: "core-cluster-api", Namespace: p.Namespace, Missing: true},
			Apply:  health.Observation{Kind: kustomizev1.KustomizationKind, Name: "core-cluster-api", Namespace: p.Namespace, Missing: true}}
		res := Fold(p, Desired{Suspend: true}, in, nil)
		if res == nil {
			t.Fatal("no health fold with the Flux objects read")
		}
		want(t, p, v1alpha1.PausedCondition, metav1.ConditionTrue, v1alpha1.PausedReason)
		want(t, p, v1alpha1.InstalledCondition, res.Installed.Status, res.Installed.Reason)
		want(t, p, v1alpha1.AvailableCondition, res.Available.Status, res.Available.Reason)
		if len(p.Status.FluxObjects) != len(res.FluxObjects) {
			t.Errorf("fluxObjects %v, want %v", p.Status.FluxObjects, res.FluxObjects)
		}
	})
}

func want(t *testing.T, p v1alpha1.Provider, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := conditions.Get(p, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != p.GetGeneration() {
		t.Errorf("%s = %+v, want %s %s for generation %d", typ, c, status, reason, p.GetGeneration())
	}
}
