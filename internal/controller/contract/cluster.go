package contract

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/plan"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
)

// ClusterReconciler reconciles CapwrightClusters.
type ClusterReconciler struct {
	*Shared
	written shell.Written
}

// Reconcile runs the reconcile shell with the infrastructure's steps.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// An object exists: it needs Clusters watched.
	r.clusterWatch.Want()
	return (&shell.Reconciler[*clustersv1alpha1.CapwrightCluster]{
		Client:     r.Client,
		Kind:       clustersv1alpha1.ClusterKind,
		New:        func() *clustersv1alpha1.CapwrightCluster { return &clustersv1alpha1.CapwrightCluster{} },
		Finalizer:  clustersv1alpha1.Finalizer,
		FieldOwner: plan.FieldOwner,
		Steps:      clusterSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

var clusterConditions = []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.PausedCondition}

type clusterSteps struct{ r *ClusterReconciler }

var _ shell.Steps[*clustersv1alpha1.CapwrightCluster] = clusterSteps{}

func (s clusterSteps) Init(c *clustersv1alpha1.CapwrightCluster) {
	conditions.Init(c, clusterConditions, clustersv1alpha1.ReconcilingReason, !c.DeletionTimestamp.IsZero(),
		clustersv1alpha1.DeletingCondition, clustersv1alpha1.NotDeletingReason)
}

func (s clusterSteps) Reconcile(ctx context.Context, c *clustersv1alpha1.CapwrightCluster, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, c, request)
}

func (s clusterSteps) Finalize(ctx context.Context, c *clustersv1alpha1.CapwrightCluster) (shell.Outcome, error) {
	return s.r.finalizeCluster(ctx, c)
}

func (s clusterSteps) Summarize(c *clustersv1alpha1.CapwrightCluster) {
	c.Status.ObservedGeneration = c.Generation
	conditions.Put(c, health.ClusterSummary(c.Generation, c.Status.Conditions, metav1.Now()))
}

func (s clusterSteps) Status(c *clustersv1alpha1.CapwrightCluster) *meta.ReconcileRequestStatus {
	return &c.Status.ReconcileRequestStatus
}

func (s clusterSteps) Events(before, after *clustersv1alpha1.CapwrightCluster) []events.Event {
	return nil
}

func (s clusterSteps) EventMetadata(*clustersv1alpha1.CapwrightCluster) map[string]string { return nil }

func (s clusterSteps) Warning(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse && c.Type != clustersv1alpha1.PausedCondition && c.Type != clustersv1alpha1.DeletingCondition
}

func (s clusterSteps) State(c *clustersv1alpha1.CapwrightCluster) metrics.ObjectState {
	st := metrics.ObjectState{Kind: clustersv1alpha1.ClusterKind, Namespace: c.Namespace, Name: c.Name, Ready: metav1.ConditionUnknown}
	if cond := apimeta.FindStatusCondition(c.Status.Conditions, clustersv1alpha1.ReadyCondition); cond != nil {
		st.Ready, st.Reason = cond.Status, cond.Reason
	}
	if cond := apimeta.FindStatusCondition(c.Status.Conditions, clustersv1alpha1.PausedCondition); cond != nil {
		st.Suspended = cond.Status == metav1.ConditionTrue
	}
	return st
}

// reconcile: facts (the owning Cluster) → plan (the backend's Flux
// objects, or a refusal) → sync (written; read back, with the status view
// once Flux installed it; the endpoint set) → fold (BackendReady,
// provisioned), once, whatever stopped the steps early.
func (r *ClusterReconciler) reconcile(ctx context.Context, c *clustersv1alpha1.CapwrightCluster, request string) (shell.Outcome, error) {
	f, exprs, err := r.readFacts(ctx, clusterFacts(c), request)
	var d *contractplan.Desired
	var seen contractplan.Observed
	if err == nil {
		d, err = planned(contractplan.Plan(f))
	}
	if err == nil {
		seen, err = r.syncCluster(ctx, c, f, *d, exprs)
	}
	next, err := contractplan.FoldCluster(c, f, d, seen, err)
	return shell.Then(next), err
}
