package provider

import (
	"fmt"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/events"
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
			health.SetCondition(&conds, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReconcilingReason,
				Message: "not observed yet", ObservedGeneration: obj.GetGeneration()})
		}
	}
	if apimeta.FindStatusCondition(conds, v1alpha1.DeletingCondition) == nil && obj.GetDeletionTimestamp().IsZero() {
		health.SetCondition(&conds, metav1.Condition{Type: v1alpha1.DeletingCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.NotDeletingReason, ObservedGeneration: obj.GetGeneration()})
	}
	obj.SetConditions(conds)
}

func setCondition(obj v1alpha1.Provider, t string, status metav1.ConditionStatus, reason, message string) {
	conds := obj.GetConditions()
	health.SetCondition(&conds, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration()})
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
	health.SetCondition(&conds, health.Summary(obj.GetGeneration(), conds, metav1.Now()))
	obj.SetConditions(conds)
}

// emitTransitions records an event, in the Flux event shape (the revision
// as metadata, so notification-controller can forward it), for every
// condition that changed status or reason and for a new installed version.
func (r *Reconciler) emitTransitions(before, after v1alpha1.Provider) {
	if r.Recorder == nil {
		return
	}
	annotations := map[string]string{}
	if a := after.GetStatus().Artifact; a != nil {
		annotations[v1alpha1.GroupVersion.Group+"/"+eventv1.MetaRevisionKey] = a.Revision
	}
	if v, old := after.GetStatus().InstalledVersion, before.GetStatus().InstalledVersion; v != "" && v != old {
		msg := fmt.Sprintf("%s %s/%s installed %s", r.Kind.Name, after.GetNamespace(), after.GetName(), v)
		if old != "" {
			msg = fmt.Sprintf("%s %s/%s upgraded from %s to %s", r.Kind.Name, after.GetNamespace(), after.GetName(), old, v)
		}
		r.Recorder.AnnotatedEventf(after, annotations, corev1.EventTypeNormal, v1alpha1.InstalledReason, "%s", msg)
	}
	for _, e := range events.Transitions(before.GetConditions(), after.GetConditions(), isWarning) {
		r.Recorder.AnnotatedEventf(after, annotations, e.Type, e.Reason, "%s", e.Message)
	}
}

// isWarning tells whether a condition's state needs attention: a positive
// condition that is False, or Deleting blocked.
func isWarning(c metav1.Condition) bool {
	switch c.Type {
	case v1alpha1.PausedCondition:
		return false
	case v1alpha1.DeletingCondition:
		return c.Reason == v1alpha1.DeletionBlockedReason
	default:
		return c.Status == metav1.ConditionFalse
	}
}
