package contract

import (
	"context"
	"reflect"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/clusterwatch"
	"github.com/capwright/capwright/internal/controller/shell"
)

// The controllers' permissions (controller-gen writes manifests/rbac from
// these). The backend's Flux objects and the kubeconfig Secrets are
// written; Clusters are read. The kinds statusFrom names are read through
// the ClusterRole capwright-backend-reader, which aggregates the
// ClusterRoles labelled clusters.capwright.io/aggregate-to-manager.
// +kubebuilder:rbac:groups=clusters.capwright.io,resources=capwrightcontrolplanes;capwrightclusters,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=clusters.capwright.io,resources=capwrightcontrolplanes/status;capwrightclusters/status;capwrightcontrolplanes/finalizers;capwrightclusters/finalizers,verbs=get;patch;update
// +kubebuilder:rbac:groups=clusters.capwright.io,resources=capwrightcontrolplanetemplates;capwrightclustertemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;patch;update;delete

// Setup registers the CapwrightControlPlane and CapwrightCluster
// controllers. They watch their own kinds (spec, labels, annotations and
// owner references: Cluster API sets itself as the owner), their
// backends' Flux objects, the metadata of Secrets (a backend's kubeconfig
// appearing or rotating, the published one changed or deleted), the
// kinds statusFrom names as they are first seen, and Clusters, for
// spec.paused and topology variables: once an object of either kind
// exists and shared.ClusterAPIServed says Clusters are served (from the
// start without shared.ClusterAPIServed).
func Setup(mgr ctrlruntime.Manager, shared *Shared, opts controller.Options) error {
	watchClusters := shared.ClusterAPIServed == nil
	shared.watches = &statusWatches{cache: mgr.GetCache(), probe: mgr.GetAPIReader()}
	cp := &ControlPlaneReconciler{Shared: shared}
	cl := &ClusterReconciler{Shared: shared}
	kinds := []struct {
		obj     ctrl.Object
		r       reconcile.Reconciler
		name    string
		written *shell.Written
	}{
		{&clustersv1alpha1.CapwrightControlPlane{}, cp, clustersv1alpha1.ControlPlaneKind, &cp.written},
		{&clustersv1alpha1.CapwrightCluster{}, cl, clustersv1alpha1.ClusterKind, &cl.written},
	}
	if !watchClusters {
		shared.clusterWatch = &clusterwatch.LateWatch{Cache: mgr.GetCache(), Served: shared.ClusterAPIServed, Every: clusterPoll,
			For: "CapwrightControlPlanes and CapwrightClusters"}
	}
	for _, k := range kinds {
		k := k
		inNamespace := func(ctx context.Context, namespace string) []statusReader {
			return statusReadersIn(ctx, mgr.GetClient(), k.name, namespace)
		}
		owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), k.obj, handler.OnlyControllerOwner())
		flux := builder.WithPredicates(shell.FluxObjectChanged())
		b := ctrlruntime.NewControllerManagedBy(mgr).
			Named(k.name).
			For(k.obj, builder.WithPredicates(shell.OwnObjectChanged(k.written, ownersChanged()))).
			Watches(&sourcev1.OCIRepository{}, owned, flux).
			Watches(&helmv2.HelmRelease{}, owned, flux).
			Watches(&kustomizev1.Kustomization{}, owned, flux).
			WatchesMetadata(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}},
				handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o ctrl.Object) []reconcile.Request {
					var reqs []reconcile.Request
					for _, s := range inNamespace(ctx, o.GetNamespace()) {
						reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: o.GetNamespace(), Name: s.name}})
					}
					return reqs
				}),
				builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrl.Object) bool {
					// Helm's release records change on every install and
					// upgrade; they are no backend's kubeconfig.
					return !strings.HasPrefix(o.GetName(), "sh.helm.release.")
				}))).
			WithOptions(opts)
		byCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o ctrl.Object) []reconcile.Request {
			c, ok := o.(*clusterapi.Cluster)
			if !ok {
				return nil
			}
			ref := c.Spec.InfrastructureRef
			if k.name == clustersv1alpha1.ControlPlaneKind {
				ref = c.Spec.ControlPlaneRef
			}
			if ref.Kind != k.name || ref.Name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: ctrl.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
		})
		if watchClusters {
			b = b.Watches(clusterapi.NewCluster(), byCluster)
		}
		c, err := b.Build(k.r)
		if err != nil {
			return err
		}
		if !watchClusters {
			shared.clusterWatch.Watch(c, byCluster)
		}
		shared.watches.controllers = append(shared.watches.controllers, watchTarget{ctrl: c,
			byGVK: func(ctx context.Context, gvk schema.GroupVersionKind, namespace string) []reconcile.Request {
				var reqs []reconcile.Request
				for _, s := range inNamespace(ctx, namespace) {
					if s.from != nil && schema.FromAPIVersionAndKind(s.from.APIVersion, s.from.Kind) == gvk {
						reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: namespace, Name: s.name}})
					}
				}
				return reqs
			}})
	}
	if shared.clusterWatch != nil {
		return mgr.Add(shared.clusterWatch)
	}
	return nil
}

// clusterPoll is how often a manager started before Cluster API asks
// whether Clusters are served now, once an object of either kind exists.
// Until the Cluster watches run, a Cluster's pause and topology
// variables are seen at each resync and whenever Cluster API sets itself
// as an object's owner.
const clusterPoll = clusterwatch.DefaultPoll

// statusReader is a contract object's name and statusFrom.
type statusReader struct {
	name string
	from *clustersv1alpha1.StatusFrom
}

// statusReadersIn lists the objects of kind in namespace, from the cache.
func statusReadersIn(ctx context.Context, c ctrl.Reader, kind, namespace string) []statusReader {
	var out []statusReader
	switch kind {
	case clustersv1alpha1.ControlPlaneKind:
		var l clustersv1alpha1.CapwrightControlPlaneList
		if err := c.List(ctx, &l, ctrl.InNamespace(namespace)); err != nil {
			return nil
		}
		for i := range l.Items {
			out = append(out, statusReader{l.Items[i].Name, &l.Items[i].Spec.StatusFrom})
		}
	default:
		var l clustersv1alpha1.CapwrightClusterList
		if err := c.List(ctx, &l, ctrl.InNamespace(namespace)); err != nil {
			return nil
		}
		for i := range l.Items {
			out = append(out, statusReader{l.Items[i].Name, l.Items[i].Spec.StatusFrom})
		}
	}
	return out
}

// ownersChanged lets through an update that changes the owner
// references: Cluster API sets the Cluster as owner, which is what a new
// object waits for.
func ownersChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !reflect.DeepEqual(e.ObjectOld.GetOwnerReferences(), e.ObjectNew.GetOwnerReferences())
	}}
}
