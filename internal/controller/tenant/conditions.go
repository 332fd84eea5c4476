package tenant

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// ownedConditions are the conditions this controller sets besides Ready;
// each starts Unknown so nothing claims Ready before it is.
var ownedConditions = []string{
	tenancyv1alpha1.ManagementReadyCondition,
	tenancyv1alpha1.ClustersReadyCondition,
}

func nowTime() metav1.Time { return metav1.Now() }

func initConditions(t *tenancyv1alpha1.Tenant) {
	for _, c := range ownedConditions {
		if apimeta.FindStatusCondition(t.Status.Conditions, c) == nil {
			apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionUnknown,
				Reason: tenancyv1alpha1.ReconcilingReason, Message: "not observed yet", ObservedGeneration: t.Generation})
		}
	}
	if t.DeletionTimestamp.IsZero() {
		setFalse(t, tenancyv1alpha1.DeletingCondition, tenancyv1alpha1.NotDeletingReason, "")
	}
}

func setCondition(t *tenancyv1alpha1.Tenant, typ string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: t.Generation})
}

func setTrue(t *tenancyv1alpha1.Tenant, typ, reason, message string) {
	setCondition(t, typ, metav1.ConditionTrue, reason, message)
}

func setFalse(t *tenancyv1alpha1.Tenant, typ, reason, message string) {
	setCondition(t, typ, metav1.ConditionFalse, reason, message)
}

// reconcilePaused mirrors spec.suspend into Paused.
func reconcilePaused(t *tenancyv1alpha1.Tenant) {
	if t.Spec.Suspend {
		setTrue(t, tenancyv1alpha1.PausedCondition, tenancyv1alpha1.PausedReason,
			"spec.suspend is true: Flux leaves the stack on every cluster as it is, and newly selected clusters get nothing until it is unset")
		return
	}
	setFalse(t, tenancyv1alpha1.PausedCondition, tenancyv1alpha1.NotPausedReason, "")
}

// isWarning tells whether a condition's state needs attention: a positive
// condition that is False.
func isWarning(c metav1.Condition) bool {
	switch c.Type {
	case tenancyv1alpha1.PausedCondition, tenancyv1alpha1.DeletingCondition:
		return false
	default:
		return c.Status == metav1.ConditionFalse
	}
}

// event records one event on the tenant about something the controller
// did (a stale object deleted), beside the shell's transition events.
func (r *Reconciler) event(t *tenancyv1alpha1.Tenant, eventType, reason, message string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.AnnotatedEventf(t, nil, eventType, reason, "%s", message)
}
