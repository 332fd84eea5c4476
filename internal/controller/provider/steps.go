package provider

import (
	"context"
	"fmt"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/metrics"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// steps are the provider's own steps in the reconcile shell.
type providerSteps struct{ r *Reconciler }

var _ shell.Steps[v1alpha1.Provider] = providerSteps{}

func (s providerSteps) Init(obj v1alpha1.Provider) {
	conditions.Init(obj, providerplan.OwnedConditions, v1alpha1.ReconcilingReason, !obj.GetDeletionTimestamp().IsZero(),
		v1alpha1.DeletingCondition, v1alpha1.NotDeletingReason)
}

func (s providerSteps) Reconcile(ctx context.Context, obj v1alpha1.Provider, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, obj, request)
}

func (s providerSteps) Finalize(ctx context.Context, obj v1alpha1.Provider) (shell.Outcome, error) {
	s.r.Timelines.forget(obj)
	s.r.Source.Forget(obj)
	return s.r.finalize(ctx, obj)
}

func (s providerSteps) Summarize(obj v1alpha1.Provider) {
	providerplan.Summarize(obj, metav1.Now())
}

func (s providerSteps) Status(obj v1alpha1.Provider) *meta.ReconcileRequestStatus {
	return &obj.GetStatus().ReconcileRequestStatus
}

// Events: a new installed version, and a newer version that can be
// installed, when it first appears.
func (s providerSteps) Events(before, after v1alpha1.Provider) []events.Event {
	var out []events.Event
	if next := upgradeAvailable(after); next != "" && next != upgradeAvailable(before) {
		c := apimeta.FindStatusCondition(after.GetConditions(), v1alpha1.UpgradeAvailableCondition)
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.UpgradeAvailableReason,
			Message: fmt.Sprintf("%s %s/%s: %s", s.r.Kind.Name, after.GetNamespace(), after.GetName(), c.Message)})
	}
	v, old := after.GetStatus().InstalledVersion, before.GetStatus().InstalledVersion
	if v == "" || v == old {
		return out
	}
	msg := fmt.Sprintf("%s %s/%s installed %s", s.r.Kind.Name, after.GetNamespace(), after.GetName(), v)
	if old != "" {
		msg = fmt.Sprintf("%s %s/%s upgraded from %s to %s", s.r.Kind.Name, after.GetNamespace(), after.GetName(), old, v)
	}
	return append(out, events.Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.InstalledReason, Message: msg})
}

// EventMetadata is the revision the event is about, as Flux's events
// carry it, so notification-controller forwards it: the one preflight
// last resolved (refused or not), else the one installed.
func (s providerSteps) EventMetadata(obj v1alpha1.Provider) map[string]string {
	revision := obj.GetStatus().LastAttemptedRevision
	if a := obj.GetStatus().Artifact; revision == "" && a != nil {
		revision = a.Revision
	}
	if revision == "" {
		return nil
	}
	return map[string]string{v1alpha1.GroupVersion.Group + "/" + eventv1.MetaRevisionKey: revision}
}

// progressReasons are the reasons of normal work: a condition False for
// one of them is progress, not a Warning.
var progressReasons = map[string]bool{
	v1alpha1.ReconcilingReason:          true,
	v1alpha1.InstallingReason:           true,
	v1alpha1.UpgradingReason:            true,
	v1alpha1.WaitingForCoreReason:       true,
	v1alpha1.WaitingForDependencyReason: true,
	v1alpha1.DeletingReason:             true,
}

// Warning tells whether a condition's state needs attention: a positive
// condition that is False for a reason other than progress, or Deleting
// blocked.
func (s providerSteps) Warning(c metav1.Condition) bool { return isWarning(c) }

func isWarning(c metav1.Condition) bool {
	switch c.Type {
	case v1alpha1.PausedCondition, v1alpha1.UpgradeAvailableCondition:
		// UpgradeAvailable is news, never trouble: its own event says so.
		return false
	case v1alpha1.DeletingCondition:
		return c.Reason == v1alpha1.DeletionBlockedReason
	case v1alpha1.ArtifactResolvedCondition:
		// Ready holds, but the registry or release host cannot be reached,
		// or a release changed under its version: worth a warning.
		switch c.Reason {
		case v1alpha1.RegistryUnreachableReason, v1alpha1.ReleaseUnreachableReason, v1alpha1.ReleaseChangedReason:
			return true
		}
		return c.Status == metav1.ConditionFalse && !progressReasons[c.Reason]
	default:
		return c.Status == metav1.ConditionFalse && !progressReasons[c.Reason]
	}
}

// State is the provider's line in capwright_resource_info.
func (s providerSteps) State(obj v1alpha1.Provider) metrics.ObjectState {
	st := metrics.ObjectState{Kind: s.r.Kind.Name, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Ready: metav1.ConditionUnknown, Suspended: obj.GetSpec().Suspend, Version: obj.GetStatus().InstalledVersion,
		Upgrade: upgradeAvailable(obj)}
	if c := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.ReadyCondition); c != nil {
		st.Ready, st.Reason = c.Status, c.Reason
	}
	if a := obj.GetStatus().Artifact; a != nil {
		st.Revision = a.Revision
	}
	return st
}
