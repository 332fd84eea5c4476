package health

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// tenantSummaryTerms are the inputs of a tenant's Ready, in the order in
// which the first blocking one explains Ready.
func tenantSummaryTerms() []summaryTerm {
	return []summaryTerm{
		{tenancyv1alpha1.ManagementReadyCondition, true},
		{tenancyv1alpha1.ClustersReadyCondition, true},
		{tenancyv1alpha1.PausedCondition, false},
		{tenancyv1alpha1.DeletingCondition, false},
	}
}

// TenantSummary is a tenant's Ready condition over ManagementReady and
// ClustersReady (which must be True) and Paused and Deleting (which must
// not be), with the rules of Summary: False with the reason and message of
// the first blocking condition, else Unknown with those of the first one
// that is Unknown, missing or of another generation, else True.
func TenantSummary(generation int64, conds []metav1.Condition, now metav1.Time) metav1.Condition {
	c := metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, ObservedGeneration: generation, LastTransitionTime: now,
		Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.SucceededReason,
		Message: "the tenant's namespace is provisioned and the stack is Ready on every selected cluster"}
	var unknown *metav1.Condition
	setUnknown := func(reason, message string) {
		if unknown == nil {
			unknown = &metav1.Condition{Reason: reason, Message: message}
		}
	}
	for _, term := range tenantSummaryTerms() {
		t := apimeta.FindStatusCondition(conds, term.condType)
		switch {
		case t == nil:
			setUnknown(tenancyv1alpha1.ReconcilingReason, term.condType+" is not reported yet")
		case !term.positive && t.Status == metav1.ConditionTrue,
			term.positive && t.Status == metav1.ConditionFalse && t.ObservedGeneration == generation:
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, t.Reason, term.condType+": "+t.Message
			return c
		case term.positive && t.ObservedGeneration != generation:
			setUnknown(tenancyv1alpha1.ReconcilingReason, fmt.Sprintf("%s describes generation %d, not %d yet", term.condType, t.ObservedGeneration, generation))
		case t.Status != metav1.ConditionTrue && t.Status != metav1.ConditionFalse:
			setUnknown(t.Reason, term.condType+": "+t.Message)
		}
	}
	if unknown != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, unknown.Reason, unknown.Message
	}
	return c
}
