package shell

import (
	"context"
	"fmt"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
)

func TestRefusalOutcome(t *testing.T) {
	for _, tt := range []struct {
		refusal   *plan.Refusal
		resync    time.Duration
		wantRetry time.Duration
		stalled   bool
		status    metav1.ConditionStatus
	}{
		{plan.Stalling("Compatible", "IncompatibleContract", "no", 10*time.Minute), time.Minute, 10 * time.Minute, true, metav1.ConditionFalse},
		{plan.Failing("ArtifactResolved", "ResolveFailed", "down", 0), 5 * time.Minute, 5 * time.Minute, false, metav1.ConditionFalse},
		{plan.Waiting("Compatible", "WaitingForCore", "core", 30*time.Second), time.Minute, 30 * time.Second, false, metav1.ConditionUnknown},
	} {
		t.Run(tt.refusal.Reason, func(t *testing.T) {
			wrapped := fmt.Errorf("checking: %w", tt.refusal)
			r, ok := plan.AsRefusal(wrapped)
			if !ok || r != tt.refusal {
				t.Fatalf("plan.AsRefusal(%v) = %v, %v", wrapped, r, ok)
			}
			out := refusalOutcome(r, tt.resync)
			if out.Result.RequeueAfter != tt.wantRetry || (out.Stalled != nil) != tt.stalled || r.Status != tt.status || r.Waits() != (tt.status == metav1.ConditionUnknown) {
				t.Errorf("outcome %+v, status %s", out, r.Status)
			}
			if tt.stalled && (out.Stalled.Reason != r.Reason || out.Stalled.Message != r.Message) {
				t.Errorf("stall %+v", out.Stalled)
			}
		})
	}
}

// TestShellTurnsARefusalIntoItsOutcome: a refusal returned by the steps
// is no error for controller-runtime to back off on; the object stalls
// and is looked at again when the refusal says.
func TestShellTurnsARefusalIntoItsOutcome(t *testing.T) {
	steps := &refusingSteps{fakeSteps: fakeSteps{ready: metav1.ConditionFalse}, refusal: plan.Stalling("Done", "Invalid", "spec.x is wrong: fix it", 7*time.Minute)}
	obj := tenant()
	s, c, _, _ := newShell(t, &steps.fakeSteps, obj)
	s.Steps = steps
	res, err := s.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("a refusal came back as an error: %v", err)
	}
	if res.RequeueAfter != 7*time.Minute {
		t.Errorf("requeue after %s, want the refusal's 7m", res.RequeueAfter)
	}
	got := tenant()
	if err := c.Get(context.Background(), objKey(obj), got); err != nil {
		t.Fatal(err)
	}
	stalled := findCondition(got.Status.Conditions, StalledCondition)
	if stalled == nil || stalled.Reason != "Invalid" || stalled.Message != "spec.x is wrong: fix it" {
		t.Errorf("Stalled = %+v", stalled)
	}
}

// refusingSteps are fakeSteps whose Reconcile refuses.
type refusingSteps struct {
	fakeSteps
	refusal *plan.Refusal
}

func (f *refusingSteps) Reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant, request string) (Outcome, error) {
	if _, err := f.fakeSteps.Reconcile(ctx, t, request); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, f.refusal
}

func objKey(t *tenancyv1alpha1.Tenant) client.ObjectKey { return client.ObjectKeyFromObject(t) }

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, typ)
}
