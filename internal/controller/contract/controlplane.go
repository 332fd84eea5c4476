package contract

import (
	"context"
	"fmt"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

// ControlPlaneReconciler reconciles CapwrightControlPlanes.
type ControlPlaneReconciler struct {
	*Shared
	written shell.Written
}

// Reconcile runs the reconcile shell with the control plane's steps.
func (r *ControlPlaneReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// An object exists: it needs Clusters watched.
	r.clusterWatch.Want()
	return (&shell.Reconciler[*clustersv1alpha1.CapwrightControlPlane]{
		Client:     r.Client,
		Kind:       clustersv1alpha1.ControlPlaneKind,
		New:        func() *clustersv1alpha1.CapwrightControlPlane { return &clustersv1alpha1.CapwrightControlPlane{} },
		Finalizer:  clustersv1alpha1.Finalizer,
		FieldOwner: plan.FieldOwner,
		Steps:      cpSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

var cpConditions = []string{
	clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition,
	clustersv1alpha1.AvailableCondition, clustersv1alpha1.PausedCondition,
}

type cpSteps struct{ r *ControlPlaneReconciler }

var _ shell.Steps[*clustersv1alpha1.CapwrightControlPlane] = cpSteps{}

func (s cpSteps) Init(cp *clustersv1alpha1.CapwrightControlPlane) {
	conditions.Init(cp, cpConditions, clustersv1alpha1.ReconcilingReason, !cp.DeletionTimestamp.IsZero(),
		clustersv1alpha1.DeletingCondition, clustersv1alpha1.NotDeletingReason)
	cp.Status.ExternalManagedControlPlane = ptr.To(true)
}

func (s cpSteps) Reconcile(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, cp, request)
}

func (s cpSteps) Finalize(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane) (shell.Outcome, error) {
	return s.r.finalizeControlPlane(ctx, cp)
}

func (s cpSteps) Summarize(cp *clustersv1alpha1.CapwrightControlPlane) {
	cp.Status.ObservedGeneration = cp.Generation
	conditions.Put(cp, health.ControlPlaneSummary(cp.Generation, cp.Status.Conditions, metav1.Now()))
}

func (s cpSteps) Status(cp *clustersv1alpha1.CapwrightControlPlane) *meta.ReconcileRequestStatus {
	return &cp.Status.ReconcileRequestStatus
}

// Events: the control plane initialized, and each new version it runs.
func (s cpSteps) Events(before, after *clustersv1alpha1.CapwrightControlPlane) []events.Event {
	var out []events.Event
	if !ptr.Deref(before.Status.Initialization.ControlPlaneInitialized, false) && ptr.Deref(after.Status.Initialization.ControlPlaneInitialized, false) {
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: "Initialized",
			Message: fmt.Sprintf("control plane initialized at %s:%d", after.Spec.ControlPlaneEndpoint.Host, after.Spec.ControlPlaneEndpoint.Port)})
	}
	if before.Status.Version != "" && after.Status.Version != before.Status.Version {
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: "Upgraded",
			Message: "control plane upgraded from " + before.Status.Version + " to " + after.Status.Version})
	}
	return out
}

func (s cpSteps) EventMetadata(cp *clustersv1alpha1.CapwrightControlPlane) map[string]string {
	for _, b := range cp.Status.Backend {
		if b.Kind != "OCIRepository" && b.Revision != "" {
			return map[string]string{clustersv1alpha1.GroupVersion.Group + "/" + eventv1.MetaRevisionKey: b.Revision}
		}
	}
	return nil
}

func (s cpSteps) Warning(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse && c.Type != clustersv1alpha1.PausedCondition && c.Type != clustersv1alpha1.DeletingCondition
}

func (s cpSteps) State(cp *clustersv1alpha1.CapwrightControlPlane) metrics.ObjectState {
	st := metrics.ObjectState{Kind: clustersv1alpha1.ControlPlaneKind, Namespace: cp.Namespace, Name: cp.Name,
		Ready: metav1.ConditionUnknown, Version: cp.Status.Version}
	if c := apimeta.FindStatusCondition(cp.Status.Conditions, clustersv1alpha1.ReadyCondition); c != nil {
		st.Ready, st.Reason = c.Status, c.Reason
	}
	if c := apimeta.FindStatusCondition(cp.Status.Conditions, clustersv1alpha1.PausedCondition); c != nil {
		st.Suspended = c.Status == metav1.ConditionTrue
	}
	return st
}

// reconcile reads as the data flow: facts (the owning Cluster) → plan
// (the backend's Flux objects, or a refusal) → sync (written; read back
// with the status view; the kubeconfig published, the endpoint set) →
// fold (BackendReady, KubeconfigReady, initialization, version,
// Available), once, whatever stopped the steps early.
func (r *ControlPlaneReconciler) reconcile(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, request string) (shell.Outcome, error) {
	f, exprs, err := r.readFacts(ctx, controlPlaneFacts(cp), request)
	var d *contractplan.Desired
	var seen contractplan.Observed
	if err == nil {
		d, err = planned(contractplan.Plan(f))
	}
	if err == nil {
		seen, err = r.syncControlPlane(ctx, cp, f, *d, exprs)
	}
	next, err := contractplan.FoldControlPlane(cp, f, d, seen, err)
	return shell.Then(next), err
}

// planned is a plan that did not refuse, nil for one that did.
func planned(d contractplan.Desired, err error) (*contractplan.Desired, error) {
	if err != nil {
		return nil, err
	}
	return &d, nil
}
