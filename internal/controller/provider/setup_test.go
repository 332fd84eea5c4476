package provider

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestOtherProvidersWakeOnlyForTheCoreChangesTheyRead: the core
// provider's progress writes (Flux fetching, applying, checking health)
// wake no other provider; what checkCore reads does.
func TestOtherProvidersWakeOnlyForTheCoreChangesTheyRead(t *testing.T) {
	core := func(generation int64, contract string, conds ...metav1.Condition) *v1alpha1.CoreProvider {
		c := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api", Namespace: "capi-system", Generation: generation}}
		c.Status.Contract = contract
		c.Status.Conditions = conds
		return c
	}
	cond := func(t string, s metav1.ConditionStatus, gen int64, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, ObservedGeneration: gen, Reason: reason, Message: msg}
	}
	compatible := cond(v1alpha1.CompatibleCondition, metav1.ConditionTrue, 2, "Compatible", "cluster-api v1.14.2 (contract v1beta2) can be installed")
	installed := cond(v1alpha1.InstalledCondition, metav1.ConditionTrue, 1, "Installed", "v1.13.6")
	upgrading := cond(v1alpha1.InstalledCondition, metav1.ConditionFalse, 2, "Upgrading", "Kustomization capi-system/core-cluster-api is applying v1.14.2")
	deleting := core(2, "v1beta2", compatible, installed)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now

	tests := []struct {
		name     string
		old, cur *v1alpha1.CoreProvider
		wake     bool
	}{
		{"progress of the core's upgrade", core(2, "v1beta2", compatible, installed), core(2, "v1beta2", compatible, upgrading), false},
		{"the core's preflight passes: its contract is known", core(1, ""), core(1, "v1beta2", cond(v1alpha1.CompatibleCondition, metav1.ConditionTrue, 1, "Compatible", "")), true},
		{"a new version of the core", core(1, "v1beta2", installed), core(2, "v1beta2", installed), true},
		{"the core's contract changes", core(2, "v1beta1", compatible, installed), core(2, "v1beta2", compatible, installed), true},
		{"the core is deleted", core(2, "v1beta2", compatible, installed), deleting, true},
	}
	p := coreProviderChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.cur}); got != tt.wake {
				t.Errorf("wakes the other providers: %v, want %v", got, tt.wake)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: core(1, "")}) || !p.Delete(event.DeleteEvent{Object: core(1, "")}) {
		t.Error("a core provider created or deleted must wake the others")
	}
}
