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
	"sync/atomic"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/metrics"
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
	// metadata of kubeconfig Secrets: the manager's cache when
	// WatchClusters, else an uncached reader until the watches start
	// (ClusterAPIServed).
	Clusters ctrl.Reader
	// WatchClusters is set when Clusters and kubeconfig Secrets are
	// watched from the start; without it the controller re-reads them
	// every minute until they are.
	WatchClusters bool
	// ClusterAPIServed, when set and WatchClusters is not, is asked,
	// once a Tenant exists, every ClusterAPIPoll (default
	// DefaultClusterAPIPoll) whether the Cluster kind is served now; once
	// it is (at once if it was at start-up, or once Cluster API was
	// installed after the manager), Clusters and kubeconfig Secrets are
	// watched through the manager's cache, without a restart.
	ClusterAPIServed func() (bool, error)
	ClusterAPIPoll   time.Duration
	// late holds the cache once the watches started after start-up, and
	// clusterWatch starts them.
	late         atomic.Pointer[lateClusters]
	clusterWatch *shell.WhenServed
	Recorder     kuberecorder.EventRecorder
	// ResyncInterval is how often an unchanged tenant is looked at again
	// (Clusters and Flux objects are watched, so this is a safety net).
	ResyncInterval time.Duration
	// Metrics records reconcile durations, each tenant's state and its
	// clusters per phase; nil records nothing.
	Metrics *metrics.Recorder
	// ForbiddenNamespaces no tenant may select Clusters in (the manager's
	// --tenant-forbidden-namespaces and its own namespace), besides
	// Kubernetes' own and other Tenants' management namespaces, which are
	// always refused (render.CheckTenantNamespaces).
	ForbiddenNamespaces render.ForbiddenNamespaces
	// Artifacts stores and serves the artifacts of the ExternalArtifacts
	// that hand Flux a kustomize stack's target namespace (the storage
	// the provider controller serves additional manifests from); nil
	// when the manager runs without --artifact-storage-path, and then a
	// kustomize artifact must carry its Namespace manifest.
	Artifacts *fluxartifact.Storage

	// written keeps the shell from acting on a read older than its own
	// last write.
	written shell.Written
}

// Reconcile runs the reconcile shell with the tenant's steps.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A Tenant exists: it needs Clusters watched.
	r.clusterWatch.Want()
	return (&shell.Reconciler[*tenancyv1alpha1.Tenant]{
		Client:     r.Client,
		Kind:       tenancyv1alpha1.TenantKind,
		New:        func() *tenancyv1alpha1.Tenant { return &tenancyv1alpha1.Tenant{} },
		Finalizer:  tenancyv1alpha1.Finalizer,
		FieldOwner: FieldOwner,
		Steps:      steps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

// reconcile reads as the data flow: check the namespaces → select
// clusters → render → write the management objects and the Flux objects
// → delete what is stale → fold health → ask Flux to go on where it
// would wait (nudgeKustomizations).
func (r *Reconciler) reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant, request string) (shell.Outcome, error) {
	logger := log.FromContext(ctx)
	requeue := shell.Outcome{Result: reconcile.Result{RequeueAfter: r.resyncInterval()}}
	reconcilePaused(t)
	t.Status.Namespace = t.ManagementNamespace()

	// Before anything is read there: a namespace the tenant may not use
	// is never looked at on its behalf.
	var tenants tenancyv1alpha1.TenantList
	if err := r.Client.List(ctx, &tenants); err != nil {
		return shell.Outcome{}, fmt.Errorf("listing Tenants to check the namespaces of Tenant %s: %w", t.Name, err)
	}
	// A forbidden management namespace is refused before anything is
	// written, the tenant's namespace and RBAC included.
	if err := render.CheckManagementNamespace(t, r.ForbiddenNamespaces); err != nil {
		setFalse(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.NamespaceNotAllowedReason, err.Error())
		setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.NamespaceNotAllowedReason, err.Error())
		return shell.Stalled(tenancyv1alpha1.NamespaceNotAllowedReason, err.Error(), r.resyncInterval()), nil
	}
	if err := render.CheckTenantNamespaces(t, r.ForbiddenNamespaces, tenants.Items); err != nil {
		return r.refuseSpec(ctx, t, tenancyv1alpha1.NamespaceNotAllowedReason, err)
	}
	found, err := r.findClusters(ctx, t)
	if err != nil {
		var missing *clusterAPIMissingError
		if !errors.As(err, &missing) {
			return shell.Outcome{}, err
		}
		setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.ClusterAPIMissingReason, err.Error())
		_, err := r.writeManagement(ctx, t, render.TenantManagement(t))
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: time.Minute}}, err
	}
	sel, err := render.SelectClusters(t, found.clusters, found.kubeconfigs)
	if err != nil {
		return r.refuseSpec(ctx, t, tenancyv1alpha1.InvalidSelectorReason, err)
	}
	rendered, err := render.Tenant(t, sel, render.TenantOptions{NoArtifactServer: r.Artifacts == nil})
	if err != nil {
		return r.refuseSpec(ctx, t, tenancyv1alpha1.InvalidStackReason, err)
	}

	ok, err := r.writeManagement(ctx, t, rendered.Management)
	if err != nil {
		return shell.Outcome{}, err
	}
	conflicts := map[types.NamespacedName]string{}
	if ok {
		// Without its namespace and RBAC the tenant gets nothing else:
		// its clusters' namespace may be someone else's.
		if conflicts, err = r.writeFluxObjects(ctx, t, rendered); err != nil {
			if isNoMatch(err) {
				setFalse(t, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.FluxAPIMissingReason,
					"a Flux API the tenant's stack needs is not served; install Flux (source, kustomize and helm controllers): "+err.Error())
				return shell.Outcome{Result: reconcile.Result{RequeueAfter: time.Minute}}, nil
			}
			return shell.Outcome{}, err
		}
		if request != "" {
			if err := r.requestFluxReconcile(ctx, rendered, conflicts, request); err != nil {
				return shell.Outcome{}, err
			}
		}
		if err := r.deleteStale(ctx, t, rendered, sel); err != nil {
			return shell.Outcome{}, err
		}
	}
	observed := r.foldHealth(ctx, t, sel, rendered, conflicts)
	if ok {
		// After the fold: the status says where each cluster is even
		// when asking Flux fails.
		if err := r.nudgeKustomizations(ctx, t, observed); err != nil {
			return shell.Outcome{}, err
		}
	}
	if !found.watched {
		requeue.Result.RequeueAfter = min(requeue.Result.RequeueAfter, time.Minute)
	}
	logger.V(1).Info("reconciled", "clusters", len(sel.Selected()), "eligible", len(rendered.Clusters))
	if !ok && conflictingManagement(t) {
		// Another owner's object is in the way: nothing changes until
		// it, or the tenant, does.
		c := apimeta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ManagementReadyCondition)
		requeue.Stalled = &shell.Stall{Reason: c.Reason, Message: c.Message}
	}
	return requeue, nil
}

// refuseSpec stops at a spec problem only the spec can fix: ClustersReady
// says what and how (a Warning event as it turns False), the tenant's own
// namespace and RBAC are still written, nothing is written or deleted for
// its clusters, and the tenant stalls until its spec changes.
func (r *Reconciler) refuseSpec(ctx context.Context, t *tenancyv1alpha1.Tenant, reason string, refusal error) (shell.Outcome, error) {
	setFalse(t, tenancyv1alpha1.ClustersReadyCondition, reason, refusal.Error())
	if _, err := r.writeManagement(ctx, t, render.TenantManagement(t)); err != nil {
		return shell.Outcome{}, err
	}
	return shell.Stalled(reason, refusal.Error(), r.resyncInterval()), nil
}

func (r *Reconciler) resyncInterval() time.Duration {
	if r.ResyncInterval > 0 {
		return r.ResyncInterval
	}
	return 10 * time.Minute
}
