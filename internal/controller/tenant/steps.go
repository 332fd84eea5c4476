package tenant

import (
	"context"
	"fmt"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
)

// steps are the tenant's own steps in the reconcile shell.
type steps struct{ r *Reconciler }

var _ shell.Steps[*tenancyv1alpha1.Tenant] = steps{}

// ownedConditions are the conditions this controller sets besides Ready;
// each starts Unknown so nothing claims Ready before it is.
var ownedConditions = []string{
	tenancyv1alpha1.ManagementReadyCondition,
	tenancyv1alpha1.ClustersReadyCondition,
}

func (s steps) Init(t *tenancyv1alpha1.Tenant) {
	conditions.Init(t, ownedConditions, tenancyv1alpha1.ReconcilingReason, !t.DeletionTimestamp.IsZero(),
		tenancyv1alpha1.DeletingCondition, tenancyv1alpha1.NotDeletingReason)
}

func (s steps) Reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, t, request)
}

func (s steps) Finalize(ctx context.Context, t *tenancyv1alpha1.Tenant) (shell.Outcome, error) {
	return s.r.finalize(ctx, t)
}

func (s steps) Summarize(t *tenancyv1alpha1.Tenant) {
	t.Status.ObservedGeneration = t.Generation
	conditions.Put(t, health.TenantSummary(t.Generation, t.Status.Conditions, t.Spec.Rollout != nil, metav1.Now()))
}

func (s steps) Status(t *tenancyv1alpha1.Tenant) *meta.ReconcileRequestStatus {
	return &t.Status.ReconcileRequestStatus
}

// Events: every cluster whose phase changed to Ready or Failed, with the
// revision Flux applied there, and the rollout's steps (rolloutEvents).
func (s steps) Events(before, after *tenancyv1alpha1.Tenant) []events.Event {
	return append(clusterEvents(before, after), s.rolloutEvents(before, after)...)
}

// rolloutEvents: a rollout of a new revision started, and a rollout
// stopped by a failed wave counted in the metrics; RolledOut's
// transitions (the shell's events) say the rest — each wave's progress
// and bake, complete, rolled back (a Warning), paused.
func (s steps) rolloutEvents(before, after *tenancyv1alpha1.Tenant) []events.Event {
	b, a := before.Status.Rollout, after.Status.Rollout
	if a == nil || a.Target == nil {
		return nil
	}
	if b == nil {
		b = &tenancyv1alpha1.RolloutStatus{}
	}
	meta := revision(a.Target.Artifact)
	var out []events.Event
	if (b.Target == nil || b.Target.ID != a.Target.ID) && a.Phase == tenancyv1alpha1.RolloutProgressing {
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: "RolloutStarted", Metadata: meta,
			Message: fmt.Sprintf("rolling out %s (revision %s) in %d waves", a.Target.Artifact, a.Target.ID, len(a.Waves))})
	}
	if len(a.Failed) > 0 && (len(b.Failed) == 0 || !a.Failed[0].FailedAt.Equal(&b.Failed[0].FailedAt)) {
		s.r.Metrics.TenantRolloutStopped(after.Namespace, after.Name)
	}
	return out
}

// clusterEvents: every cluster whose phase changed to Ready or Failed,
// with the revision Flux applied there.
func clusterEvents(before, after *tenancyv1alpha1.Tenant) []events.Event {
	previous := map[string]tenancyv1alpha1.ClusterPhase{}
	for _, c := range before.Status.Clusters {
		previous[c.Namespace+"/"+c.Name] = c.Phase
	}
	var out []events.Event
	for _, c := range after.Status.Clusters {
		ref := c.Namespace + "/" + c.Name
		if previous[ref] == c.Phase {
			continue
		}
		switch c.Phase {
		case tenancyv1alpha1.ClusterPhaseReady:
			out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: c.Reason, Message: "cluster " + ref + " Ready: " + c.Message,
				Metadata: revision(c.AppliedRevision)})
		case tenancyv1alpha1.ClusterPhaseFailed:
			out = append(out, events.Event{Type: corev1.EventTypeWarning, Reason: c.Reason, Message: "cluster " + ref + " Failed: " + c.Message,
				Metadata: revision(c.AppliedRevision)})
		}
	}
	return out
}

// revision is the event metadata naming a revision, as Flux's events
// carry it, so notification-controller forwards it.
func revision(rev string) map[string]string {
	if rev == "" {
		return nil
	}
	return map[string]string{tenancyv1alpha1.GroupVersion.Group + "/" + eventv1.MetaRevisionKey: rev}
}

// EventMetadata: a tenant's revisions are per cluster (Events).
func (s steps) EventMetadata(*tenancyv1alpha1.Tenant) map[string]string { return nil }

func (s steps) Warning(c metav1.Condition) bool { return isWarning(c) }

// State is the tenant's line in capwright_resource_info, and its
// clusters per phase in capwright_tenant_clusters.
func (s steps) State(t *tenancyv1alpha1.Tenant) metrics.ObjectState {
	byPhase := map[string]int{}
	for _, c := range t.Status.Clusters {
		byPhase[string(c.Phase)]++
	}
	s.r.Metrics.TenantClusters(t.Namespace, t.Name, byPhase)
	var waves []metrics.RolloutWave
	if t.Status.Rollout != nil {
		for _, w := range t.Status.Rollout.Waves {
			waves = append(waves, metrics.RolloutWave{Name: w.Name, Total: int(w.Clusters), Updated: int(w.Updated), Failed: int(w.Failed)})
		}
	}
	s.r.Metrics.TenantRollout(t.Namespace, t.Name, waves)
	st := metrics.ObjectState{Kind: tenancyv1alpha1.TenantKind, Namespace: t.Namespace, Name: t.Name,
		Ready: metav1.ConditionUnknown, Suspended: t.Spec.Suspend}
	if c := conditions.Get(t, tenancyv1alpha1.ReadyCondition); c != nil {
		st.Ready, st.Reason = c.Status, c.Reason
	}
	return st
}

// isWarning tells whether a condition's state needs attention: a positive
// condition that is False.
func isWarning(c metav1.Condition) bool {
	switch c.Type {
	case tenancyv1alpha1.PausedCondition, tenancyv1alpha1.DeletingCondition:
		return false
	case tenancyv1alpha1.RolledOutCondition:
		// A rollout on its way is news, not trouble.
		switch c.Reason {
		case tenancyv1alpha1.RolloutProgressingReason, tenancyv1alpha1.RolloutBakingReason, tenancyv1alpha1.RolloutResolvingReason:
			return false
		}
		return c.Status == metav1.ConditionFalse
	default:
		return c.Status == metav1.ConditionFalse
	}
}
