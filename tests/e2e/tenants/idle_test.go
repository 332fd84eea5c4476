package tenants

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// idleReconciles is how many complete routine reconciles every Flux
// applier must run in the window.
const idleReconciles = 2

// TestIdleTenantsWriteNothing: with nothing changing, Flux re-reconciles
// every tenant's sources, Kustomizations and HelmReleases — Ready goes
// Unknown, Reconciling and Healthy come and go — and the manager must not
// write anything for those tenants meanwhile: no status patch, no event,
// no Flux object. Flux does so every spec.stack.interval, at least a
// minute (the API server refuses less), so the test does not wait for
// it: it asks Flux for each run, as `flux reconcile` does, with
// reconcile.fluxcd.io/requestedAt on the Flux objects themselves — the
// run Flux then makes is the one the interval brings, and the request is
// Flux's to acknowledge, not the manager's. The window lasts until every
// applier has run idleReconciles complete reconciles that started in it,
// watched on the Flux objects themselves, so the test cannot pass with
// Flux idle, and at least the manager's resync interval, so that the
// manager looks at every tenant in it too. The Kustomizations creating
// the kustomize stack's target namespace re-check it hourly; the test
// asks each for one such reconcile in the window.
func TestIdleTenantsWriteNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	start := time.Now()

	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/idle-stack", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	chartURL, err := framework.PushChart(ctx, env.Registry.Host, "tenants/charts/idle", "idle", "0.1.0", map[string][]byte{
		"templates/configmap.yaml": []byte(chartConfigMap),
		"values.yaml":              []byte("tier: default\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var clusters []types.NamespacedName
	var names []string
	for _, w := range workloads {
		clusters = append(clusters, types.NamespacedName{Namespace: clusterNamespace, Name: w.Name})
		names = append(names, w.Name)
	}
	selection := tenancyv1alpha1.ClusterSelector{Names: names, Namespaces: []string{clusterNamespace}}

	ks := kustomizeTenant("idle-kustomize", art, selection)
	chart := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "idle-chart"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: selection,
			Stack: tenancyv1alpha1.StackSpec{
				Chart: &tenancyv1alpha1.ChartStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: chartURL, Insecure: true},
					Version:             "0.1.0",
				},
			},
		},
	}
	tenants := []*tenancyv1alpha1.Tenant{ks, chart}
	for _, tn := range tenants {
		createTenant(t, ctx, c, tn)
	}
	for _, tn := range tenants {
		waitTenant(t, ctx, c, tn.Name, 3*time.Minute, "Tenant "+tn.Name+" Ready", func(got *tenancyv1alpha1.Tenant) bool {
			return isReady(got) && int(got.Status.ReadyClusters) == len(clusters)
		})
	}
	t.Logf("both Tenants Ready on %d clusters %s after they were created", len(clusters), time.Since(start).Round(time.Millisecond))

	scope := newTenantScope(tenants, clusters)
	cycles := watchReconciles(t, ctx, scope)
	since := time.Now()
	for _, key := range scope.namespaceAppliers {
		requestReconcile(t, ctx, c, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}
	for run := 1; run <= idleReconciles; run++ {
		started := time.Now()
		for key, kind := range scope.fluxObjects {
			if obj := scope.routine(key, kind); obj != nil {
				requestReconcile(t, ctx, c, obj)
			}
		}
		eventually(t, 2*time.Minute, fmt.Sprintf("run %d: every Flux applier reconciled", run), func() (bool, string) {
			return cycles.completed(scope.appliers, started, 1)
		})
	}
	eventually(t, 2*time.Minute, fmt.Sprintf("every Flux applier reconciled %d times", idleReconciles), func() (bool, string) {
		stacks, state := cycles.completed(scope.appliers, since, idleReconciles)
		namespaces, nsState := cycles.completed(scope.namespaceAppliers, since, 1)
		return stacks && namespaces, state + "; " + nsState
	})
	// Time for the manager to act on the last reconcile's events, and to
	// resync every tenant once.
	time.Sleep(max(3*time.Second, resyncInterval+3*time.Second-time.Since(since)))
	window := time.Since(since).Round(time.Millisecond)
	_, state := cycles.completed(slices.Concat(scope.appliers, scope.namespaceAppliers), since, 1)
	t.Logf("Flux reconciles in the %s window: %s", window, state)
	assertHistoryAdvanced(t, ctx, c, scope, cycles.historyAtStart())

	writes, err := env.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	var ours, others []string
	for _, w := range writes {
		if scope.owns(w) {
			ours = append(ours, w.String())
		} else {
			others = append(others, w.String())
		}
	}
	if len(others) > 0 {
		t.Logf("writes of the manager for other objects in the window (not these tenants'):\n%s", strings.Join(others, "\n"))
	}
	if len(ours) > 0 {
		t.Errorf("the manager wrote %d times for idle tenants while Flux only re-reconciled:\n%s", len(ours), strings.Join(ours, "\n"))
	}
	for _, tn := range tenants {
		got := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), got); err != nil {
			t.Fatal(err)
		}
		if !isReady(got) || int(got.Status.ReadyClusters) != len(clusters) {
			t.Errorf("Tenant %s is no longer Ready on every cluster: %s", tn.Name, tenantState(got))
		}
	}
}

// tenantScope names what the manager writes for a set of tenants.
type tenantScope struct {
	tenants     map[string]bool
	namespaces  map[string]bool                 // management namespaces
	fluxObjects map[types.NamespacedName]string // name → kind, sources and appliers
	appliers    []types.NamespacedName
	// namespaceAppliers are the Kustomizations of the kustomize stack's
	// target namespace.
	namespaceAppliers []types.NamespacedName
}

func newTenantScope(tenants []*tenancyv1alpha1.Tenant, clusters []types.NamespacedName) tenantScope {
	s := tenantScope{tenants: map[string]bool{}, namespaces: map[string]bool{}, fluxObjects: map[types.NamespacedName]string{}}
	for _, tn := range tenants {
		s.tenants[tn.Name] = true
		s.namespaces[tn.ManagementNamespace()] = true
		kind := kustomizev1.KustomizationKind
		if tn.Spec.Stack.Chart != nil {
			kind = helmv2.HelmReleaseKind
		}
		for _, cl := range clusters {
			s.fluxObjects[types.NamespacedName{Namespace: cl.Namespace, Name: render.TenantSourceName(tn.Name)}] = sourcev1.OCIRepositoryKind
			applier := types.NamespacedName{Namespace: cl.Namespace, Name: render.TenantClusterObjectName(tn.Name, cl)}
			s.fluxObjects[applier] = kind
			s.appliers = append(s.appliers, applier)
			if tn.Spec.Stack.Kustomize != nil {
				// The target namespace's objects (re-checked hourly, so
				// not among the appliers the window waits for).
				s.fluxObjects[types.NamespacedName{Namespace: cl.Namespace, Name: render.TenantNamespaceArtifactName(tn.Name)}] = "ExternalArtifact"
				ns := types.NamespacedName{Namespace: cl.Namespace, Name: render.TenantNamespaceObjectName(tn.Name, cl)}
				s.fluxObjects[ns] = kustomizev1.KustomizationKind
				s.namespaceAppliers = append(s.namespaceAppliers, ns)
			}
		}
	}
	return s
}

// routine is the Flux object key of kind that Flux reconciles every
// spec.stack.interval (a source, a stack's applier), to ask for a run of;
// nil for the others (the target namespace's objects).
func (s tenantScope) routine(key types.NamespacedName, kind string) client.Object {
	om := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
	switch {
	case kind == sourcev1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{ObjectMeta: om}
	case !slices.Contains(s.appliers, key):
		return nil
	case kind == helmv2.HelmReleaseKind:
		return &helmv2.HelmRelease{ObjectMeta: om}
	default:
		return &kustomizev1.Kustomization{ObjectMeta: om}
	}
}

// owns tells whether a write concerns the tenants: the Tenants themselves
// (and their status), events about them (named <tenant>.<suffix>), their
// management namespaces and their Flux objects.
func (s tenantScope) owns(w plane.Write) bool {
	switch {
	case w.Resource == "tenants":
		return s.tenants[w.Name]
	case w.Resource == "events":
		name, _, _ := strings.Cut(w.Name, ".")
		return s.tenants[name] || s.namespaces[w.Namespace]
	case s.namespaces[w.Namespace] || (w.Resource == "namespaces" && s.namespaces[w.Name]):
		return true
	}
	_, ok := s.fluxObjects[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}]
	return ok
}

// reconcileCycles counts, per Flux applier, the reconciles it completed:
// Reconciling True (Flux sets it at the start of every reconcile, routine
// or not) followed by Reconciling gone and Ready True.
type reconcileCycles struct {
	mu        sync.Mutex
	reconcile map[types.NamespacedName]time.Time // start of the running reconcile
	done      map[types.NamespacedName][]time.Time
	history   map[types.NamespacedName]int64 // Kustomization reconciles Flux counted when first seen
}

// watchReconciles watches the scope's Kustomizations and HelmReleases
// until ctx ends.
func watchReconciles(t *testing.T, ctx context.Context, s tenantScope) *reconcileCycles {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: newClient(t, env.Config).Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	r := &reconcileCycles{reconcile: map[types.NamespacedName]time.Time{}, done: map[types.NamespacedName][]time.Time{},
		history: map[types.NamespacedName]int64{}}
	ctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	var synced sync.WaitGroup
	for _, list := range []client.ObjectList{&kustomizev1.KustomizationList{}, &helmv2.HelmReleaseList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(clusterNamespace), client.HasLabels{tenancyv1alpha1.TenantLabel})
		if err != nil {
			t.Fatal(err)
		}
		synced.Add(1)
		go func() {
			defer w.Stop()
			// The initial ADDED events of existing objects come first.
			var once sync.Once
			defer once.Do(synced.Done)
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if e.Type == watch.Added || e.Type == watch.Modified {
						if obj, ok := e.Object.(client.Object); ok {
							if _, mine := s.fluxObjects[client.ObjectKeyFromObject(obj)]; mine {
								r.observe(obj)
							}
						}
					}
					once.Do(synced.Done)
				}
			}
		}()
	}
	synced.Wait()
	return r
}

func (r *reconcileCycles) observe(obj client.Object) {
	var conds []metav1.Condition
	var generation int64
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		conds, generation = o.Status.Conditions, o.Generation
		r.mu.Lock()
		if _, seen := r.history[client.ObjectKeyFromObject(o)]; !seen {
			r.history[client.ObjectKeyFromObject(o)] = totalReconciliations(o)
		}
		r.mu.Unlock()
	case *helmv2.HelmRelease:
		conds, generation = o.Status.Conditions, o.Generation
	default:
		return
	}
	key := client.ObjectKeyFromObject(obj)
	reconciling := apimeta.FindStatusCondition(conds, meta.ReconcilingCondition)
	ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, running := r.reconcile[key]
	switch {
	case reconciling != nil && reconciling.Status == metav1.ConditionTrue:
		if !running {
			r.reconcile[key] = time.Now()
		}
	case running && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == generation:
		r.done[key] = append(r.done[key], r.reconcile[key])
		delete(r.reconcile, key)
	}
}

// completed reports whether every one of appliers completed n reconciles
// that started after since, and what each did.
func (r *reconcileCycles) completed(appliers []types.NamespacedName, since time.Time, n int) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := true
	var state []string
	for _, a := range appliers {
		count := 0
		for _, started := range r.done[a] {
			if started.After(since) {
				count++
			}
		}
		all = all && count >= n
		state = append(state, fmt.Sprintf("%s: %d", a.Name, count))
	}
	sort.Strings(state)
	return all, strings.Join(state, ", ")
}

func (r *reconcileCycles) historyAtStart() map[types.NamespacedName]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.NamespacedName]int64, len(r.history))
	for k, v := range r.history {
		out[k] = v
	}
	return out
}

// totalReconciliations is how many reconciles kustomize-controller counted
// in its latest history entry (the first; one more per reconcile that
// built the same manifests with the same outcome).
func totalReconciliations(ks *kustomizev1.Kustomization) int64 {
	if len(ks.Status.History) == 0 {
		return 0
	}
	return ks.Status.History[0].TotalReconciliations
}

// assertHistoryAdvanced checks Flux's own count: every Kustomization's
// status.history counted at least idleReconciles more reconciles.
func assertHistoryAdvanced(t *testing.T, ctx context.Context, c client.Client, s tenantScope, before map[types.NamespacedName]int64) {
	t.Helper()
	for _, a := range s.appliers {
		if s.fluxObjects[a] != kustomizev1.KustomizationKind {
			continue
		}
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, a, ks); err != nil {
			t.Fatal(err)
		}
		if n := totalReconciliations(ks) - before[a]; n < idleReconciles {
			t.Errorf("Kustomization %s: status.history counted %d reconciles in the window, want at least %d", a, n, idleReconciles)
		}
	}
}
