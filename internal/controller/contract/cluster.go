package contract

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
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
		FieldOwner: FieldOwner,
		Steps:      clusterSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

func clusterSubject(c *clustersv1alpha1.CapwrightCluster) subject {
	return subject{
		obj: c, kind: clustersv1alpha1.ClusterKind,
		backend: c.Spec.Backend, statusFrom: c.Spec.StatusFrom,
		version:       func(f clusterFacts) string { return f.TopologyVersion },
		backendStatus: &c.Status.Backend,
		endpoint:      &c.Spec.ControlPlaneEndpoint,
	}
}

var clusterConditions = []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.PausedCondition}

type clusterSteps struct{ r *ClusterReconciler }

var _ shell.Steps[*clustersv1alpha1.CapwrightCluster] = clusterSteps{}

func (s clusterSteps) Init(c *clustersv1alpha1.CapwrightCluster) {
	initConditions(clusterSubject(c), clusterConditions)
}

func (s clusterSteps) Reconcile(ctx context.Context, c *clustersv1alpha1.CapwrightCluster, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, c, request)
}

func (s clusterSteps) Finalize(ctx context.Context, c *clustersv1alpha1.CapwrightCluster) (shell.Outcome, error) {
	sub := clusterSubject(c)
	_, hold, err := s.r.holdDeletion(ctx, sub)
	if err != nil {
		return shell.Outcome{}, err
	}
	if hold != nil {
		return *hold, nil
	}
	pending, err := s.r.finalizeBackend(ctx, sub)
	if err != nil {
		return shell.Outcome{}, err
	}
	if pending != "" {
		sub.set(clustersv1alpha1.DeletingCondition, metav1.ConditionTrue, clustersv1alpha1.DeletingReason, pending)
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: pollWhileWaiting}}, nil
	}
	return shell.Outcome{Done: true}, nil
}

func (s clusterSteps) Summarize(c *clustersv1alpha1.CapwrightCluster) {
	c.Status.ObservedGeneration = c.Generation
	apimeta.SetStatusCondition(&c.Status.Conditions, health.ClusterSummary(c.Generation, c.Status.Conditions, metav1.Now()))
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

// reconcile: Cluster → backend written and folded → status view (when
// set) → endpoint and provisioned.
func (r *ClusterReconciler) reconcile(ctx context.Context, c *clustersv1alpha1.CapwrightCluster, request string) (shell.Outcome, error) {
	sub := clusterSubject(c)
	p, err := r.prepare(ctx, sub, request)
	if err != nil {
		return halted(err)
	}
	requeue := r.resync()
	if c.Spec.Backend == nil {
		sub.set(clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason,
			"no backend: the infrastructure is provided with the control plane")
		c.Status.Initialization.Provisioned = ptr.To(true)
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: requeue}}, nil
	}
	ready := p.backend.Status == metav1.ConditionTrue
	if ready && c.Spec.StatusFrom != nil {
		statusRef := fmt.Sprintf("%s %s/%s", c.Spec.StatusFrom.Kind, c.Namespace, p.statusName)
		v, ok, reason, message, retry := r.readView(ctx, sub, p)
		requeue = min(requeue, retry)
		if ok && !v.Ready {
			reason, message = notReady(v, statusRef)
		}
		if !ok || !v.Ready {
			ready = false
			sub.set(clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, reason, message)
		} else if !v.Endpoint.IsZero() && v.Endpoint != c.Spec.ControlPlaneEndpoint {
			patched := c.DeepCopy()
			patch := ctrl.MergeFrom(c.DeepCopy())
			patched.Spec.ControlPlaneEndpoint = v.Endpoint
			if err := r.Client.Patch(ctx, patched, patch, ctrl.FieldOwner(FieldOwner)); err != nil {
				return shell.Outcome{}, fmt.Errorf("setting spec.controlPlaneEndpoint of %s %s/%s: %w", clustersv1alpha1.ClusterKind, c.Namespace, c.Name, err)
			}
			c.Spec.ControlPlaneEndpoint = v.Endpoint
			c.ResourceVersion = patched.ResourceVersion
		}
	}
	if ready {
		c.Status.Initialization.Provisioned = ptr.To(true)
	} else {
		requeue = min(requeue, pollWhileWaiting)
	}
	if p.stale {
		requeue = min(requeue, time.Second)
	}
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: requeue}}, nil
}
