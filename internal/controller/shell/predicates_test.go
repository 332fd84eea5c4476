package shell

import (
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestFluxObjectChanged(t *testing.T) {
	base := providerKustomization()
	for _, tt := range []struct {
		name   string
		change func(k *kustomizev1.Kustomization)
		want   bool
	}{
		{"a resync: the same object", func(*kustomizev1.Kustomization) {}, false},
		{"a reconcile request only", func(k *kustomizev1.Kustomization) {
			k.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
		}, false},
		{"a new status", func(k *kustomizev1.Kustomization) { k.Status.LastAppliedRevision = "v1.14.3@sha256:abc" }, true},
		{"a condition reworded", func(k *kustomizev1.Kustomization) { k.Status.Conditions[0].Message = "Health check passed in 2s" }, true},
		{"an inventory entry gone", func(k *kustomizev1.Kustomization) {
			k.Status.Inventory.Entries = k.Status.Inventory.Entries[1:]
		}, true},
		{"a new generation", func(k *kustomizev1.Kustomization) { k.Generation = 2 }, true},
		{"a label changed", func(k *kustomizev1.Kustomization) { k.Labels = map[string]string{"x": "y"} }, true},
		{"being deleted", func(k *kustomizev1.Kustomization) { now := metav1.Now(); k.DeletionTimestamp = &now }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.change(n)
			if tt.name != "a resync: the same object" {
				n.ResourceVersion = "2" // every write gives a new one
			}
			if got := FluxObjectChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
			// The same answer for the unstructured form of both objects.
			if got := FluxObjectChanged().Update(event.UpdateEvent{ObjectOld: toUnstructured(t, base), ObjectNew: toUnstructured(t, n)}); got != tt.want {
				t.Errorf("Update of unstructured objects = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSameStatusOfObjectsWithoutAStatusField falls back to comparing
// the unstructured form.
func TestSameStatusOfObjectsWithoutAStatusField(t *testing.T) {
	a := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}}
	b := a.DeepCopy()
	b.ResourceVersion = "2"
	if !sameStatus(a, b) {
		t.Error("two objects without a status differ")
	}
}

// BenchmarkSameStatus is the predicate's status comparison for one update
// of a provider's Kustomization shaped like the real core provider's
// (namespace patches in the spec, an inventory of its objects, Flux's
// conditions): the typed status as it is, and through the unstructured
// form of the whole objects, as the predicate compared them before. It
// runs for every update of a watched Flux object, once per controller
// that watches the kind (each provider kind watches Kustomizations twice).
func BenchmarkSameStatus(b *testing.B) {
	old := providerKustomization()
	n := old.DeepCopy()
	n.ResourceVersion = "2"
	n.Status.Conditions[0].Message = "Reconciliation in progress"
	b.Run("typed status", func(b *testing.B) {
		for range b.N {
			sameStatus(old, n)
		}
	})
	b.Run("unstructured objects", func(b *testing.B) {
		for range b.N {
			sameUnstructuredStatus(old, n)
		}
	})
}

// providerKustomization is a Kustomization the size of the real core
// provider's: 26 inventory entries (the objects of CAPI v1.14.2's
// core-components.yaml), as many patches of about 250 bytes, and Flux's
// conditions.
func providerKustomization() *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api", Generation: 1, ResourceVersion: "1"}}
	k.Status.Inventory = &kustomizev1.ResourceInventory{}
	for i := range 26 {
		id := fmt.Sprintf("capi-system_object-%d_apps_Deployment", i)
		k.Status.Inventory.Entries = append(k.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: id, Version: "v1"})
		k.Spec.Patches = append(k.Spec.Patches, kustomize.Patch{
			Patch:  fmt.Sprintf("- op: replace\n  path: /metadata/namespace\n  value: capi-system\n# %s\n", strings.Repeat("x", 200)),
			Target: &kustomize.Selector{Kind: "Deployment", Name: fmt.Sprintf("object-%d", i)},
		})
	}
	k.Status.Conditions = []metav1.Condition{
		{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, Message: "Applied revision: v1.14.2@sha256:abc"},
		{Type: meta.HealthyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "Health check passed in 1.5s"},
	}
	k.Status.LastAppliedRevision = "v1.14.2@sha256:abc"
	return k
}

func toUnstructured(t *testing.T, o client.Object) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	content, err := runtimeToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u.SetUnstructuredContent(content)
	return u
}

func runtimeToUnstructured(o client.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
}
