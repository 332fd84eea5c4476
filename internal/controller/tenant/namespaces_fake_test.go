package tenant

import (
	"context"
	"strings"
	"sync"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/render"
)

// forbiddenByFlag is what the manager makes of
// --tenant-forbidden-namespaces=flux-system,cert-manager,vault: its
// default and a namespace the platform team added.
var forbiddenByFlag = render.ForbiddenNamespaces{
	"flux-system":  "listed in the manager's --tenant-forbidden-namespaces",
	"cert-manager": "listed in the manager's --tenant-forbidden-namespaces",
	"vault":        "listed in the manager's --tenant-forbidden-namespaces",
}

// namespaceEnv is a fake API server and a tenant reconciler that records
// the namespaces it lists Clusters and Secrets in.
type namespaceEnv struct {
	c      ctrl.WithWatch
	r      *Reconciler
	events *record.FakeRecorder

	mu sync.Mutex
	// looked are the namespaces Clusters or Secrets were listed in.
	looked []string
}

func newNamespaceEnv(t *testing.T, objs ...ctrl.Object) *namespaceEnv {
	t.Helper()
	env := &namespaceEnv{events: record.NewFakeRecorder(64)}
	env.c = indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(objs...).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
				_, clusters := list.(*clusterapi.ClusterList)
				_, secrets := list.(*metav1.PartialObjectMetadataList)
				if clusters || secrets {
					o := &ctrl.ListOptions{}
					o.ApplyOptions(opts)
					env.mu.Lock()
					env.looked = append(env.looked, o.Namespace)
					env.mu.Unlock()
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	env.r = &Reconciler{Client: env.c, Reader: env.c, Clusters: env.c, WatchClusters: true, Recorder: env.events,
		ForbiddenNamespaces: forbiddenByFlag}
	return env
}

func (env *namespaceEnv) reconcile(t *testing.T, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	key := ctrl.ObjectKey{Name: name}
	if _, err := env.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := env.c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func (env *namespaceEnv) lookedIn(ns string) bool {
	env.mu.Lock()
	defer env.mu.Unlock()
	for _, l := range env.looked {
		if l == ns || l == "" {
			return true
		}
	}
	return false
}

func (env *namespaceEnv) forgetLooked() {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.looked = nil
}

// fluxObjects counts the Kustomizations and OCIRepositories.
func (env *namespaceEnv) fluxObjects(t *testing.T) int {
	t.Helper()
	var kss kustomizev1.KustomizationList
	var repos sourcev1.OCIRepositoryList
	if err := env.c.List(context.Background(), &kss); err != nil {
		t.Fatal(err)
	}
	if err := env.c.List(context.Background(), &repos); err != nil {
		t.Fatal(err)
	}
	return len(kss.Items) + len(repos.Items)
}

// clusterWithKubeconfig is a selected, eligible Cluster of tenant acme in
// namespace ns, and its kubeconfig Secret.
func clusterWithKubeconfig(ns, name string) []ctrl.Object {
	return []ctrl.Object{
		testCluster(ns, name, map[string]string{"team": "acme"}, true),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"}},
	}
}

// assertRefused checks the refusal of tenant tn for namespace ns: ClustersReady
// False and Stalled with NamespaceNotAllowed and a message naming the
// tenant, the namespace (with want) and the fix, a Warning event, and
// nothing read in ns.
func assertRefused(t *testing.T, env *namespaceEnv, tn *tenancyv1alpha1.Tenant, ns, want string) {
	t.Helper()
	cond := findCondition(tn, tenancyv1alpha1.ClustersReadyCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tenancyv1alpha1.NamespaceNotAllowedReason {
		t.Fatalf("ClustersReady = %+v, want False %s", cond, tenancyv1alpha1.NamespaceNotAllowedReason)
	}
	for _, part := range []string{"Tenant " + tn.Name, want, "remove it from spec.clusters.namespaces"} {
		if !strings.Contains(cond.Message, part) {
			t.Errorf("ClustersReady's message %q does not say %q", cond.Message, part)
		}
	}
	stalled := findCondition(tn, tenancyv1alpha1.StalledCondition)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != tenancyv1alpha1.NamespaceNotAllowedReason || stalled.Message != cond.Message {
		t.Errorf("Stalled = %+v, want True %s with ClustersReady's message: the spec must change", stalled, tenancyv1alpha1.NamespaceNotAllowedReason)
	}
	if findCondition(tn, tenancyv1alpha1.ReconcilingCondition) != nil {
		t.Error("a refused tenant is also Reconciling")
	}
	if ready := findCondition(tn, tenancyv1alpha1.ReadyCondition); ready == nil || ready.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", ready)
	}
	if !warned(env.events, tenancyv1alpha1.NamespaceNotAllowedReason, ns) {
		t.Errorf("no Warning event %s naming %s", tenancyv1alpha1.NamespaceNotAllowedReason, ns)
	}
	if env.lookedIn(ns) {
		t.Errorf("Clusters or Secrets were listed in namespace %s (looked in %q), which the tenant may not use", ns, env.looked)
	}
}

// warned drains the recorded events and tells whether one was a Warning
// of reason that names ns.
func warned(events *record.FakeRecorder, reason, ns string) bool {
	found := false
	for {
		select {
		case e := <-events.Events:
			if strings.HasPrefix(e, corev1.EventTypeWarning+" "+reason+" ") && strings.Contains(e, ns) {
				found = true
			}
		default:
			return found
		}
	}
}

// A tenant whose spec.clusters.namespaces lists a namespace it may not
// use is refused before anything is read there, and nothing is written
// for its clusters — not even in the namespaces it may use.
func TestReconcileRefusesNamespacesNotAllowed(t *testing.T) {
	for _, tt := range []struct {
		name, namespace, want string
	}{
		{"flux-system, forbidden by the flag's default", "flux-system",
			"lists namespace flux-system (listed in the manager's --tenant-forbidden-namespaces)"},
		{"another tenant's management namespace", "tenant-beta",
			"lists namespace tenant-beta (the management namespace of Tenant beta)"},
		{"a namespace the platform team added to the flag", "vault",
			"lists namespace vault (listed in the manager's --tenant-forbidden-namespaces)"},
		{"kube-system, in a Tenant stored before the CRD refused it", "kube-system",
			"lists namespace kube-system (a Kubernetes system namespace)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tn := testTenant()
			tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
			tn.Spec.Clusters.Namespaces = []string{"shared", tt.namespace}
			beta := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "beta", UID: "uid-beta", Generation: 1}}
			objs := []ctrl.Object{tn, beta}
			objs = append(objs, clusterWithKubeconfig("shared", "a")...)
			objs = append(objs, clusterWithKubeconfig(tt.namespace, "theirs")...)
			env := newNamespaceEnv(t, objs...)

			got := env.reconcile(t, tn.Name)
			assertRefused(t, env, got, tt.namespace, tt.want)
			if n := env.fluxObjects(t); n != 0 {
				t.Errorf("%d Flux objects written for a refused tenant, want none", n)
			}
			if len(got.Status.Clusters) != 0 {
				t.Errorf("status.clusters of a refused tenant: %+v, want none (nothing was looked at)", got.Status.Clusters)
			}
			// As for the other spec refusals, the tenant's own
			// namespace and RBAC are still written.
			if cond := findCondition(got, tenancyv1alpha1.ManagementReadyCondition); cond == nil || cond.Status != metav1.ConditionTrue {
				t.Errorf("ManagementReady = %+v, want True", cond)
			}
		})
	}
}

// A refusal that comes later (the spec now lists flux-system) changes and
// deletes nothing the tenant had: its Flux objects in the namespaces it
// may use stay as they were, and so do the user's objects in the refused
// namespace.
func TestNamespaceRefusalWritesNothing(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	users := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"},
		Spec: kustomizev1.KustomizationSpec{Path: "./clusters/management", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}}}
	objs := []ctrl.Object{tn, users}
	objs = append(objs, clusterWithKubeconfig("shared", "a")...)
	objs = append(objs, clusterWithKubeconfig("flux-system", "management")...)
	env := newNamespaceEnv(t, objs...)

	got := env.reconcile(t, tn.Name)
	if cond := findCondition(got, tenancyv1alpha1.ClustersReadyCondition); cond == nil || cond.Reason == tenancyv1alpha1.NamespaceNotAllowedReason {
		t.Fatalf("ClustersReady = %+v before the spec lists flux-system", cond)
	}
	if n := env.fluxObjects(t); n != 3 {
		t.Fatalf("%d Flux objects, want the user's Kustomization, and the tenant's source and Kustomization in shared", n)
	}
	before := resourceVersions(t, ctx, env.c)

	got.Spec.Clusters.Namespaces = append(got.Spec.Clusters.Namespaces, "flux-system")
	got.Generation = 2
	if err := env.c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	env.forgetLooked()
	got = env.reconcile(t, tn.Name)
	assertRefused(t, env, got, "flux-system", "lists namespace flux-system")

	after := resourceVersions(t, ctx, env.c)
	for key, version := range before {
		if strings.HasPrefix(key, "tenant/") {
			continue
		}
		if after[key] != version {
			t.Errorf("%s changed or deleted by the refusal: resourceVersion %q, was %q", key, after[key], version)
		}
	}
	for key := range after {
		if _, ok := before[key]; !ok {
			t.Errorf("%s written by the refusal", key)
		}
	}
}

// A namespace a tenant shares is allowed while no other Tenant manages
// it. Once a Tenant is created with it as its management namespace, the
// first tenant is enqueued and refused (its Flux objects there stay as
// they were); once that Tenant is gone, it goes on.
func TestNamespaceRefusalFollowsOtherTenants(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	tn.Spec.Clusters.Namespaces = []string{"shared", "tenant-acme"}
	gamma := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "gamma", UID: "uid-gamma", Generation: 1}}
	objs := []ctrl.Object{tn, gamma}
	objs = append(objs, clusterWithKubeconfig("shared", "a")...)
	env := newNamespaceEnv(t, objs...)

	got := env.reconcile(t, tn.Name)
	if cond := findCondition(got, tenancyv1alpha1.ClustersReadyCondition); cond == nil || cond.Reason == tenancyv1alpha1.NamespaceNotAllowedReason {
		t.Fatalf("ClustersReady = %+v, want the shared namespace allowed", cond)
	}
	if stalled := findCondition(got, tenancyv1alpha1.StalledCondition); stalled != nil {
		t.Fatalf("Stalled = %+v for an allowed namespace", stalled)
	}
	var kss kustomizev1.KustomizationList
	if err := env.c.List(ctx, &kss); err != nil || len(kss.Items) != 1 || kss.Items[0].Namespace != "shared" {
		t.Fatalf("Kustomizations: %d (%v), want the one of shared/a", len(kss.Items), err)
	}
	written := kss.Items[0].ResourceVersion

	beta := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "beta", UID: "uid-beta"},
		Spec: tenancyv1alpha1.TenantSpec{Management: &tenancyv1alpha1.ManagementSpec{Namespace: "shared"}}}
	if err := env.c.Create(ctx, beta); err != nil {
		t.Fatal(err)
	}
	if reqs := env.r.byListedNamespace(ctx, beta); len(reqs) != 1 || reqs[0].Name != tn.Name {
		t.Fatalf("creating Tenant beta enqueued %v, want acme, which lists its management namespace", reqs)
	}
	env.forgetLooked()
	got = env.reconcile(t, tn.Name)
	assertRefused(t, env, got, "shared", "lists namespace shared (the management namespace of Tenant beta)")
	if err := env.c.List(ctx, &kss); err != nil || len(kss.Items) != 1 || kss.Items[0].ResourceVersion != written {
		t.Errorf("the tenant's Kustomization in shared was changed or deleted by the refusal: %+v (%v)", kss.Items, err)
	}

	if err := env.c.Delete(ctx, beta); err != nil {
		t.Fatal(err)
	}
	if reqs := env.r.byListedNamespace(ctx, beta); len(reqs) != 1 || reqs[0].Name != tn.Name {
		t.Fatalf("deleting Tenant beta enqueued %v, want acme", reqs)
	}
	got = env.reconcile(t, tn.Name)
	if cond := findCondition(got, tenancyv1alpha1.ClustersReadyCondition); cond == nil || cond.Reason == tenancyv1alpha1.NamespaceNotAllowedReason {
		t.Errorf("ClustersReady = %+v after Tenant beta went, want the refusal lifted", cond)
	}
	if stalled := apimeta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition); stalled != nil {
		t.Errorf("Stalled = %+v after Tenant beta went", stalled)
	}
}
