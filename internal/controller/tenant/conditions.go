package tenant

import (
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/health"
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
			health.SetCondition(&t.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionUnknown,
				Reason: tenancyv1alpha1.ReconcilingReason, Message: "not observed yet", ObservedGeneration: t.Generation})
		}
	}
	if t.DeletionTimestamp.IsZero() {
		setFalse(t, tenancyv1alpha1.DeletingCondition, tenancyv1alpha1.NotDeletingReason, "")
	}
}

func setCondition(t *tenancyv1alpha1.Tenant, typ string, status metav1.ConditionStatus, reason, message string) {
	health.SetCondition(&t.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: t.Generation})
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

// emitTransitions records an event, in the Flux event shape, for every
// condition that changed status or reason, and for every cluster whose
// phase changed to Ready or Failed.
func (r *Reconciler) emitTransitions(before, after *tenancyv1alpha1.Tenant) {
	if r.Recorder == nil {
		return
	}
	for _, e := range events.Transitions(before.Status.Conditions, after.Status.Conditions, isWarning) {
		r.event(after, e.Type, e.Reason, e.Message)
	}
	previous := map[string]tenancyv1alpha1.ClusterPhase{}
	for _, c := range before.Status.Clusters {
		previous[c.Namespace+"/"+c.Name] = c.Phase
	}
	for _, c := range after.Status.Clusters {
		ref := c.Namespace + "/" + c.Name
		if previous[ref] == c.Phase {
			continue
		}
		// The revision as metadata, so notification-controller can
		// forward it, as Flux's own events carry it.
		var annotations map[string]string
		if c.AppliedRevision != "" {
			annotations = map[string]string{tenancyv1alpha1.GroupVersion.Group + "/" + eventv1.MetaRevisionKey: c.AppliedRevision}
		}
		switch c.Phase {
		case tenancyv1alpha1.ClusterPhaseReady:
			r.Recorder.AnnotatedEventf(after, annotations, corev1.EventTypeNormal, c.Reason, "cluster %s Ready: %s", ref, c.Message)
		case tenancyv1alpha1.ClusterPhaseFailed:
			r.Recorder.AnnotatedEventf(after, annotations, corev1.EventTypeWarning, c.Reason, "cluster %s Failed: %s", ref, c.Message)
		}
	}
}

// event records one event on the tenant.
func (r *Reconciler) event(t *tenancyv1alpha1.Tenant, eventType, reason, message string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.AnnotatedEventf(t, nil, eventType, reason, "%s", message)
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
