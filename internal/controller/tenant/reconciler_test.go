package tenant

import (
	"context"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	tenantplan "github.com/capwright/capwright/internal/plan/tenant"
	"github.com/capwright/capwright/internal/render"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, tenancyv1alpha1.AddToScheme, clusterapi.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newUnstructuredCluster is an empty Cluster, unstructured: the fake
// client holds it as the typed Cluster the controller reads.
func newUnstructuredCluster() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterapi.ClusterGVK)
	return u
}

func testCluster(namespace, name string, labels map[string]string, initialized bool) *unstructured.Unstructured {
	u := newUnstructuredCluster()
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	_ = unstructured.SetNestedField(u.Object, initialized, "status", "initialization", "controlPlaneInitialized")
	return u
}

func testTenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "uid-acme", Generation: 1},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"team": "acme"}},
				Namespaces: []string{"shared"},
			},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/stack"}, Tag: "v1"}},
		},
	}
}

// findClusters reads Clusters and kubeconfig Secrets of the tenant's
// namespaces only, and selection decides from what it found.
func TestFindClustersStaysInTheTenantsNamespaces(t *testing.T) {
	objs := []ctrl.Object{
		testCluster("shared", "ready", map[string]string{"team": "acme"}, true),
		testCluster("shared", "booting", map[string]string{"team": "acme"}, false),
		testCluster("shared", "no-secret", map[string]string{"team": "acme"}, true),
		testCluster("elsewhere", "outside", map[string]string{"team": "acme"}, true),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "ready-kubeconfig"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "booting-kubeconfig"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "outside-kubeconfig"}},
	}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(objs...).Build()
	r := &Reconciler{Client: c, Reader: c, Clusters: c}
	tn := testTenant()
	found := tenantplan.Facts{Tenant: tn}
	if err := r.findClusters(context.Background(), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Clusters) != 3 {
		t.Fatalf("found %d clusters, want the 3 in namespace shared: %+v", len(found.Clusters), found.Clusters)
	}
	sel, err := render.SelectClusters(tn, found.Clusters, found.Kubeconfigs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"shared/booting":   tenancyv1alpha1.ControlPlaneNotInitializedReason,
		"shared/no-secret": tenancyv1alpha1.KubeconfigMissingReason,
		"shared/ready":     "",
	}
	for _, d := range sel.Selected() {
		reason, ok := want[d.Cluster.String()]
		if !ok || reason != d.Reason {
			t.Errorf("%s: reason %q, want %q", d, d.Reason, reason)
		}
	}
}

func TestByNamespaceMapsToTenantsThatLookThere(t *testing.T) {
	other := testTenant()
	other.Name, other.UID = "other", "uid-other"
	other.Spec.Clusters.Namespaces = nil
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(testTenant(), other).Build()
	r := &Reconciler{Client: c}
	for ns, want := range map[string][]string{"shared": {"acme"}, "tenant-other": {"other"}, "tenant-acme": {"acme"}, "kube-system": nil} {
		var got []string
		for _, req := range r.byNamespace(context.Background(), testCluster(ns, "c", nil, true)) {
			got = append(got, req.Name)
		}
		if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("namespace %s: enqueued %v, want %v", ns, got, want)
		}
	}
}

func TestByTenantLabel(t *testing.T) {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "x", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "acme"}}}
	reqs := byTenantLabel(context.Background(), ks)
	if len(reqs) != 1 || reqs[0].NamespacedName != (types.NamespacedName{Name: "acme"}) {
		t.Errorf("got %v", reqs)
	}
	if reqs := byTenantLabel(context.Background(), &kustomizev1.Kustomization{}); len(reqs) != 0 {
		t.Errorf("an unlabelled object enqueued %v", reqs)
	}
}

// A Namespace of the same name that Capwright did not create for the
// tenant is never written: ManagementReady says why, nothing else is
// applied.
func TestForeignNamespaceIsAConflict(t *testing.T) {
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme"}}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(foreign).Build()
	r := &Reconciler{Client: c, Reader: c, Clusters: c}
	tn := testTenant()
	_, err := r.reconcile(context.Background(), tn, "")
	if refusal, ok := plan.AsRefusal(err); !ok || refusal.Reason != tenancyv1alpha1.ObjectConflictReason || !refusal.Stalls {
		t.Fatalf("reconcile = %v; want a refusal", err)
	}
	cond := findCondition(tn, tenancyv1alpha1.ManagementReadyCondition)
	if cond == nil || cond.Reason != tenancyv1alpha1.ObjectConflictReason {
		t.Fatalf("ManagementReady = %+v, want ObjectConflict", cond)
	}
	var sas corev1.ServiceAccountList
	if err := c.List(context.Background(), &sas); err != nil || len(sas.Items) != 0 {
		t.Errorf("ServiceAccounts written despite the conflict: %d (%v)", len(sas.Items), err)
	}
}

func findCondition(tn *tenancyv1alpha1.Tenant, typ string) *metav1.Condition {
	for i := range tn.Status.Conditions {
		if tn.Status.Conditions[i].Type == typ {
			return &tn.Status.Conditions[i]
		}
	}
	return nil
}
