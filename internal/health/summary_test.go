package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// healthy are a provider's conditions when everything is fine, for
// generation 4.
func healthy() []metav1.Condition {
	c := func(t, status, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: t + " says " + reason, ObservedGeneration: 4}
	}
	return []metav1.Condition{
		c(v1alpha1.ArtifactResolvedCondition, "True", v1alpha1.ResolvedReason),
		c(v1alpha1.CompatibleCondition, "True", v1alpha1.CompatibleReason),
		c(v1alpha1.InstalledCondition, "True", v1alpha1.InstalledReason),
		c(v1alpha1.AvailableCondition, "True", v1alpha1.AvailableReason),
		c(v1alpha1.PausedCondition, "False", v1alpha1.NotPausedReason),
		c(v1alpha1.DeletingCondition, "False", v1alpha1.NotDeletingReason),
	}
}

func TestSummary(t *testing.T) {
	set := func(t, status, reason string, gen int64) func([]metav1.Condition) {
		return func(conds []metav1.Condition) {
			for i := range conds {
				if conds[i].Type == t {
					conds[i].Status, conds[i].Reason, conds[i].ObservedGeneration = metav1.ConditionStatus(status), reason, gen
					conds[i].Message = t + " says " + reason
				}
			}
		}
	}
	drop := func(t string) func([]metav1.Condition) []metav1.Condition {
		return func(conds []metav1.Condition) []metav1.Condition {
			var out []metav1.Condition
			for _, c := range conds {
				if c.Type != t {
					out = append(out, c)
				}
			}
			return out
		}
	}
	tests := []struct {
		name    string
		change  []func([]metav1.Condition)
		drop    string
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "all good", status: "True", reason: v1alpha1.SucceededReason},
		{name: "first blocking wins, in order", change: []func([]metav1.Condition){
			set(v1alpha1.AvailableCondition, "False", v1alpha1.NotAvailableReason, 4),
			set(v1alpha1.CompatibleCondition, "False", v1alpha1.DowngradeReason, 4),
		}, status: "False", reason: v1alpha1.DowngradeReason, message: "Compatible: Compatible says DowngradeRefused"},
		{name: "False beats an earlier Unknown", change: []func([]metav1.Condition){
			set(v1alpha1.ArtifactResolvedCondition, "Unknown", v1alpha1.ReconcilingReason, 4),
			set(v1alpha1.InstalledCondition, "False", v1alpha1.UpgradingReason, 4),
		}, status: "False", reason: v1alpha1.UpgradingReason},
		{name: "paused blocks", change: []func([]metav1.Condition){set(v1alpha1.PausedCondition, "True", v1alpha1.PausedReason, 4)},
			status: "False", reason: v1alpha1.PausedReason, message: "Paused: "},
		{name: "deleting blocks", change: []func([]metav1.Condition){set(v1alpha1.DeletingCondition, "True", v1alpha1.DeletionBlockedReason, 4)},
			status: "False", reason: v1alpha1.DeletionBlockedReason},
		{name: "unknown input", change: []func([]metav1.Condition){set(v1alpha1.InstalledCondition, "Unknown", v1alpha1.InstallingReason, 4)},
			status: "Unknown", reason: v1alpha1.InstallingReason, message: "Installed: Installed says Installing"},
		{name: "a positive condition of an older generation is not trusted", change: []func([]metav1.Condition){set(v1alpha1.AvailableCondition, "True", v1alpha1.AvailableReason, 3)},
			status: "Unknown", reason: v1alpha1.ReconcilingReason, message: "Available describes generation 3, not 4 yet"},
		{name: "a stale False is not blocking but Unknown", change: []func([]metav1.Condition){set(v1alpha1.CompatibleCondition, "False", v1alpha1.DowngradeReason, 3)},
			status: "Unknown", reason: v1alpha1.ReconcilingReason},
		{name: "not deleting since an earlier generation still holds", change: []func([]metav1.Condition){set(v1alpha1.DeletingCondition, "False", v1alpha1.NotDeletingReason, 1)},
			status: "True", reason: v1alpha1.SucceededReason},
		{name: "missing input", drop: v1alpha1.CompatibleCondition, status: "Unknown", reason: v1alpha1.ReconcilingReason, message: "Compatible is not reported yet"},
		{name: "missing Paused", drop: v1alpha1.PausedCondition, status: "Unknown", reason: v1alpha1.ReconcilingReason},
	}
	now := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := healthy()
			for _, change := range tt.change {
				change(conds)
			}
			if tt.drop != "" {
				conds = drop(tt.drop)(conds)
			}
			got := Summary(4, conds, now)
			if got.Type != v1alpha1.ReadyCondition || got.Status != tt.status || got.Reason != tt.reason || got.ObservedGeneration != 4 || !got.LastTransitionTime.Equal(&now) {
				t.Errorf("Ready = %+v, want %s/%s", got, tt.status, tt.reason)
			}
			if tt.message != "" && !strings.Contains(got.Message, tt.message) {
				t.Errorf("message %q lacks %q", got.Message, tt.message)
			}
		})
	}
}
