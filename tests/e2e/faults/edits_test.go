package faults

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestEditedFluxObjectsAreTakenBack (fault 10, providers) has a person
// suspend a provider's Kustomization, make it orphan what it applied on
// deletion, set a field Capwright does not set (force), and take the
// provider's label off its OCIRepository: Capwright takes back the fields
// it sets and the label at once, keeps track of both objects, and leaves
// the field it does not set as it was set.
func TestEditedFluxObjectsAreTakenBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	p := testProvider(t, ctx, c, env.Registry.Host, "edited")
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, p)
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	key := client.ObjectKey{Namespace: p.Namespace, Name: "infrastructure-edited"}

	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, key, ks); err != nil {
		t.Fatal(err)
	}
	ks.Spec.Suspend = true
	ks.Spec.DeletionPolicy = kustomizev1.DeletionPolicyOrphan
	ks.Spec.Force = true
	if err := c.Update(ctx, ks); err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.OCIRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		t.Fatal(err)
	}
	delete(repo.Labels, v1alpha1.ProviderKindLabel)
	if err := c.Update(ctx, repo); err != nil {
		t.Fatal(err)
	}

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, ks); err != nil {
			return false, nil
		}
		if err := c.Get(ctx, key, repo); err != nil {
			return false, nil
		}
		return !ks.Spec.Suspend && ks.Spec.DeletionPolicy == kustomizev1.DeletionPolicyMirrorPrune &&
			repo.Labels[v1alpha1.ProviderKindLabel] == "InfrastructureProvider", nil
	})
	if err != nil {
		t.Fatalf("not taken back: Kustomization suspend=%v, deletionPolicy %s; OCIRepository labels %v", ks.Spec.Suspend, ks.Spec.DeletionPolicy, repo.Labels)
	}
	if !ks.Spec.Force {
		t.Error("spec.force, which Capwright does not set, was changed")
	}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
	for _, want := range []string{sourcev1.OCIRepositoryKind, kustomizev1.KustomizationKind} {
		found := false
		for _, o := range p.Status.FluxObjects {
			found = found || (o.Kind == want && o.Name == key.Name)
		}
		if !found {
			t.Errorf("status.fluxObjects lost the %s: %+v", want, p.Status.FluxObjects)
		}
	}
}
