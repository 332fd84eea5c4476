package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/plane"
)

// Sample is what the sampler read at one moment: NaN where it could not
// read (the manager or the API server restarting).
type Sample struct {
	Time time.Time
	// RSS (bytes) and Goroutines are the manager's
	// process_resident_memory_bytes and go_goroutines.
	RSS, Goroutines float64
	// APIRequests is the API server's apiserver_request_total, summed.
	APIRequests float64
}

// sample looks every SampleEvery until ctx ends: the manager's writes
// and metrics, the API server's requests, invariant b (providers and
// stacks the step does not concern) and the rollouts (invariant e).
func (r *runner) sample(ctx context.Context) {
	tick := time.NewTicker(r.o.SampleEvery)
	defer tick.Stop()
	kube, _ := kubernetes.NewForConfig(r.e.Plane.Config)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.readWrites()
		s := Sample{Time: time.Now(), RSS: math.NaN(), Goroutines: math.NaN(), APIRequests: math.NaN()}
		if m, err := scrape(ctx, r.e.Manager.MetricsURL(), "process_resident_memory_bytes", "go_goroutines"); err == nil {
			s.RSS, s.Goroutines = m["process_resident_memory_bytes"], m["go_goroutines"]
		}
		if kube != nil {
			if raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
				s.APIRequests = sumMetric(raw, "apiserver_request_total")
			}
		}
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
		r.checkUnaffected(ctx)
	}
}

// scrape reads the named metrics (summed over their series) from a
// Prometheus endpoint.
func scrape(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, n := range names {
		out[n] = sumMetric(buf.Bytes(), n)
	}
	return out, nil
}

// sumMetric sums every series of metric name in a Prometheus text
// exposition.
func sumMetric(text []byte, name string) float64 {
	sum, found := 0.0, false
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, " ") {
			continue
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if !strings.HasPrefix(rest, "{") {
			fields = strings.Fields(rest)
		}
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return math.NaN()
	}
	return sum
}

// checkUnaffected holds what the current step does not concern to
// invariant b, and the rollouts to invariant e. A read that fails (the
// API server or etcd restarting) checks nothing, nor does a check during
// which the step changed.
func (r *runner) checkUnaffected(ctx context.Context) {
	c := r.e.Client
	con := r.currentConcerns()
	// Held until the end, and dropped if a new step began meanwhile: its
	// churn (a Tenant added or removed) may have changed the fleet under
	// a check made with the concerns of the step before.
	out := &findings{checks: map[string]int{}}
	defer func() {
		if r.currentConcerns().seq == con.seq {
			r.rec.record(out)
		}
	}()
	for _, typ := range providerTypes() {
		if con.providers[typ] {
			continue
		}
		p := r.f.providers[typ]
		obj := p.obj.DeepCopyObject().(providersv1alpha1.Provider)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err != nil {
			continue
		}
		out.check(UnrelatedProviderReady, 1)
		if ready := apimeta.FindStatusCondition(obj.GetConditions(), providersv1alpha1.ReadyCondition); ready != nil && ready.Status == metav1.ConditionFalse {
			out.violate(UnrelatedProviderReady, providerName(obj), "Ready=False %s: %s", ready.Reason, ready.Message)
		}
	}
	var tenants tenancyv1alpha1.TenantList
	if err := c.List(ctx, &tenants); err != nil {
		return
	}
	r.watchRollouts(tenants.Items)
	var kss kustomizev1.KustomizationList
	var hrs helmv2.HelmReleaseList
	if c.List(ctx, &kss, client.HasLabels{tenancyv1alpha1.ClusterNameLabel}) != nil || c.List(ctx, &hrs, client.HasLabels{tenancyv1alpha1.ClusterNameLabel}) != nil {
		return
	}
	type fluxState struct {
		ready *metav1.Condition
	}
	flux := map[string]fluxState{}
	for i := range kss.Items {
		flux["Kustomization "+kss.Items[i].Namespace+"/"+kss.Items[i].Name] = fluxState{apimeta.FindStatusCondition(kss.Items[i].Status.Conditions, "Ready")}
	}
	for i := range hrs.Items {
		flux["HelmRelease "+hrs.Items[i].Namespace+"/"+hrs.Items[i].Name] = fluxState{apimeta.FindStatusCondition(hrs.Items[i].Status.Conditions, "Ready")}
	}
	// The stacks on each reachable server, by tenant (their target
	// namespace).
	onServer := map[int]map[string]bool{}
	for s := range r.e.Servers {
		if con.servers[s] {
			continue
		}
		wc, err := r.serverClient(s)
		if err != nil {
			continue
		}
		var cms corev1.ConfigMapList
		if err := wc.List(ctx, &cms, client.HasLabels{StackLabel}); err != nil {
			continue
		}
		onServer[s] = map[string]bool{}
		for _, cm := range cms.Items {
			onServer[s][cm.Namespace] = true
		}
	}
	for _, name := range r.f.tenantNames() {
		t := r.f.tenant(name)
		if t == nil || con.tenants[name] {
			continue
		}
		kind := "Kustomization"
		if t.chart {
			kind = "HelmRelease"
		}
		r.f.mu.Lock()
		clusters := sortedClusters(t)
		r.f.mu.Unlock()
		servers := map[int]bool{}
		for _, cl := range clusters {
			servers[cl.server] = true
			ref := kind + " " + cl.namespace + "/" + render.TenantClusterObjectName(name, types.NamespacedName{Namespace: cl.namespace, Name: cl.name})
			out.check(UnaffectedStackKept, 1)
			st, ok := flux[ref]
			switch {
			case !ok:
				out.violate(UnaffectedStackKept, ref, "gone, while nothing in the step concerns Tenant %s", name)
			case st.ready != nil && st.ready.Status == metav1.ConditionFalse && con.chaos == NoChaos && !r.fallout(st.ready):
				out.violate(UnaffectedStackKept, ref, "Ready=False %s: %s, while nothing breaks and the step does not concern Tenant %s", st.ready.Reason, st.ready.Message, name)
			}
		}
		for s := range servers {
			seen, ok := onServer[s]
			if !ok {
				continue
			}
			out.check(UnaffectedStackKept, 1)
			if !seen[name] {
				out.violate(UnaffectedStackKept, fmt.Sprintf("ConfigMap %s/soak-stack on %s", name, r.e.Servers[s].Name),
					"the stack's object is gone from the workload server, while nothing in the step concerns Tenant %s", name)
			}
		}
	}
}

// falloutGrace is how long after a fault ends a Flux object may still
// show the failure the fault caused: a write kustomize-controller or
// helm-controller lost to a restarting API server or etcd stays on the
// object until the next attempt, which comes within the stack's
// retryInterval (at most a minute), and that attempt takes a while.
const falloutGrace = 90 * time.Second

// fallout reports whether a Ready=False condition is what the last fault
// left: it turned False before the fault ended, and Flux has not yet had
// its retry since.
func (r *runner) fallout(ready *metav1.Condition) bool {
	r.mu.Lock()
	end := r.faultEnd
	r.mu.Unlock()
	return !end.IsZero() && !ready.LastTransitionTime.After(end) && time.Since(end) < falloutGrace
}

// serverClient is a client of workload server s, made once (and again
// after the server's API server restarted).
func (r *runner) serverClient(s int) (client.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.servers == nil {
		r.servers = map[int]client.Client{}
	}
	if c, ok := r.servers[s]; ok {
		return c, nil
	}
	c, err := client.New(r.e.Servers[s].Config, client.Options{})
	if err != nil {
		return nil, err
	}
	r.servers[s] = c
	return c, nil
}

func (r *runner) forgetServerClient(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.servers, s)
}

// fluxKinds are the Flux kinds the manager writes on the management
// cluster.
var fluxKinds = []schema.GroupVersionKind{
	sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind),
	sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind),
	kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
	helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
}

// checkOwnership checks invariant d once a step has converged: the
// user's objects are all there, every Flux object has an owner that
// exists, and no tenant cluster has a stack object it should not. It
// returns the number of Flux objects.
func (r *runner) checkOwnership(ctx context.Context) int {
	c := r.e.Client
	// The user's objects, by kind.
	for gvk, objs := range r.f.owned.byKind() {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			continue
		}
		uids := map[types.UID]string{}
		for _, o := range list.Items {
			uids[o.UID] = o.Namespace + "/" + o.Name
		}
		r.rec.check(UserObjectsKept, len(objs))
		for _, o := range objs {
			if _, ok := uids[o.uid]; !ok {
				r.rec.violate(UserObjectsKept, o.String(), "the user's object is gone (or was replaced: UID %s no longer exists)", o.uid)
			}
		}
	}
	// The Flux objects and their owners.
	owners := map[types.UID]bool{}
	exists := func(ns string, ref metav1.OwnerReference) bool {
		if known, ok := owners[ref.UID]; ok {
			return known
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		key := client.ObjectKey{Namespace: ns, Name: ref.Name}
		err := c.Get(ctx, key, u)
		if err != nil && ns != "" {
			// A cluster-scoped owner (a Tenant).
			err = c.Get(ctx, client.ObjectKey{Name: ref.Name}, u)
		}
		owners[ref.UID] = err == nil && u.GetUID() == ref.UID && u.GetDeletionTimestamp() == nil
		return owners[ref.UID]
	}
	total := 0
	stacks := map[string][]string{}
	for _, gvk := range fluxKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return total
		}
		total += len(list.Items)
		r.rec.check(NoOrphanFluxObjects, len(list.Items))
		for i := range list.Items {
			o := &list.Items[i]
			ref := gvk.Kind + " " + o.Namespace + "/" + o.Name
			if o.DeletionTimestamp != nil {
				continue
			}
			owner := metav1.GetControllerOf(o)
			switch {
			case owner == nil:
				r.rec.violate(NoOrphanFluxObjects, ref, "has no controller owner")
			case !exists(o.Namespace, *owner):
				r.rec.violate(NoOrphanFluxObjects, ref, "its owner %s %s (UID %s) no longer exists", owner.Kind, owner.Name, owner.UID)
			}
			l := o.Labels
			if cl := l[tenancyv1alpha1.ClusterNameLabel]; cl != "" && (gvk.Kind == kustomizev1.KustomizationKind || gvk.Kind == helmv2.HelmReleaseKind) {
				key := gvk.Kind + " of Tenant " + l[tenancyv1alpha1.TenantLabel] + " for cluster " + l[tenancyv1alpha1.ClusterNamespaceLabel] + "/" + cl
				stacks[key] = append(stacks[key], o.Name)
			}
		}
	}
	for key, names := range stacks {
		r.rec.check(NoDuplicates, 1)
		if len(names) > 2 || (len(names) == 2 && !strings.HasPrefix(key, kustomizev1.KustomizationKind)) {
			r.rec.violate(NoDuplicates, key, "%d objects: %s", len(names), strings.Join(names, ", "))
		}
	}
	r.checkContractObjects(ctx)
	return total + r.f.keptObjects()
}

// checkStorm counts the manager's writes from a step's fault end until
// now and, for a step with chaos, holds them to invariant c's bound.
func (r *runner) checkStorm(ctx context.Context, st Step, from time.Time) int {
	ws := r.writesBetween(from, time.Now())
	if st.Chaos == NoChaos {
		return len(ws)
	}
	objects := r.countObjects(ctx)
	bound := 2*objects + 50
	r.rec.check(NoWriteStorm, 1)
	if len(ws) > bound {
		counts, keys := plane.CountWrites(ws)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, counts[k]))
		}
		minutes := max(time.Since(from).Minutes(), 1.0/60)
		r.rec.violate(NoWriteStorm, "the manager", "%d writes (%.0f a minute) after %s recovered, more than 2 × %d objects + 50: %s",
			len(ws), float64(len(ws))/minutes, st.Chaos, objects, strings.Join(parts, ", "))
	}
	return len(ws)
}

// countObjects is the number of Flux objects on the management cluster
// plus the objects the manager keeps besides (fleet.keptObjects).
func (r *runner) countObjects(ctx context.Context) int {
	n := r.f.keptObjects()
	for _, gvk := range fluxKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.e.Client.List(ctx, list); err == nil {
			n += len(list.Items)
		}
	}
	return n
}
