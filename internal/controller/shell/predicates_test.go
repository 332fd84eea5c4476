package shell

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestFluxObjectChanged(t *testing.T) {
	base := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "core-cluster-api", Generation: 1, ResourceVersion: "1"}}
	for _, tt := range []struct {
		name   string
		change func(k *kustomizev1.Kustomization)
		want   bool
	}{
		{"a reconcile request only", func(k *kustomizev1.Kustomization) {
			k.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
			k.ResourceVersion = "2"
		}, false},
		{"a new status", func(k *kustomizev1.Kustomization) { k.Status.LastAppliedRevision = "v1.14.2@sha256:abc" }, true},
		{"a new generation", func(k *kustomizev1.Kustomization) { k.Generation = 2 }, true},
		{"a label changed", func(k *kustomizev1.Kustomization) { k.Labels = map[string]string{"x": "y"} }, true},
		{"being deleted", func(k *kustomizev1.Kustomization) { now := metav1.Now(); k.DeletionTimestamp = &now }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.change(n)
			if got := FluxObjectChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
}
