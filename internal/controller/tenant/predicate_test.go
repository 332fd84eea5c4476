package tenant

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// TestLabelRemovalReachesTheTenant checks that removing the tenant label
// from a generated object wakes the tenant (which puts it back), while
// objects that never had it do not.
func TestLabelRemovalReachesTheTenant(t *testing.T) {
	labelled := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "acme"}}}
	bare := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	p := labelledOrWas()
	for _, tt := range []struct {
		name     string
		old, new *kustomizev1.Kustomization
		want     bool
	}{
		{"labelled", labelled, labelled, true},
		{"label removed", labelled, bare, true},
		{"never labelled", bare, bare, false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: update passes = %v, want %v", tt.name, got, tt.want)
		}
	}
	if p.Create(event.CreateEvent{Object: bare}) || !p.Create(event.CreateEvent{Object: labelled}) {
		t.Error("create events: only labelled objects should pass")
	}
}
