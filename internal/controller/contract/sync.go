package contract

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
)

// The sync stage: the plan written (apply.Syncer: ownership checked, the
// reconcile request passed on), then what the fold needs read back — the
// Flux objects, the status view — and what follows from the view
// written: a control plane's kubeconfig, the endpoint.

// syncControlPlane writes a control plane's backend, reads its status
// view, publishes its kubeconfig once the view is up, and writes the
// endpoint the view reports.
func (r *ControlPlaneReconciler) syncControlPlane(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, f contractplan.Facts, d contractplan.Desired, exprs *expressions) (contractplan.Observed, error) {
	var o contractplan.Observed
	if err := r.syncBackend(ctx, d, &o); err != nil || !o.Synced {
		return o, err
	}
	v := r.readView(ctx, f, d, exprs)
	o.View = &v
	seen := &contractplan.KubeconfigSeen{}
	if v.Up() {
		var err error
		if seen, err = r.syncKubeconfig(ctx, cp, d); err != nil {
			return o, err
		}
	}
	o.Kubeconfig = seen
	if v.OK {
		if err := r.syncEndpoint(ctx, cp, &cp.Spec.ControlPlaneEndpoint, v.Endpoint); err != nil {
			return o, err
		}
	}
	return o, nil
}

// syncCluster writes an infrastructure's backend and, once Flux installed
// it, reads its status view and writes the endpoint it reports.
func (r *ClusterReconciler) syncCluster(ctx context.Context, c *clustersv1alpha1.CapwrightCluster, f contractplan.Facts, d contractplan.Desired, exprs *expressions) (contractplan.Observed, error) {
	var o contractplan.Observed
	if err := r.syncBackend(ctx, d, &o); err != nil || !o.Synced || c.Spec.StatusFrom == nil {
		return o, err
	}
	if backend, _ := contractplan.BackendOf(d, o.Flux, c.Status.Backend); backend.Status != metav1.ConditionTrue {
		return o, nil
	}
	v := r.readView(ctx, f, d, exprs)
	o.View = &v
	if v.Up() {
		return o, r.syncEndpoint(ctx, c, &c.Spec.ControlPlaneEndpoint, v.Endpoint)
	}
	return o, nil
}

// syncBackend writes the backend's Flux objects and reads them back. An
// object of theirs that is someone else's is a conflict: nothing more is
// written.
func (s *Shared) syncBackend(ctx context.Context, d contractplan.Desired, o *contractplan.Observed) error {
	if d.Pause != nil || d.Objects == nil {
		return nil
	}
	res, err := s.syncer().Sync(ctx, d.Desired)
	if err != nil {
		return err
	}
	if msg, bad := res.Conflicts[contractplan.BackendGroup]; bad {
		o.Conflict = msg
		return nil
	}
	o.Synced, o.Flux = true, res.Observed
	return nil
}

// syncEndpoint writes spec.controlPlaneEndpoint when the backend reports
// another one than the spec holds: a merge patch of a copy, so the status
// computed so far stays as it is.
func (s *Shared) syncEndpoint(ctx context.Context, obj ctrl.Object, spec *clustersv1alpha1.APIEndpoint, e clustersv1alpha1.APIEndpoint) error {
	if e.IsZero() || e == *spec {
		return nil
	}
	before := *spec
	base := obj.DeepCopyObject().(ctrl.Object)
	*spec = e
	patched := obj.DeepCopyObject().(ctrl.Object)
	*spec = before
	if err := s.Client.Patch(ctx, patched, ctrl.MergeFrom(base), ctrl.FieldOwner(plan.FieldOwner)); err != nil {
		return fmt.Errorf("setting spec.controlPlaneEndpoint of %s %s/%s: %w", plan.KindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	*spec = e
	obj.SetResourceVersion(patched.GetResourceVersion())
	return nil
}

// syncKubeconfig copies the backend's kubeconfig to `<cluster>-kubeconfig`
// and says why it could not, if it could not (yet).
func (r *ControlPlaneReconciler) syncKubeconfig(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, d contractplan.Desired) (*contractplan.KubeconfigSeen, error) {
	var src corev1.Secret
	var source contractplan.KubeconfigSource
	switch err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: d.KubeconfigSecret}, &src); {
	case apierrors.IsNotFound(err):
		source.Missing = true
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cp.Namespace, d.KubeconfigSecret, err)
	default:
		source.Data = src.Data
	}
	want, seen := contractplan.Kubeconfig(cp, d, source)
	if seen != nil {
		return seen, nil
	}
	res, err := r.syncer().Sync(ctx, want)
	if err != nil {
		return nil, err
	}
	if msg, bad := res.Conflicts[contractplan.KubeconfigGroup]; bad {
		return contractplan.KubeconfigConflict(msg), nil
	}
	return &contractplan.KubeconfigSeen{}, nil
}

// readView reads the status view of the backend: not OK, with the reason
// and message why, while it cannot be read.
func (s *Shared) readView(ctx context.Context, f contractplan.Facts, d contractplan.Desired, exprs *expressions) contractplan.ViewRead {
	gvk := schema.FromAPIVersionAndKind(f.StatusFrom.APIVersion, f.StatusFrom.Kind)
	watched := s.watches.ensure(ctx, gvk)
	retry := s.resync()
	if !watched {
		retry = contractplan.PollWhileWaiting
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	reader := ctrl.Reader(s.Reader)
	if watched {
		reader = s.Client
	}
	key := ctrl.ObjectKey{Namespace: f.Object.GetNamespace(), Name: d.StatusName}
	ref := fmt.Sprintf("%s %s/%s", gvk.Kind, key.Namespace, key.Name)
	if err := reader.Get(ctx, key, u); err != nil {
		out := contractplan.ViewRead{Reason: clustersv1alpha1.StatusObjectNotFoundReason, Retry: contractplan.PollWhileWaiting}
		switch {
		case apierrors.IsForbidden(err):
			out.Reason = clustersv1alpha1.StatusObjectForbiddenReason
			out.Message = fmt.Sprintf("the manager may not read %s (spec.statusFrom): grant it get, list and watch on %s with a ClusterRole labelled clusters.capwright.io/aggregate-to-manager: \"true\"", ref, gvk.GroupKind())
		case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err):
			out.Message = ref + " (spec.statusFrom) does not exist yet: the backend creates it; check that spec.statusFrom names what the backend creates"
		default:
			out.Message = fmt.Sprintf("reading %s (spec.statusFrom): %v", ref, err)
		}
		return out
	}
	v, err := exprs.evaluate(ctx, u)
	if err != nil {
		return contractplan.ViewRead{Reason: clustersv1alpha1.StatusInvalidReason, Message: ref + ": " + err.Error(), Retry: retry}
	}
	return contractplan.ViewRead{View: v, OK: true, Retry: retry}
}
