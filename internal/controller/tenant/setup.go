package tenant

import (
	"context"
	"fmt"
	"slices"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/clusterwatch"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// The controller's permissions (controller-gen writes manifests/rbac from
// these). Management objects: the tenant's namespace, ServiceAccount,
// quota and RoleBinding, which it may only bind to the one ClusterRole
// capwright-tenant (bind instead of holding every permission of that
// role). Secrets: list and watch for the metadata of kubeconfig Secrets
// (the cache holds no Secret data; Flux reads the kubeconfigs). Clusters
// are only read.
// +kubebuilder:rbac:groups=tenancy.capwright.io,resources=tenants,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=tenancy.capwright.io,resources=tenants/status;tenants/finalizers,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;update
// +kubebuilder:rbac:groups="",resources=serviceaccounts;resourcequotas,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=capwright-tenant
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories;externalartifacts,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler. It watches Tenants (spec,
// label and annotation changes, not its own status writes; and every
// Tenant created or deleted, mapped to the tenants whose
// spec.clusters.namespaces list its management namespace), the Flux
// objects and the metadata of the management objects labelled for a
// tenant, and Cluster API Clusters and the metadata of kubeconfig
// Secrets, mapped to the tenants whose namespaces hold them: from the
// start when r.WatchClusters, else as soon as r.ClusterAPIServed says
// the Cluster kind is served (clusterwatch.LateWatch).
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager, opts controller.Options) error {
	for _, i := range indexes() {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	isLabelled := labelledOrWas()
	labelled := builder.WithPredicates(isLabelled)
	labelledFlux := builder.WithPredicates(isLabelled, shell.FluxObjectChanged())
	b := ctrlruntime.NewControllerManagedBy(mgr).
		Named("Tenant").
		For(&tenancyv1alpha1.Tenant{}, builder.WithPredicates(shell.OwnObjectChanged(&r.written))).
		// A Tenant created with a management namespace another tenant
		// lists refuses that tenant (NamespaceNotAllowed); one deleted
		// lifts the refusal. An update cannot change a management
		// namespace (the CRD refuses it).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.byListedNamespace),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		// What Flux reports on a tenant's objects comes after the tenants'
		// own changes (fluxUpdates).
		Watches(&sourcev1.OCIRepository{}, fluxUpdates(byTenantLabel), labelledFlux).
		Watches(&sourcev1.ExternalArtifact{}, fluxUpdates(byTenantLabel), labelledFlux).
		Watches(&kustomizev1.Kustomization{}, fluxUpdates(byTenantLabel), labelledFlux).
		Watches(&helmv2.HelmRelease{}, fluxUpdates(byTenantLabel), labelledFlux).
		WithOptions(opts)
	// The management objects, metadata only (the cache holds no more): a
	// deleted or changed one is put back at once, and a leftover of an
	// earlier Tenant of the same name that garbage collection removes
	// clears the conflict it caused without waiting for a resync.
	for _, gvk := range managementKinds {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		b = b.WatchesMetadata(m, handler.EnqueueRequestsFromMapFunc(byTenantLabel), labelled)
	}
	byNamespace := handler.EnqueueRequestsFromMapFunc(r.byNamespace)
	kubeconfigs := predicate.NewPredicateFuncs(func(o ctrl.Object) bool { return isKubeconfigSecret(o.GetName()) })
	if r.WatchClusters {
		b = b.Watches(clusterapi.NewCluster(), byNamespace).
			WatchesMetadata(NewSecretMetadata(), byNamespace, builder.WithPredicates(kubeconfigs))
	}
	if r.WatchClusters || r.ClusterAPIServed == nil {
		return b.Complete(r)
	}
	// Cluster API is not served yet: watch its Clusters once it is
	// (clusterwatch.LateWatch), then look at every tenant at once.
	wake := make(chan event.GenericEvent)
	c, err := b.WatchesRawSource(source.Channel(wake, &handler.EnqueueRequestForObject{})).Build(r)
	if err != nil {
		return err
	}
	w := &clusterwatch.LateWatch{Cache: mgr.GetCache(), Served: r.ClusterAPIServed, Every: r.ClusterAPIPoll,
		Watching: "Clusters and kubeconfig Secrets", For: "Tenants"}
	w.Watch(c, byNamespace)
	w.WatchObject(c, NewSecretMetadata(), byNamespace, kubeconfigs)
	w.OnStart(func(ctx context.Context) error { return r.wakeTenants(ctx, wake) })
	r.clusterWatch = w
	return mgr.Add(w)
}

// wakeTenants enqueues every tenant: Clusters are watched now, and each
// may find clusters it could not before.
func (r *Reconciler) wakeTenants(ctx context.Context, wake chan<- event.GenericEvent) error {
	var tenants tenancyv1alpha1.TenantList
	if err := r.Client.List(ctx, &tenants); err != nil {
		return err
	}
	for i := range tenants.Items {
		select {
		case wake <- event.GenericEvent{Object: &tenants.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// labelledOrWas lets through the events of objects labelled for a tenant,
// and the update that removes the label: that is the tenant's news too,
// and the tenant puts the label back (its map function maps the old
// object as well as the new).
func labelledOrWas() predicate.Predicate {
	hasLabel := func(o ctrl.Object) bool {
		_, ok := o.GetLabels()[tenancyv1alpha1.TenantLabel]
		return ok
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return hasLabel(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return hasLabel(e.ObjectOld) || hasLabel(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return hasLabel(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return hasLabel(e.Object) },
	}
}

// CacheByObject restricts the manager's cache of the management kinds to
// the objects Capwright wrote for tenants (those carrying the tenant
// label): the controller watches them only to put back what is changed or
// deleted, and reads them uncached. Without it, every Namespace,
// ServiceAccount, RoleBinding and ResourceQuota of the cluster would be
// listed, held and streamed to the manager; while Flux installs a provider,
// each of its ServiceAccounts and RoleBindings would be a watch event.
func CacheByObject() map[ctrl.Object]cache.ByObject {
	labelled, err := labels.NewRequirement(tenancyv1alpha1.TenantLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	selector := labels.NewSelector().Add(*labelled)
	out := map[ctrl.Object]cache.ByObject{}
	for _, gvk := range managementKinds {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		out[m] = cache.ByObject{Label: selector}
	}
	out[&kustomizev1.Kustomization{}] = cache.ByObject{Transform: withoutTenantInventory}
	return out
}

// withoutTenantInventory drops from a cached Kustomization its
// managedFields (the manager's DefaultTransform, which this replaces for
// Kustomizations) and, when it is a tenant's, the inventory of everything
// it applied, which nothing of the tenant's reads: a fleet's twenty
// thousand Kustomizations would otherwise each keep a list of their
// stack's objects in the manager's memory. A provider's keeps its
// inventory (the provider controller reads it).
func withoutTenantInventory(obj any) (any, error) {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	ks.SetManagedFields(nil)
	if _, tenant := ks.Labels[tenancyv1alpha1.TenantLabel]; tenant {
		ks.Status.Inventory = nil
	}
	return ks, nil
}

// managementKinds are the kinds of the tenant's management objects: its
// namespace, and what Capwright writes in it.
var managementKinds = append([]schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Namespace")}, inNamespaceKinds...)

// inNamespaceKinds are the kinds of what Capwright writes in a tenant's
// namespace.
var inNamespaceKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	corev1.SchemeGroupVersion.WithKind("ResourceQuota"),
}

// fluxUpdates enqueues the tenant of a Flux object (by m) whenever it
// changes, the updates (Flux's status, mostly) at low priority: across a
// fleet, a thousand sources turning Ready at once queue a thousand
// reconciles, and a tenant whose spec changed meanwhile goes first
// instead of waiting behind them. A created or deleted object (someone
// else's doing, or the manager's own) keeps the usual priority.
func fluxUpdates(m handler.MapFunc) handler.EventHandler {
	return lowPriorityUpdates{handler.EnqueueRequestsFromMapFunc(m)}
}

type lowPriorityUpdates struct{ handler.EventHandler }

func (h lowPriorityUpdates) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		q = lowPriorityQueue{pq}
	}
	h.EventHandler.Update(ctx, e, q)
}

// lowPriorityQueue adds at handler.LowPriority, unless told otherwise.
type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q lowPriorityQueue) Add(r reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, r)
}

func (q lowPriorityQueue) AddAfter(r reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority), After: after}, r)
}

func (q lowPriorityQueue) AddRateLimited(r reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority), RateLimited: true}, r)
}

// byTenantLabel enqueues the tenant a Flux object is labelled for.
func byTenantLabel(_ context.Context, o ctrl.Object) []reconcile.Request {
	name := o.GetLabels()[tenancyv1alpha1.TenantLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrl.ObjectKey{Name: name}}}
}

// namespaceIndex indexes Tenants by the namespaces they look for Clusters
// in (render.TenantNamespaces). A Cluster or kubeconfig Secret event then
// finds its tenants without listing (and copying) every Tenant: on a
// manager's start with a thousand tenants of twenty clusters each, that
// was a thousand Tenants copied for each of forty thousand events.
const namespaceIndex = "capwright.tenantNamespaces"

func indexNamespaces(o ctrl.Object) []string {
	t, ok := o.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	return render.TenantNamespaces(t)
}

// TenantIndex indexes the Flux kinds a tenant writes by the tenant they
// are labelled for, so a reconcile finds its own objects among a fleet's
// without looking at every object of the kind (the cache's label
// selector does: twenty thousand Kustomizations for each of a thousand
// tenants).
const TenantIndex = "capwright.tenant"

func indexTenant(o ctrl.Object) []string {
	if name := o.GetLabels()[tenancyv1alpha1.TenantLabel]; name != "" {
		return []string{name}
	}
	return nil
}

// index is one of the cache's indexes the controller reads through.
type index struct {
	obj     ctrl.Object
	field   string
	extract ctrl.IndexerFunc
}

// indexes are the controller's: Tenants by namespace, and its Flux kinds
// by tenant.
func indexes() []index {
	out := []index{{&tenancyv1alpha1.Tenant{}, namespaceIndex, indexNamespaces}}
	for _, obj := range fluxKinds() {
		out = append(out, index{obj, TenantIndex, indexTenant})
	}
	return out
}

// Index registers the controller's field indexes with add: a manager's
// field indexer, or the in-memory store `capwright build` reads from.
func Index(add func(obj ctrl.Object, field string, extract ctrl.IndexerFunc)) {
	for _, i := range indexes() {
		add(i.obj, i.field, i.extract)
	}
}

// fluxKinds are the Flux kinds a tenant writes, all watched.
func fluxKinds() []ctrl.Object {
	return []ctrl.Object{&sourcev1.OCIRepository{}, &sourcev1.ExternalArtifact{}, &kustomizev1.Kustomization{}, &helmv2.HelmRelease{}}
}

// isFluxKind tells whether o is of a kind in fluxKinds, read from the
// cache (apply.Syncer.Cached).
func isFluxKind(o plan.Object) bool {
	switch plan.KindOf(o) {
	case sourcev1.OCIRepositoryKind, sourcev1.ExternalArtifactKind, kustomizev1.KustomizationKind, helmv2.HelmReleaseKind:
		return true
	}
	return false
}

// tenantsIn lists the Tenants that look for Clusters in namespace, from
// the cache's index, uncopied: the callers only read them.
func (r *Reconciler) tenantsIn(ctx context.Context, namespace string) ([]tenancyv1alpha1.Tenant, error) {
	var tenants tenancyv1alpha1.TenantList
	if err := r.Client.List(ctx, &tenants, ctrl.MatchingFields{namespaceIndex: namespace}, ctrl.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return tenants.Items, nil
}

// byListedNamespace enqueues every other tenant whose
// spec.clusters.namespaces lists the Tenant's management namespace.
func (r *Reconciler) byListedNamespace(ctx context.Context, o ctrl.Object) []reconcile.Request {
	changed, ok := o.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	ns := changed.ManagementNamespace()
	items, err := r.tenantsIn(ctx, ns)
	if err != nil {
		return nil
	}
	tenants := tenancyv1alpha1.TenantList{Items: items}
	var reqs []reconcile.Request
	for i := range tenants.Items {
		if tn := &tenants.Items[i]; tn.Name != changed.Name && slices.Contains(tn.Spec.Clusters.Namespaces, ns) {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}})
		}
	}
	return reqs
}

// byNamespace enqueues every tenant that looks for Clusters in the
// object's namespace (render.TenantNamespaces).
func (r *Reconciler) byNamespace(ctx context.Context, o ctrl.Object) []reconcile.Request {
	tenants, err := r.tenantsIn(ctx, o.GetNamespace())
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(tenants))
	for i := range tenants {
		reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tenants[i].Name}})
	}
	return reqs
}
