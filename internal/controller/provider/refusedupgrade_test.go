package provider

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// TestRefusedUpgradeKeepsTheInstalledVersion: v1.14.2 is installed and
// healthy; spec.version asks for v1.13.6, which preflight refuses (the
// tag is not in the registry). Flux still runs v1.14.2, so the fold must
// not credit the new spec.version as installed.
func TestRefusedUpgradeKeepsTheInstalledVersion(t *testing.T) {
	const digest = "sha256:c420f5d9183fb247a8c55a9db44f44451f882626c6faf66bbfcce61e2579348a"
	p := &v1alpha1.CoreProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-api", Namespace: "my-capi", Generation: 2},
		Spec:       v1alpha1.ProviderSpec{Version: "v1.13.6"},
	}
	p.Status.InstalledVersion = "v1.14.2"
	p.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: "oci://registry.example/core-cluster-api", Revision: "v1.14.2@" + digest, Digest: digest}

	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "core-cluster-api", Namespace: "my-capi", Generation: 1}}
	ks.Status.ObservedGeneration = 1
	ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = digest, digest
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 1}}
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "core-cluster-api", Namespace: "my-capi", Generation: 1}}
	repo.Status.ObservedGeneration = 1
	repo.Status.Artifact = &meta.Artifact{Revision: digest, Digest: "sha256:aa"}
	repo.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: 1}}
	observed := plan.Observed{
		plan.ObservedKey(kustomizev1.KustomizationKind, "my-capi", "core-cluster-api"): ks,
		plan.ObservedKey(sourcev1.OCIRepositoryKind, "my-capi", "core-cluster-api"):    repo,
	}

	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	r := &Reconciler{Client: c, Kind: Kind{Name: "CoreProvider"}}
	refusal := plan.Failing(v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolveFailedReason, "v1.13.6 not found in the registry", 0)
	d, err := providerplan.Plan(providerplan.Facts{Provider: p, Kind: "CoreProvider", Refusal: refusal})
	if err != refusal {
		t.Fatalf("plan: %v, want the refusal", err)
	}
	s := r.readBack(context.Background(), d, observed)
	providerplan.Fold(p, d, s.in, refusal)
	if p.Status.InstalledVersion != "v1.14.2" {
		t.Errorf("installedVersion = %s while Flux runs v1.14.2", p.Status.InstalledVersion)
	}
}
