// Package tenant holds the reconciler of Tenants. It writes a tenant's
// namespace and RBAC on the management cluster and, per selected Cluster
// API cluster, the Flux object that installs the tenant's stack there
// through the Cluster's kubeconfig Secret; Flux does the installing. It
// folds the Flux objects' health into one status line per cluster.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// FieldOwner is the server-side apply field manager of everything the
// controller writes; the provider controller uses the same, so Capwright
// is one field manager.
const FieldOwner = "capwright"

// Reconciler reconciles Tenants.
type Reconciler struct {
	// Client reads Tenants and Flux objects from the cache and writes.
	Client ctrl.Client
	// Reader reads without the cache: the management objects (namespaces,
	// ServiceAccounts, RoleBindings, quotas), which the controller does
	// not watch.
	Reader ctrl.Reader
	// Clusters reads Cluster API Clusters (unstructured, v1beta2) and the
	// metadata of kubeconfig Secrets: the manager's cache when the
	// Cluster API is served at start-up (then watched), else Reader.
	Clusters ctrl.Reader
	// WatchClusters is set when Clusters and kubeconfig Secrets are
	// watched; without it the controller re-reads them every minute.
	WatchClusters bool
	Recorder      kuberecorder.EventRecorder
	// ResyncInterval is how often an unchanged tenant is looked at again
	// (Clusters and Flux objects are watched, so this is a safety net).
	ResyncInterval time.Duration
}

// Reconcile is the shell: fetch, finalize or reconcile, write the status
// once if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	before := t.DeepCopy()

	defer func() {
		if err := r.patchStatus(ctx, before, t); err != nil && !apierrors.IsNotFound(err) {
			retErr = errors.Join(retErr, err)
		}
		r.emitTransitions(before, t)
	}()

	if !t.DeletionTimestamp.IsZero() {
		initConditions(t)
		return r.finalize(ctx, t)
	}
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.Finalizer) {
		patch := ctrl.MergeFrom(t.DeepCopy())
		controllerutil.AddFinalizer(t, tenancyv1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, t, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		before.Finalizers = t.Finalizers
		before.ResourceVersion = t.ResourceVersion
	}
	// After the patch, which replaced t with what the server returned.
	initConditions(t)
	return r.reconcile(ctx, t)
}

// reconcile reads as the data flow: management objects → select clusters
// → render → write the Flux objects → delete what is stale → fold health.
func (r *Reconciler) reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	requeue := reconcile.Result{RequeueAfter: r.resyncInterval()}
	reconcilePaused(t)
	t.Status.Namespace = t.ManagementNamespace()

	found, err := r.findClusters(ctx, t)
	if err != nil {
		var missing *clusterAPIMissingError
		if !errors.As(err, &missing) {
			return reconcile.Result{}, err
		}
		setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.ClusterAPIMissingReason, err.Error())
		_, err := r.writeManagement(ctx, t, render.TenantManagement(t))
		return reconcile.Result{RequeueAfter: time.Minute}, err
	}
	sel, err := render.SelectClusters(t, found.clusters, found.kubeconfigs)
	if err != nil {
		setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidSelectorReason, err.Error())
		_, err := r.writeManagement(ctx, t, render.TenantManagement(t))
		return reconcile.Result{}, err
	}
	rendered, err := render.Tenant(t, sel)
	if err != nil {
		setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidStackReason, err.Error())
		_, err := r.writeManagement(ctx, t, render.TenantManagement(t))
		return reconcile.Result{}, err
	}

	ok, err := r.writeManagement(ctx, t, rendered.Management)
	if err != nil {
		return reconcile.Result{}, err
	}
	conflicts := map[types.NamespacedName]string{}
	if ok {
		// Without its namespace and RBAC the tenant gets nothing else:
		// its clusters' namespace may be someone else's.
		if conflicts, err = r.writeFluxObjects(ctx, t, rendered); err != nil {
			if isNoMatch(err) {
				setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.FluxAPIMissingReason,
					"a Flux API the tenant's stack needs is not served; install Flux (source, kustomize and helm controllers): "+err.Error())
				return reconcile.Result{RequeueAfter: time.Minute}, nil
			}
			return reconcile.Result{}, err
		}
		if err := r.deleteStale(ctx, t, rendered, sel); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.foldHealth(ctx, t, sel, conflicts)
	if !found.watched {
		requeue.RequeueAfter = min(requeue.RequeueAfter, time.Minute)
	}
	logger.V(1).Info("reconciled", "clusters", len(sel.Selected()), "eligible", len(rendered.Clusters))
	return requeue, nil
}

func (r *Reconciler) resyncInterval() time.Duration {
	if r.ResyncInterval > 0 {
		return r.ResyncInterval
	}
	return 10 * time.Minute
}

// patchStatus writes the status when it differs from what was read.
func (r *Reconciler) patchStatus(ctx context.Context, before, t *tenancyv1alpha1.Tenant) error {
	t.Status.ObservedGeneration = t.Generation
	health.SetCondition(&t.Status.Conditions, health.TenantSummary(t.Generation, t.Status.Conditions, nowTime()))
	if equality.Semantic.DeepEqual(before.Status, t.Status) {
		return nil
	}
	// The first status is written whole: a merge patch leaves out the
	// counts that are still 0, and kubectl's columns would show nothing.
	if before.Status.ObservedGeneration == 0 {
		return r.Client.Status().Update(ctx, t)
	}
	return r.Client.Status().Patch(ctx, t, ctrl.MergeFrom(before))
}
