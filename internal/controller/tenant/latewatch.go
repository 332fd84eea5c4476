package tenant

import (
	"context"
	"time"

	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
)

// DefaultClusterAPIPoll is how often a manager started before Cluster API
// asks whether it is served now, when ClusterAPIPoll is not set.
const DefaultClusterAPIPoll = 20 * time.Second

// lateClusters is where Clusters are read from once they are watched
// after start-up.
type lateClusters struct{ reader ctrl.Reader }

// clusterReader is where the controller reads Clusters and kubeconfig
// Secrets, and whether they are watched.
func (r *Reconciler) clusterReader() (ctrl.Reader, bool) {
	if l := r.late.Load(); l != nil {
		return l.reader, true
	}
	return r.Clusters, r.WatchClusters
}

// clusterAPIWatcher starts watching Clusters and kubeconfig Secrets once
// a Tenant exists (its reconcile asks, WhenServed.Want) and the
// Cluster kind is served: Cluster API is often installed by the manager's
// own provider controllers, after the manager started, and a management
// cluster that only runs providers has no use for a cache of its
// Clusters. Until then tenants read them uncached, every minute while
// Cluster API is missing; from then on their changes wake the tenants
// that look for them, and every tenant is looked at once, at once.
type clusterAPIWatcher struct {
	r     *Reconciler
	ctrl  controller.Controller
	cache cache.Cache
	// wake enqueues tenants.
	wake chan event.GenericEvent
}

// start starts the watches once the Cluster kind is served
// (shell.WhenServed).
func (w *clusterAPIWatcher) start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("tenant-clusters")
	if err := w.ctrl.Watch(source.Kind[ctrl.Object](w.cache, NewClusterObject(), handler.EnqueueRequestsFromMapFunc(w.r.byNamespace))); err != nil {
		return err
	}
	if err := w.ctrl.Watch(source.Kind[ctrl.Object](w.cache, NewSecretMetadata(), handler.EnqueueRequestsFromMapFunc(w.r.byNamespace),
		predicate.NewPredicateFuncs(func(o ctrl.Object) bool { return isKubeconfigSecret(o.GetName()) }))); err != nil {
		return err
	}
	w.r.late.Store(&lateClusters{reader: w.cache})
	logger.Info("Cluster API is served now: watching Clusters and kubeconfig Secrets for Tenants")
	var tenants tenancyv1alpha1.TenantList
	if err := w.r.Client.List(ctx, &tenants); err != nil {
		return err
	}
	for i := range tenants.Items {
		select {
		case w.wake <- event.GenericEvent{Object: &tenants.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// watchClustersLater sets up the clusterAPIWatcher on a controller built
// from b (see SetupWithManager).
func (r *Reconciler) watchClustersLater(mgr ctrlruntime.Manager, build func(wake <-chan event.GenericEvent) (controller.Controller, error)) error {
	wake := make(chan event.GenericEvent)
	c, err := build(wake)
	if err != nil {
		return err
	}
	every := r.ClusterAPIPoll
	if every <= 0 {
		every = DefaultClusterAPIPoll
	}
	w := &clusterAPIWatcher{r: r, ctrl: c, cache: mgr.GetCache(), wake: wake}
	r.clusterWatch = &shell.WhenServed{Kind: "Cluster", Served: r.ClusterAPIServed, Every: every, OnDemand: true, Then: w.start}
	return mgr.Add(r.clusterWatch)
}
