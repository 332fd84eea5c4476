package tenant

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
)

// Orchestration against a fake API server: the first reconcile writes the
// management objects, the source and one Kustomization per eligible
// cluster; a second changes nothing; deselecting a cluster deletes its
// Kustomization and nothing else.
func TestReconcileWritesOnceAndDeletesStale(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	objs := []ctrl.Object{tn,
		testCluster("shared", "a", map[string]string{"team": "acme"}, true),
		testCluster("shared", "b", map[string]string{"team": "acme"}, true),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "a-kubeconfig"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "b-kubeconfig"}},
	}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(objs...).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).
		WithInterceptorFuncs(fluxFinalizes()).Build()
	r := &Reconciler{Client: c, Reader: c, Clusters: c, WatchClusters: true}
	req := reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var kss kustomizev1.KustomizationList
	if err := c.List(ctx, &kss); err != nil || len(kss.Items) != 2 {
		t.Fatalf("Kustomizations: %d (%v), want 2", len(kss.Items), err)
	}
	var repos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &repos); err != nil || len(repos.Items) != 1 {
		t.Fatalf("OCIRepositories: %d (%v), want 1", len(repos.Items), err)
	}
	versions := resourceVersions(t, ctx, c)

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if again := resourceVersions(t, ctx, c); !equalMaps(versions, again) {
		t.Errorf("a second reconcile with nothing changed wrote:\nbefore %v\nafter  %v", versions, again)
	}

	b := testCluster("shared", "b", map[string]string{"team": "other"}, true)
	existing := newUnstructuredCluster()
	if err := c.Get(ctx, ctrl.ObjectKey{Namespace: "shared", Name: "b"}, existing); err != nil {
		t.Fatal(err)
	}
	existing.SetLabels(b.GetLabels())
	if err := c.Update(ctx, existing); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &kss); err != nil || len(kss.Items) != 1 || kss.Items[0].Labels[tenancyv1alpha1.ClusterNameLabel] != "a" {
		t.Fatalf("after deselecting b: %d Kustomizations (%v), want only a's", len(kss.Items), err)
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.TotalClusters != 1 || got.Status.Namespace != "tenant-acme" {
		t.Errorf("status: %d clusters, namespace %q", got.Status.TotalClusters, got.Status.Namespace)
	}
}

// resourceVersions of everything the controller writes, and the Tenant.
func resourceVersions(t *testing.T, ctx context.Context, c ctrl.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := map[string]ctrl.ObjectList{"ns": &corev1.NamespaceList{}, "sa": &corev1.ServiceAccountList{}, "ks": &kustomizev1.KustomizationList{},
		"repo": &sourcev1.OCIRepositoryList{}, "tenant": &tenancyv1alpha1.TenantList{}}
	for kind, l := range lists {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m, err := apimeta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			out[kind+"/"+m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Without the Cluster API the tenant still gets its namespace and RBAC,
// and says why no cluster is selected.
func TestReconcileWithoutClusterAPI(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(tn).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).Build()
	noCAPI := interceptor.NewClient(indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).Build(), interceptor.Funcs{
		List: func(ctx context.Context, cl ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
			if _, ok := list.(*clusterapi.ClusterList); ok {
				return &apimeta.NoKindMatchError{GroupKind: clusterapi.ClusterGVK.GroupKind(), SearchedVersions: []string{clusterapi.ClusterGVK.Version}}
			}
			return cl.List(ctx, list, opts...)
		},
	})
	r := &Reconciler{Client: c, Reader: c, Clusters: noCAPI}
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter == 0 {
		t.Error("no requeue: nothing else would tell the controller that Cluster API arrived")
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, ctrl.ObjectKey{Name: tn.Name}, got); err != nil {
		t.Fatal(err)
	}
	if cond := findCondition(got, tenancyv1alpha1.ClustersReadyCondition); cond == nil || cond.Reason != tenancyv1alpha1.ClusterAPIMissingReason {
		t.Errorf("ClustersReady = %+v, want ClusterAPIMissing", cond)
	}
	if cond := findCondition(got, tenancyv1alpha1.ManagementReadyCondition); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("ManagementReady = %+v, want True", cond)
	}
	if err := c.Get(ctx, ctrl.ObjectKey{Name: "tenant-acme"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the tenant's namespace: %v", err)
	}
}

// A reconcile request on the tenant reaches its source and its clusters'
// Kustomizations once, and is acknowledged; a selector that cannot be
// parsed stalls the tenant (kstatus: failed) instead of looking in
// progress.
func TestReconcileRequestAndStall(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	objs := []ctrl.Object{tn,
		testCluster("shared", "a", map[string]string{"team": "acme"}, true),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "a-kubeconfig"}},
	}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(objs...).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).Build()
	r := &Reconciler{Client: c, Reader: c, Clusters: c, WatchClusters: true}
	req := reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}

	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	got.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var kss kustomizev1.KustomizationList
	var repos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &kss); err != nil || len(kss.Items) != 1 {
		t.Fatalf("Kustomizations: %d (%v)", len(kss.Items), err)
	}
	if err := c.List(ctx, &repos); err != nil || len(repos.Items) != 1 {
		t.Fatalf("OCIRepositories: %d (%v)", len(repos.Items), err)
	}
	for _, o := range []ctrl.Object{&kss.Items[0], &repos.Items[0]} {
		if o.GetAnnotations()[meta.ReconcileRequestAnnotation] != "now" {
			t.Errorf("%s/%s did not get the request: %v", o.GetNamespace(), o.GetName(), o.GetAnnotations())
		}
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil || got.Status.LastHandledReconcileAt != "now" {
		t.Fatalf("lastHandledReconcileAt %q (%v), want the request acknowledged", got.Status.LastHandledReconcileAt, err)
	}

	got.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
	got.Generation = 2
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	stalled := apimeta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != tenancyv1alpha1.InvalidSelectorReason {
		t.Errorf("Stalled = %+v, want True InvalidSelector", stalled)
	}
	if apimeta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReconcilingCondition) != nil {
		t.Error("a stalled tenant is also Reconciling")
	}
}

// The management objects in the tenant's namespace are listed from the
// cache, as metadata, not read again from the API server on every
// reconcile; pruning works from that metadata: a labelled ServiceAccount
// the tenant no longer renders is deleted, the one it renders kept.
func TestManagementObjectsListedFromTheCache(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(tn).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).
		WithInterceptorFuncs(fluxFinalizes()).Build()
	uncached := interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, cl ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
		switch l := list.(type) {
		case *corev1.ServiceAccountList, *rbacv1.RoleBindingList, *corev1.ResourceQuotaList:
			t.Errorf("listed %T uncached", l)
		case *metav1.PartialObjectMetadataList:
			t.Errorf("listed %s uncached", l.GroupVersionKind())
		}
		return cl.List(ctx, list, opts...)
	}})
	r := &Reconciler{Client: c, Reader: uncached, Clusters: c, WatchClusters: true}
	req := reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var sas corev1.ServiceAccountList
	if err := c.List(ctx, &sas, ctrl.InNamespace(tn.ManagementNamespace())); err != nil || len(sas.Items) != 1 {
		t.Fatalf("ServiceAccounts in %s: %d (%v), want the tenant's one", tn.ManagementNamespace(), len(sas.Items), err)
	}
	rendered := sas.Items[0]
	stale := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: rendered.Namespace, Name: "no-longer-rendered",
		Labels: rendered.Labels, OwnerReferences: rendered.OwnerReferences}}
	if err := c.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &sas, ctrl.InNamespace(tn.ManagementNamespace())); err != nil || len(sas.Items) != 1 || sas.Items[0].Name != rendered.Name {
		t.Errorf("ServiceAccounts after the second reconcile: %v (%v), want only %s", sas.Items, err, rendered.Name)
	}
}
