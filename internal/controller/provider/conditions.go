package provider

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/health"
)

// ownedConditions are the conditions this controller sets; each starts
// Unknown so nothing claims Ready before it is.
var ownedConditions = []string{
	v1alpha1.ArtifactResolvedCondition,
	v1alpha1.CompatibleCondition,
	v1alpha1.InstalledCondition,
	v1alpha1.AvailableCondition,
}

func initConditions(obj v1alpha1.Provider) {
	conds := obj.GetConditions()
	for _, t := range ownedConditions {
		if apimeta.FindStatusCondition(conds, t) == nil {
			apimeta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReconcilingReason,
				Message: "not observed yet", ObservedGeneration: obj.GetGeneration()})
		}
	}
	if apimeta.FindStatusCondition(conds, v1alpha1.DeletingCondition) == nil && obj.GetDeletionTimestamp().IsZero() {
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.DeletingCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.NotDeletingReason, ObservedGeneration: obj.GetGeneration()})
	}
	obj.SetConditions(conds)
}

func setCondition(obj v1alpha1.Provider, t string, status metav1.ConditionStatus, reason, message string) {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration()})
	obj.SetConditions(conds)
}

func setTrue(obj v1alpha1.Provider, t, reason, message string) {
	setCondition(obj, t, metav1.ConditionTrue, reason, message)
}

func setFalse(obj v1alpha1.Provider, t, reason, message string) {
	setCondition(obj, t, metav1.ConditionFalse, reason, message)
}

// reconcilePaused mirrors spec.suspend into Paused.
func (r *Reconciler) reconcilePaused(obj v1alpha1.Provider) {
	if obj.GetSpec().Suspend {
		setTrue(obj, v1alpha1.PausedCondition, v1alpha1.PausedReason, "spec.suspend is true: Capwright and Flux leave the installed provider as it is")
		return
	}
	setFalse(obj, v1alpha1.PausedCondition, v1alpha1.NotPausedReason, "")
}

// setSummary computes Ready from the other conditions.
func setSummary(obj v1alpha1.Provider) {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, health.Summary(obj.GetGeneration(), conds, metav1.Now()))
	obj.SetConditions(conds)
}
