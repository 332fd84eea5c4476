package soak

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The provider versions: the fleet installs the core provider at the
// newer (the real Cluster API manager it runs, whose webhooks every
// Cluster write goes through, is of that version) and the kubeadm
// providers at the older; churn upgrades those, and tries (and must
// fail) to take an upgraded provider back.
const (
	OldCAPIVersion = framework.PreviousCAPIVersion
	NewCAPIVersion = "v1.14.2"
)

// StackLabel marks the stack's objects on the workload clusters with
// their tenant: one list per server tells which stacks are there.
const StackLabel = "soak.capwright.io/stack"

// rolloutBake is the rollout tenants' bake time: the minimum.
const rolloutBake = 10 * time.Second

// waves are the rollout tenants' waves, by the ring label of their
// Clusters.
var waves = []string{"canary", "early", "late"}

// fleet is what the soak made and what it expects of it. The schedule is
// drawn before the run, so it only names tenants and clusters; the fleet
// knows which exist when an event comes.
type fleet struct {
	e  *Env
	mu sync.Mutex
	// tenants by name, and the names of those removed that may still be
	// going.
	tenants map[string]*tenant
	gone    map[string]bool
	// providers by type.
	providers map[string]*provider
	// contracts are the contract Clusters by name (contract.go), made
	// once at the start.
	contracts []string
	owned     *ownedSet
}

type tenant struct {
	name                  string
	chart, rollout, extra bool
	// url is the stack's repository; tag the tag (kustomize) or version
	// (chart) it should run, and seq the last tag number pushed.
	url string
	tag string
	seq int
	// rolledBack: the last revision set was bad, and the rollout went
	// back to the one before.
	rolledBack bool
	clusters   map[string]*cluster
}

type cluster struct {
	namespace, name string
	// server indexes Env.Servers.
	server int
	ring   string
	churn  bool
}

type provider struct {
	obj     providersv1alpha1.Provider
	version string
}

func newFleet(e *Env) *fleet {
	return &fleet{e: e, tenants: map[string]*tenant{}, gone: map[string]bool{}, providers: map[string]*provider{}, owned: newOwnedSet()}
}

func tenantName(i int) string          { return fmt.Sprintf("soak-t%02d", i) }
func extraTenantName(i int) string     { return fmt.Sprintf("soak-x%02d", i) }
func clusterNamespace(t string) string { return t + "-clusters" }
func clusterName(j int) string         { return fmt.Sprintf("c%02d", j) }

// installProviders installs the Cluster API core provider from its
// GitHub release (the stand-in for github.com) at NewCAPIVersion and the
// kubeadm bootstrap and control-plane providers from OCI artifacts in
// the plane's registry at OldCAPIVersion, and tracks them as the user's.
func (f *fleet) installProviders(ctx context.Context) error {
	p := f.e.Plane
	urls := map[string]string{}
	for _, version := range []string{OldCAPIVersion, NewCAPIVersion} {
		for _, typ := range []string{providersv1alpha1.BootstrapProviderType, providersv1alpha1.ControlPlaneProviderType} {
			url, err := framework.PublishCAPIProvider(ctx, p.Registry.Host, filepath.Dir(p.CAPIComponentsPath(version, "metadata.yaml")), typ, "kubeadm", version)
			if err != nil {
				return err
			}
			urls[typ] = url
		}
	}
	oci := func(typ string) *providersv1alpha1.ProviderSource {
		return &providersv1alpha1.ProviderSource{OCI: &providersv1alpha1.OCISource{OCIRegistryAccess: providersv1alpha1.OCIRegistryAccess{URL: urls[typ], Insecure: true}}}
	}
	core := &providersv1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		Spec: providersv1alpha1.ProviderSpec{Version: NewCAPIVersion, Source: &providersv1alpha1.ProviderSource{Release: &providersv1alpha1.ReleaseSource{
			URL: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"}}}}
	bootstrap := &providersv1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm"},
		Spec: providersv1alpha1.ProviderSpec{Version: OldCAPIVersion, Source: oci(providersv1alpha1.BootstrapProviderType)}}
	controlPlane := &providersv1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"},
		Spec: providersv1alpha1.ProviderSpec{Version: OldCAPIVersion, Source: oci(providersv1alpha1.ControlPlaneProviderType)}}
	for _, obj := range []providersv1alpha1.Provider{core, bootstrap, controlPlane} {
		if err := f.createNamespace(ctx, obj.GetNamespace()); err != nil {
			return err
		}
		if err := f.create(ctx, obj.(client.Object)); err != nil {
			return err
		}
		f.providers[obj.ProviderType()] = &provider{obj: obj, version: obj.GetSpec().Version}
	}
	return nil
}

// providerTypes are the fleet's providers, in a fixed order.
func providerTypes() []string {
	return []string{providersv1alpha1.CoreProviderType, providersv1alpha1.BootstrapProviderType, providersv1alpha1.ControlPlaneProviderType}
}

// create creates obj and tracks it as the user's.
func (f *fleet) create(ctx context.Context, obj client.Object) error {
	if err := createRetrying(ctx, f.e.Client, obj); err != nil {
		return fmt.Errorf("creating %s: %w", describe(obj), err)
	}
	f.owned.add(f.e.Client, obj)
	return nil
}

// createRetrying creates obj, trying again while the API server is away
// (a restart) for up to two minutes.
func createRetrying(ctx context.Context, c client.Client, obj client.Object) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := c.Create(ctx, obj)
		if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (f *fleet) createNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := createRetrying(ctx, f.e.Client, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if ns.UID != "" {
		f.owned.add(f.e.Client, ns)
	}
	return nil
}

// planTenants makes the starting fleet's Clusters, the user's objects
// beside them and the stacks' first revisions, and returns the Tenants
// to create (createTenants): the first tenant has a chart stack (one
// cluster per fleet server: its Helm release is named after the tenant,
// and two on one server would share it), a quarter (at least one) roll
// out wave by wave, the rest follow their tag at once.
func (f *fleet) planTenants(ctx context.Context) ([]*tenant, error) {
	o := f.e.opts
	rollouts := max(1, o.Tenants/4)
	var out []*tenant
	for i := range o.Tenants {
		t := &tenant{name: tenantName(i), chart: i == 0, rollout: i >= 1 && i <= rollouts, clusters: map[string]*cluster{}}
		n := o.Clusters
		if t.chart {
			n = min(n, o.WorkloadServers)
		}
		for j := range n {
			c := &cluster{namespace: clusterNamespace(t.name), name: clusterName(j), server: j % o.WorkloadServers}
			if t.rollout {
				c.ring = waves[j*len(waves)/n]
			}
			t.clusters[c.name] = c
		}
		out = append(out, t)
	}
	err := framework.Parallel(ctx, len(out), 8, func(ctx context.Context, i int) error { return f.prepareTenant(ctx, out[i]) })
	return out, err
}

// createTenants creates the planned Tenants.
func (f *fleet) createTenants(ctx context.Context, tenants []*tenant) error {
	return framework.Parallel(ctx, len(tenants), 8, func(ctx context.Context, i int) error { return f.createTenant(ctx, tenants[i]) })
}

// addTenant is a Tenant churn adds: prepared and created at once.
func (f *fleet) addTenant(ctx context.Context, t *tenant) error {
	if err := f.prepareTenant(ctx, t); err != nil {
		return err
	}
	return f.createTenant(ctx, t)
}

// prepareTenant pushes the tenant's first revision and registers its
// clusters, with the user's data beside them.
func (f *fleet) prepareTenant(ctx context.Context, t *tenant) error {
	ns := clusterNamespace(t.name)
	if err := f.createNamespace(ctx, ns); err != nil {
		return err
	}
	// The user's own objects beside the Clusters: nothing may take them.
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "soak-user-data"}, Data: map[string]string{"owner": "the soak"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "soak-user-secret"}, StringData: map[string]string{"token": "not-a-secret"}},
	} {
		if err := f.create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := f.pushRevision(ctx, t, false); err != nil {
		return err
	}
	clusters := sortedClusters(t)
	return framework.Parallel(ctx, len(clusters), 4, func(ctx context.Context, i int) error { return f.registerCluster(ctx, clusters[i]) })
}

// createTenant creates the Tenant.
func (f *fleet) createTenant(ctx context.Context, t *tenant) error {
	if err := f.create(ctx, f.tenantObject(t)); err != nil {
		return err
	}
	f.mu.Lock()
	f.tenants[t.name] = t
	delete(f.gone, t.name)
	f.mu.Unlock()
	return nil
}

// pushRevision pushes the tenant's next revision and makes it the one
// expected; broken adds a Deployment no node can run, whose health check
// fails.
func (f *fleet) pushRevision(ctx context.Context, t *tenant, broken bool) error {
	host := f.e.Plane.Registry.Host
	t.seq++
	if t.chart {
		version := fmt.Sprintf("0.%d.0", t.seq)
		template := `apiVersion: v1
kind: ConfigMap
metadata:
  name: soak-stack
  labels:
    ` + StackLabel + `: {{ .Release.Name | quote }}
data:
  tier: {{ .Values.tier | quote }}
`
		if broken {
			template = "{{ fail \"this chart version is broken\" }}\n"
		}
		url, err := framework.PushChart(ctx, host, "soak/charts/"+t.name, "soak-stack", version, map[string][]byte{
			"templates/configmap.yaml": []byte(template),
			"values.yaml":              []byte("tier: default\n"),
		})
		if err != nil {
			return err
		}
		t.url, t.tag = url, version
		return nil
	}
	tag := fmt.Sprintf("v1.0.%d", t.seq)
	if broken {
		tag += "-broken"
	}
	files := map[string][]byte{"configmap.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: soak-stack
  labels:
    ` + StackLabel + `: ` + t.name + `
data:
  release: ` + tag + `
  greeting: ${GREETING:=hello}
`)}
	if broken {
		files["deployment.yaml"] = []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: broken
spec:
  replicas: 1
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec:
      containers: [{name: broken, image: registry.invalid/broken:1}]
`)
	}
	art, err := framework.PushFiles(ctx, host, "soak/stacks/"+t.name, tag, files, nil)
	if err != nil {
		return err
	}
	t.url, t.tag = art.URL, tag
	return nil
}

func (f *fleet) tenantObject(t *tenant) *tenancyv1alpha1.Tenant {
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: t.name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}, Namespaces: []string{clusterNamespace(t.name)}},
			Stack:    tenancyv1alpha1.StackSpec{Timeout: &metav1.Duration{Duration: 30 * time.Second}},
		},
	}
	access := tenancyv1alpha1.OCIRepositoryAccess{URL: t.url, Insecure: true}
	if t.chart {
		tn.Spec.Stack.Chart = &tenancyv1alpha1.ChartStack{OCIRepositoryAccess: access, Version: t.tag,
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"tier":"gold"}`)}}
	} else {
		tn.Spec.Stack.Kustomize = &tenancyv1alpha1.KustomizeStack{OCIRepositoryAccess: access, Tag: t.tag,
			Substitute: map[string]string{"GREETING": "hello"}}
	}
	if t.rollout {
		half := intstr.FromString("50%")
		tn.Spec.Stack.Timeout = &metav1.Duration{Duration: 20 * time.Second}
		tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", MaxUpdating: &half, BakeTime: &metav1.Duration{Duration: rolloutBake}}
		for _, w := range waves {
			tn.Spec.Rollout.Waves = append(tn.Spec.Rollout.Waves, tenancyv1alpha1.Wave{Name: w})
		}
	}
	return tn
}

// registerCluster writes what Cluster API writes for a provisioned
// cluster (plane.RegisterWorkloadCluster): the Cluster with its control
// plane initialized, labelled with its ring, and its kubeconfig Secret
// for its server; both are the user's.
func (f *fleet) registerCluster(ctx context.Context, c *cluster) error {
	obj := plane.NewTestCluster(c.namespace, c.name)
	if c.ring != "" {
		obj.SetLabels(map[string]string{"ring": c.ring})
	}
	if err := createRetrying(ctx, f.e.Client, obj); err != nil {
		return fmt.Errorf("creating Cluster %s/%s: %w", c.namespace, c.name, err)
	}
	// Cluster API's manager may have written the Cluster meanwhile (its
	// finalizer): read it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := f.e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, true, "status", "initialization", "controlPlaneInitialized"); err != nil {
			return err
		}
		return f.e.Client.Status().Update(ctx, obj)
	})
	if err != nil {
		return fmt.Errorf("initializing Cluster %s/%s: %w", c.namespace, c.name, err)
	}
	f.owned.add(f.e.Client, obj)
	secret := plane.KubeconfigSecret(c.namespace, c.name, f.e.Servers[c.server].Kubeconfig)
	return f.create(ctx, secret)
}

// removeCluster deletes a Cluster, as Cluster API does when a cluster is
// deleted; it is no longer the user's. Its kubeconfig Secret stays until
// the stack is uninstalled (removeKubeconfig), as Flux needs it to
// reach the cluster.
func (f *fleet) removeCluster(ctx context.Context, c *cluster) error {
	obj := plane.NewTestCluster(c.namespace, c.name)
	f.owned.forget(obj)
	if err := f.e.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", describe(obj), err)
	}
	return nil
}

// removeTenant deletes a Tenant, which must uninstall its stack from its
// clusters, and then its Clusters.
func (f *fleet) removeTenant(ctx context.Context, t *tenant) error {
	tn := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: t.name}}
	f.owned.forget(tn)
	if err := f.e.Client.Delete(ctx, tn); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	f.mu.Lock()
	delete(f.tenants, t.name)
	f.gone[t.name] = true
	f.mu.Unlock()
	return nil
}

func sortedClusters(t *tenant) []*cluster {
	out := make([]*cluster, 0, len(t.clusters))
	for _, c := range t.clusters {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// keptObjects counts what the manager keeps besides Flux's objects:
// the providers, the Tenants, and each contract Cluster's two contract
// objects and kubeconfig Secret.
func (f *fleet) keptObjects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.providers) + len(f.tenants) + 3*len(f.contracts)
}

// tenantNames are the tenants that exist, sorted.
func (f *fleet) tenantNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.tenants))
	for n := range f.tenants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (f *fleet) tenant(name string) *tenant {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tenants[name]
}

// unconverged lists what has not converged: a provider not Ready for its
// generation at the version expected, or whose artifact is not resolved
// (again, after an outage), a Tenant not Ready for its
// generation with every cluster on the revision expected (or, after a bad
// revision, not rolled back with every cluster on the last good one), a
// removed Tenant still there, a contract Cluster's objects
// (contractsUnconverged).
func (f *fleet) unconverged(ctx context.Context) ([]string, error) {
	c := f.e.Client
	var pending []string
	for _, typ := range providerTypes() {
		p := f.providers[typ]
		obj := p.obj.DeepCopyObject().(providersv1alpha1.Provider)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err != nil {
			return nil, err
		}
		if msg := providerConverged(obj, p.version); msg != "" {
			pending = append(pending, msg)
		}
	}
	contracts, err := f.contractsUnconverged(ctx)
	if err != nil {
		return nil, err
	}
	pending = append(pending, contracts...)
	var list tenancyv1alpha1.TenantList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	seen := map[string]*tenancyv1alpha1.Tenant{}
	for i := range list.Items {
		seen[list.Items[i].Name] = &list.Items[i]
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.gone {
		if _, ok := seen[name]; ok {
			pending = append(pending, "Tenant "+name+": still there after its deletion")
		} else {
			delete(f.gone, name)
		}
	}
	for name, t := range f.tenants {
		tn, ok := seen[name]
		if !ok {
			pending = append(pending, "Tenant "+name+": missing")
			continue
		}
		if msg := tenantConverged(tn, t); msg != "" {
			pending = append(pending, msg)
		}
	}
	sort.Strings(pending)
	return pending, nil
}

func providerConverged(p providersv1alpha1.Provider, version string) string {
	who := fmt.Sprintf("%s %s/%s", p.GetObjectKind().GroupVersionKind().Kind, p.GetNamespace(), p.GetName())
	if kind := p.GetObjectKind().GroupVersionKind().Kind; kind == "" {
		who = fmt.Sprintf("%s provider %s/%s", p.ProviderType(), p.GetNamespace(), p.GetName())
	}
	st := p.GetStatus()
	ready := apimeta.FindStatusCondition(st.Conditions, providersv1alpha1.ReadyCondition)
	switch {
	case st.ObservedGeneration != p.GetGeneration():
		return fmt.Sprintf("%s: status of generation %d, spec at %d", who, st.ObservedGeneration, p.GetGeneration())
	case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != p.GetGeneration():
		return fmt.Sprintf("%s: Ready %s", who, conditionString(ready))
	case st.InstalledVersion != version:
		return fmt.Sprintf("%s: installed %s, want %s", who, st.InstalledVersion, version)
	}
	// After an outage of its source the provider says so until the
	// manager resolves it again: that is part of converging.
	if resolved := apimeta.FindStatusCondition(st.Conditions, providersv1alpha1.ArtifactResolvedCondition); resolved != nil && resolved.Reason != providersv1alpha1.ResolvedReason {
		return fmt.Sprintf("%s: ArtifactResolved %s", who, conditionString(resolved))
	}
	return ""
}

func tenantConverged(tn *tenancyv1alpha1.Tenant, t *tenant) string {
	who := "Tenant " + tn.Name
	st := tn.Status
	if st.ObservedGeneration != tn.Generation {
		return fmt.Sprintf("%s: status of generation %d, spec at %d", who, st.ObservedGeneration, tn.Generation)
	}
	if int(st.TotalClusters) != len(t.clusters) {
		return fmt.Sprintf("%s: %d clusters in status, want %d", who, st.TotalClusters, len(t.clusters))
	}
	if dup := duplicateLines(tn); dup != "" {
		return who + ": " + dup
	}
	if t.rolledBack {
		r := st.Rollout
		if r == nil || r.Phase != tenancyv1alpha1.RolloutRolledBack {
			return fmt.Sprintf("%s: want the bad revision %s rolled back, rollout %s", who, t.tag, rolloutString(r))
		}
		for _, l := range st.Clusters {
			if l.Phase != tenancyv1alpha1.ClusterPhaseReady || r.LastGood == nil || l.Revision != r.LastGood.ID {
				return fmt.Sprintf("%s: cluster %s %s (%s) on revision %s after the rollback", who, l.Name, l.Phase, l.Reason, l.Revision)
			}
		}
		return ""
	}
	ready := apimeta.FindStatusCondition(st.Conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != tn.Generation {
		return fmt.Sprintf("%s: Ready %s", who, conditionString(ready))
	}
	if int(st.ReadyClusters) != len(t.clusters) {
		return fmt.Sprintf("%s: %d of %d clusters Ready", who, st.ReadyClusters, len(t.clusters))
	}
	if t.rollout && (st.Rollout == nil || st.Rollout.Phase != tenancyv1alpha1.RolloutComplete) {
		return fmt.Sprintf("%s: rollout %s", who, rolloutString(st.Rollout))
	}
	for _, l := range st.Clusters {
		if !strings.HasPrefix(l.AppliedRevision, t.tag) {
			return fmt.Sprintf("%s: cluster %s applied %q, want %s", who, l.Name, l.AppliedRevision, t.tag)
		}
	}
	return ""
}

// duplicateLines names a cluster that has two lines in the Tenant's
// status.
func duplicateLines(tn *tenancyv1alpha1.Tenant) string {
	seen := map[string]bool{}
	for _, l := range tn.Status.Clusters {
		k := l.Namespace + "/" + l.Name
		if seen[k] {
			return "two status lines for cluster " + k
		}
		seen[k] = true
	}
	return ""
}

func conditionString(c *metav1.Condition) string {
	if c == nil {
		return "missing"
	}
	return fmt.Sprintf("%s %s: %s (observedGeneration %d)", c.Status, c.Reason, c.Message, c.ObservedGeneration)
}

func rolloutString(r *tenancyv1alpha1.RolloutStatus) string {
	if r == nil {
		return "none"
	}
	target := ""
	if r.Target != nil {
		target = r.Target.Artifact
	}
	return fmt.Sprintf("%s (target %s, %d failed)", r.Phase, target, len(r.Failed))
}

func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
		kind = strings.TrimPrefix(kind, "*v1alpha1.")
	}
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}

// ownedObject is an object of the user's: the soak made it and has not
// deleted it, so it must stay, with the same UID.
type ownedObject struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
}

func (o ownedObject) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

type ownedSet struct {
	mu   sync.Mutex
	objs map[string]ownedObject // by kind/namespace/name
}

func newOwnedSet() *ownedSet { return &ownedSet{objs: map[string]ownedObject{}} }

func ownedKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return gvk.GroupKind().String() + "/" + namespace + "/" + name
}

func (s *ownedSet) add(c client.Client, obj client.Object) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil || obj.GetUID() == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[ownedKey(gvk, obj.GetNamespace(), obj.GetName())] = ownedObject{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()}
}

// forget drops obj from the user's objects: the soak deletes it itself.
func (s *ownedSet) forget(obj client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.objs {
		if o.namespace == obj.GetNamespace() && o.name == obj.GetName() && kindMatches(o.gvk, obj) {
			delete(s.objs, k)
		}
	}
}

func kindMatches(gvk schema.GroupVersionKind, obj client.Object) bool {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k == gvk.Kind
	}
	return strings.HasSuffix(fmt.Sprintf("%T", obj), "."+gvk.Kind)
}

// byKind groups the objects by kind.
func (s *ownedSet) byKind() map[schema.GroupVersionKind][]ownedObject {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[schema.GroupVersionKind][]ownedObject{}
	for _, o := range s.objs {
		out[o.gvk] = append(out[o.gvk], o)
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b ownedObject) int { return strings.Compare(a.String(), b.String()) })
	}
	return out
}
