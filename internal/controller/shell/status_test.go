package shell

import (
	"context"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// TestStatusWriteKeepsAnotherWritersCondition: someone else adds a
// condition of their own between the shell's read and its status write.
// A merge patch replaces the whole conditions list, so the write is
// locked to the version read; on the conflict the shell merges what this
// reconcile changed onto the object as it is now, and the other writer's
// condition stays.
func TestStatusWriteKeepsAnotherWritersCondition(t *testing.T) {
	steps := &fakeSteps{ready: metav1.ConditionFalse}
	obj := tenant()
	obj.Finalizers = []string{tenancyv1alpha1.Finalizer}
	obj.Status.Conditions = []metav1.Condition{{Type: "Done", Status: metav1.ConditionUnknown, Reason: "Reconciling", ObservedGeneration: 1,
		LastTransitionTime: metav1.Now()}}
	s, c, _, _ := newShell(t, steps, obj)

	var raced bool
	s.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if !raced {
				// Another writer gets there first.
				raced = true
				var other tenancyv1alpha1.Tenant
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), &other); err != nil {
					return err
				}
				apimeta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{Type: "ExternalCheck", Status: metav1.ConditionTrue, Reason: "Checked"})
				if err := c.Status().Update(ctx, &other); err != nil {
					return err
				}
			}
			return c.Status().Patch(ctx, o, p, opts...)
		},
	})
	if _, err := s.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got tenancyv1alpha1.Tenant
	if err := c.Get(context.Background(), client.ObjectKey{Name: "team-a"}, &got); err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("the status write did not run")
	}
	if ext := apimeta.FindStatusCondition(got.Status.Conditions, "ExternalCheck"); ext == nil {
		t.Errorf("the other writer's condition is gone: %+v", got.Status.Conditions)
	}
	if done := apimeta.FindStatusCondition(got.Status.Conditions, "Done"); done == nil || done.Status != metav1.ConditionFalse {
		t.Errorf("Done = %+v, want this reconcile's False", done)
	}
	if ready := apimeta.FindStatusCondition(got.Status.Conditions, ReadyCondition); ready == nil {
		t.Errorf("Ready was not written: %+v", got.Status.Conditions)
	}
}
