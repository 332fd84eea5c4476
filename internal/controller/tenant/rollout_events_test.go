package tenant

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/metrics"
)

func TestRolloutEvents(t *testing.T) {
	s := steps{r: &Reconciler{Metrics: metrics.NewRecorder(prometheus.NewRegistry())}}
	tenant := func(st *tenancyv1alpha1.RolloutStatus) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: tenancyv1alpha1.TenantStatus{Rollout: st}}
	}
	v1 := &tenancyv1alpha1.StackRevision{ID: "aaaaaaaaaa", Artifact: "v1@sha256:a"}
	v2 := &tenancyv1alpha1.StackRevision{ID: "bbbbbbbbbb", Artifact: "v2@sha256:b"}
	complete := &tenancyv1alpha1.RolloutStatus{Phase: tenancyv1alpha1.RolloutComplete, Target: v1, LastGood: v1}
	started := &tenancyv1alpha1.RolloutStatus{Phase: tenancyv1alpha1.RolloutProgressing, Target: v2, LastGood: v1,
		Waves: []tenancyv1alpha1.WaveStatus{{Name: "canary"}, {Name: "late"}}}
	ev := s.rolloutEvents(tenant(complete), tenant(started))
	if len(ev) != 1 || ev[0].Reason != "RolloutStarted" || ev[0].Type != "Normal" || ev[0].Message != "rolling out v2@sha256:b (revision bbbbbbbbbb) in 2 waves" {
		t.Fatalf("a new revision: %+v", ev)
	}
	if ev := s.rolloutEvents(tenant(started), tenant(started)); len(ev) != 0 {
		t.Errorf("nothing new: %+v", ev)
	}
	for _, c := range []struct {
		reason  string
		warning bool
	}{{tenancyv1alpha1.RolloutProgressingReason, false}, {tenancyv1alpha1.RolloutBakingReason, false}, {tenancyv1alpha1.RolloutResolvingReason, false},
		{tenancyv1alpha1.RolledBackReason, true}, {tenancyv1alpha1.RolloutPausedReason, true}, {tenancyv1alpha1.InvalidRolloutReason, true}} {
		if got := isWarning(metav1.Condition{Type: tenancyv1alpha1.RolledOutCondition, Status: metav1.ConditionFalse, Reason: c.reason}); got != c.warning {
			t.Errorf("RolledOut False %s: warning %v, want %v", c.reason, got, c.warning)
		}
	}
}
