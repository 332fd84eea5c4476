package tenant

import (
	"context"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/render"
)

// steps are the tenant's own steps in the reconcile shell.
type steps struct{ r *Reconciler }

var _ shell.Steps[*tenancyv1alpha1.Tenant] = steps{}

func (s steps) Init(t *tenancyv1alpha1.Tenant) { initConditions(t) }

func (s steps) Reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, t, request)
}

func (s steps) Finalize(ctx context.Context, t *tenancyv1alpha1.Tenant) (shell.Outcome, error) {
	return s.r.finalize(ctx, t)
}

func (s steps) Summarize(t *tenancyv1alpha1.Tenant) {
	t.Status.ObservedGeneration = t.Generation
	apimeta.SetStatusCondition(&t.Status.Conditions, health.TenantSummary(t.Generation, t.Status.Conditions, metav1.Now()))
}

func (s steps) Status(t *tenancyv1alpha1.Tenant) *meta.ReconcileRequestStatus {
	return &t.Status.ReconcileRequestStatus
}

// Events: every cluster whose phase changed to Ready or Failed, with the
// revision Flux applied there.
func (s steps) Events(before, after *tenancyv1alpha1.Tenant) []events.Event {
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
	st := metrics.ObjectState{Kind: tenancyv1alpha1.TenantKind, Namespace: t.Namespace, Name: t.Name,
		Ready: metav1.ConditionUnknown, Suspended: t.Spec.Suspend}
	if c := apimeta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition); c != nil {
		st.Ready, st.Reason = c.Status, c.Reason
	}
	return st
}

// conflictingManagement tells whether an object of the tenant's
// management belongs to someone else.
func conflictingManagement(t *tenancyv1alpha1.Tenant) bool {
	c := apimeta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ManagementReadyCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == tenancyv1alpha1.ObjectConflictReason
}

// requestFluxReconcile passes a reconcile.fluxcd.io/requestedAt request on
// to the tenant's sources and clusters' Flux objects, the Kustomizations
// of the target namespace included (those that are the tenant's:
// conflicting objects are someone else's). The ExternalArtifacts have
// nothing to reconcile: Capwright is their controller.
func (r *Reconciler) requestFluxReconcile(ctx context.Context, rendered *render.RenderedTenant, conflicts map[types.NamespacedName]string, request string) error {
	var objects []ctrl.Object
	for _, src := range rendered.Sources {
		objects = append(objects, src.DeepCopy())
	}
	for _, c := range rendered.Clusters {
		if _, bad := conflicts[c.Cluster]; bad {
			continue
		}
		if c.Namespace != nil {
			objects = append(objects, c.Namespace.DeepCopy())
		}
		objects = append(objects, c.Object().(ctrl.Object).DeepCopyObject().(ctrl.Object))
	}
	for _, o := range objects {
		if err := apply.RequestReconcile(ctx, r.Client, o, request, FieldOwner); err != nil {
			return err
		}
	}
	return nil
}
