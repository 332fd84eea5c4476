// Command fleet-bench measures one Capwright manager holding a fleet of
// Tenants on the local plane: -tenants Tenants, each with a kustomize
// stack on -clusters Cluster API Clusters of its own (1,000 × 20 = 20,000
// per-cluster Flux objects by default). `make bench` runs it at full
// size; -tenants 50 is a quick run.
//
// The Clusters are Cluster API v1beta2 Clusters with their control plane
// initialized and a kubeconfig Secret, as RegisterWorkloadCluster writes
// them, created in bulk by a pool of workers (one per tenant namespace,
// <tenant>-clusters); every kubeconfig points at one workload API server.
// kustomize-controller is stopped before the first Tenant exists, so what
// is measured is Capwright's cost and not Flux's applying 20,000 stacks:
// the plane's 2 shared cores cannot run that, and the public
// flux-benchmark figures stand for Flux's share. source-controller runs:
// each Tenant's OCIRepository is resolved, as a rollout pinning revisions
// needs.
//
// The manager runs without an artifact server (--artifact-storage-path
// empty), so each cluster's stack Kustomization is written at once and the
// stack carries its own Namespace manifest: with one, Capwright first
// writes a Kustomization creating the target namespace on each cluster
// and the stack's only once kustomize-controller has made that Ready,
// which with kustomize-controller stopped never happens.
//
// It prints, in this order:
//   - cold convergence: from the first Tenant created until every
//     tenant's status describes its generation with all its clusters and
//     every (tenant, cluster) pair has its Kustomization; the manager's
//     writes and peak RSS (VmHWM) then;
//   - one tenant's new tag, and one tenant's changed substitutions (which
//     every per-cluster Kustomization carries): the time until its
//     objects carry it, and the manager's writes to its own objects and
//     to everything else (target 0) meanwhile, from the API server's
//     audit log;
//   - a full resync with nothing changed (the manager restarted, so that
//     every Tenant is reconciled once more from an empty cache): its
//     writes (target 0), time and peak RSS;
//   - reconcile time per tenant from the manager's
//     controller_runtime_reconcile_time_seconds{controller="Tenant"};
//   - with -rollout, the same for Tenants with spec.rollout: a source per
//     revision in use and a ControllerRevision per revision kept, besides
//     the source that follows the tag;
//   - with -profile, the manager's heap and a CPU profile of the cold
//     convergence (its /debug/pprof on the metrics endpoint), and
//     `go tool pprof -top` of each.
//
// With -apply it measures Flux's share too (apply.go): kustomize-controller
// runs, sharded with -shards, the clusters spread over -workload-servers
// API servers, and each phase is timed until every stack is applied.
//
// A program rather than a Go benchmark: it is one long measurement with
// several phases and a report, not an operation repeated b.N times.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// Targets of issue 32.
const (
	targetRSSMiB = 500
	targetChange = 30 * time.Second
)

type options struct {
	tenants, clusters, workers int
	resync                     string
	concurrent                 int
	profile                    bool
	timeout                    time.Duration
	keep                       bool
	rollout                    bool
	// The -apply mode (apply.go).
	apply           bool
	shards          string
	workloadServers int
	kustomizeArgs   string
	phaseTimeout    time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.tenants, "tenants", envInt("FLEET_TENANTS", 1000), "Tenants (env FLEET_TENANTS).")
	flag.IntVar(&o.clusters, "clusters", envInt("FLEET_CLUSTERS", 20), "Clusters per tenant (env FLEET_CLUSTERS).")
	flag.IntVar(&o.workers, "workers", 32, "Workers creating Clusters, Secrets and Tenants.")
	flag.StringVar(&o.resync, "resync-interval", "", "The manager's --resync-interval (default: the manager's).")
	flag.IntVar(&o.concurrent, "concurrent", 0, "The manager's --concurrent (default: the manager's).")
	flag.BoolVar(&o.profile, "profile", false, "Save the manager's heap and a CPU profile of the cold convergence, and print their top entries.")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Minute, "Give up after this long.")
	flag.BoolVar(&o.rollout, "rollout", false, "Give every Tenant spec.rollout (one wave, maxUpdating 100%: with kustomize-controller stopped no cluster turns healthy, so only a rollout that moves a whole wave at once gets anywhere): the cost of pinned sources and kept revisions.")
	flag.BoolVar(&o.keep, "keep", false, "Leave the plane running at the end until interrupted (for a look with kubectl).")
	flag.BoolVar(&o.apply, "apply", false, "Let Flux apply: kustomize-controller runs (sharded with -shards), the clusters spread over -workload-servers API servers, and each phase is timed until every stack is applied (apply.go); -tenants and -clusters default to 50 and 20.")
	flag.StringVar(&o.shards, "shards", "1", "With -apply: kustomize-controller shards, a comma-separated list run one after the other on a fresh plane each (e.g. 1,2,4); 1 is no sharding.")
	flag.IntVar(&o.workloadServers, "workload-servers", 4, "With -apply: workload API servers the clusters are spread over.")
	flag.StringVar(&o.kustomizeArgs, "kustomize-args", "", "With -apply: further arguments of every kustomize-controller instance, space-separated (e.g. \"--concurrent=16\" or \"--kube-api-qps=200 --kube-api-burst=1200\"; default: Flux's defaults, --concurrent=4 --kube-api-qps=50 --kube-api-burst=300).")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 30*time.Minute, "With -apply: give up on a phase after this long.")
	flag.Parse()
	if o.apply {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["tenants"] {
			o.tenants = envInt("FLEET_APPLY_TENANTS", 50)
		}
		if !set["clusters"] {
			o.clusters = envInt("FLEET_APPLY_CLUSTERS", 20)
		}
	}
	if o.tenants < 2 || o.clusters < 1 {
		fmt.Fprintln(os.Stderr, "fleet-bench: -tenants must be at least 2 and -clusters at least 1")
		os.Exit(2)
	}
	measure := run
	if o.apply {
		measure = runApply
	}
	if err := measure(o); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-bench:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s fleet-bench: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// bench holds the plane and what the phases share.
type bench struct {
	o      options
	p      *plane.Plane
	c      client.Client
	mgr    *plane.Capwright
	art    map[string]framework.PushedArtifact
	report *bytes.Buffer
}

func tenantName(i int) string { return fmt.Sprintf("fleet-%04d", i) }

// clusterNamespace holds tenant's Clusters; it is not the tenant's
// management namespace (tenant-<name>), which it could not list.
func clusterNamespace(tenant string) string { return tenant + "-clusters" }

func clusterName(j int) string { return fmt.Sprintf("c%02d", j) }

func (b *bench) printf(format string, args ...any) {
	fmt.Fprintf(b.report, format, args...)
	fmt.Printf(format, args...)
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	p, err := plane.Start(ctx, plane.Options{AuditLog: true, Log: os.Stderr})
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop() }()
	b := &bench{o: o, p: p, art: map[string]framework.PushedArtifact{}, report: &bytes.Buffer{}}
	cfg := rest.CopyConfig(p.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	if b.c, err = newClient(cfg); err != nil {
		return err
	}
	if err := p.BuildCapwright(ctx); err != nil {
		return err
	}
	// Capwright's share alone: see the package comment.
	if err := p.Kill("kustomize-controller"); err != nil {
		return err
	}
	logf("kustomize-controller stopped; source-controller runs")
	w, err := p.StartWorkloadCluster(ctx, "fleet-workload", plane.WorkloadOptions{})
	if err != nil {
		return err
	}
	for _, tag := range []string{"fleet-a", "fleet-b"} {
		files := map[string][]byte{
			// The stack carries its namespace: see the package comment.
			"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
			"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-settings\ndata:\n  release: " + tag + "\n  greeting: ${GREETING:=hello}\n"),
		}
		if b.art[tag], err = framework.PushFiles(ctx, p.Registry.Host, "tenants/fleet", tag, files, nil); err != nil {
			return err
		}
	}
	if err := b.registerClusters(ctx, []*plane.WorkloadCluster{w}); err != nil {
		return err
	}
	// No artifact server (the last --artifact-storage-path wins over the
	// plane's): see the package comment.
	args := []string{"--artifact-storage-path="}
	if o.resync != "" {
		args = append(args, "--resync-interval="+o.resync)
	}
	if o.concurrent > 0 {
		args = append(args, "--concurrent="+strconv.Itoa(o.concurrent))
	}
	if b.mgr, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: args}); err != nil {
		return err
	}
	mode := "no rollout"
	if o.rollout {
		mode = "spec.rollout (one wave, maxUpdating 100%)"
	}
	b.printf("fleet-bench: %d tenants × %d clusters = %d per-cluster Flux objects, %s; kustomize-controller stopped (Capwright's cost only); manager %s; run dir %s\n",
		o.tenants, o.clusters, o.tenants*o.clusters, mode, "--resync-interval="+cmpOr(o.resync, "default")+" --concurrent="+cmpOr(nonZero(o.concurrent), "default"), p.RunDir)

	if err := b.cold(ctx); err != nil {
		return err
	}
	if err := b.change(ctx, "tag", func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Stack.Kustomize.Tag = "fleet-b" }, tagCarried); err != nil {
		return err
	}
	if err := b.change(ctx, "substitution", func(tn *tenancyv1alpha1.Tenant) {
		tn.Spec.Stack.Kustomize.Substitute = map[string]string{"GREETING": "changed"}
	}, substitutionCarried); err != nil {
		return err
	}
	if err := b.resync(ctx); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.RunDir, "fleet-bench.txt"), b.report.Bytes(), 0o644); err != nil {
		return err
	}
	if o.keep {
		logf("plane kept: KUBECONFIG=%s; interrupt to stop", p.Kubeconfig)
		<-ctx.Done()
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func nonZero(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// registerClusters writes what RegisterWorkloadCluster writes for every
// tenant's clusters: the first through it (it installs the Cluster CRD),
// the rest directly, side by side. The k-th (tenant, cluster) pair's
// kubeconfig points at ws[k mod len(ws)].
func (b *bench) registerClusters(ctx context.Context, ws []*plane.WorkloadCluster) error {
	start := time.Now()
	first := tenantName(0)
	if _, err := b.p.RegisterWorkloadCluster(ctx, ws[0], clusterNamespace(first), clusterName(0)); err != nil {
		return err
	}
	if err := framework.Parallel(ctx, b.o.tenants, b.o.workers/4+1, func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace(tenantName(i))}}
		if err := b.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}); err != nil {
		return fmt.Errorf("creating the cluster namespaces: %w", err)
	}
	total := b.o.tenants * b.o.clusters
	var done atomic.Int64
	err := framework.Parallel(ctx, total, b.o.workers, func(ctx context.Context, k int) error {
		ns, name := clusterNamespace(tenantName(k/b.o.clusters)), clusterName(k%b.o.clusters)
		if k == 0 {
			return nil
		}
		cluster := plane.NewTestCluster(ns, name)
		if err := b.c.Create(ctx, cluster); err != nil {
			return fmt.Errorf("creating Cluster %s/%s: %w", ns, name, err)
		}
		if err := unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "controlPlaneInitialized"); err != nil {
			return err
		}
		if err := b.c.Status().Update(ctx, cluster); err != nil {
			return fmt.Errorf("initializing Cluster %s/%s: %w", ns, name, err)
		}
		if err := b.c.Create(ctx, plane.KubeconfigSecret(ns, name, ws[k%len(ws)].Kubeconfig)); err != nil {
			return fmt.Errorf("writing the kubeconfig Secret of Cluster %s/%s: %w", ns, name, err)
		}
		if n := done.Add(1); n%2000 == 0 {
			logf("%d/%d clusters registered", n, total)
		}
		return nil
	})
	if err != nil {
		return err
	}
	logf("%d Clusters and kubeconfig Secrets registered in %s", total, time.Since(start).Round(time.Second))
	return nil
}

func (b *bench) tenant(i int) *tenancyv1alpha1.Tenant {
	name := tenantName(i)
	art := b.art["fleet-a"]
	var rollout *tenancyv1alpha1.RolloutSpec
	if b.o.rollout {
		all := intstr.FromString("100%")
		rollout = &tenancyv1alpha1.RolloutSpec{MaxUpdating: &all}
	}
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}, Namespaces: []string{clusterNamespace(name)}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true},
				Tag:                 art.Tag,
			}},
			Rollout: rollout,
		},
	}
}

// cold creates every Tenant and waits until the fleet has converged.
func (b *bench) cold(ctx context.Context) error {
	before, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	var stopCPU func() error
	if b.o.profile {
		stopCPU = b.cpuProfile(ctx, "cold")
	}
	cpu0 := cpuSeconds(b.mgr.PID())
	start := time.Now()
	if err := framework.Parallel(ctx, b.o.tenants, b.o.workers, func(ctx context.Context, i int) error {
		return b.c.Create(ctx, b.tenant(i))
	}); err != nil {
		return fmt.Errorf("creating Tenants: %w", err)
	}
	created := time.Since(start)
	logf("%d Tenants created in %s", b.o.tenants, created.Round(time.Millisecond))
	var peakRSS uint64
	for {
		if rss, err := procStatus(b.mgr.PID(), "VmRSS"); err == nil {
			peakRSS = max(peakRSS, rss)
		}
		done, pairs, msg, err := b.converged(ctx)
		if err != nil {
			return err
		}
		if done {
			break
		}
		logf("cold: %s; %d/%d (tenant, cluster) pairs written; manager RSS %d MiB", msg, pairs, b.o.tenants*b.o.clusters, peakRSS>>20)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cold convergence: %w (%s)", ctx.Err(), msg)
		case <-time.After(5 * time.Second):
		}
	}
	took := time.Since(start)
	cpu := cpuSeconds(b.mgr.PID()) - cpu0
	// Then until the manager is idle: source-controller's status of every
	// tenant's OCIRepository (fetched once it exists) is news to its
	// Tenant, and a change made before that is done waits behind it.
	var after metricsSample
	for {
		if after, err = b.scrape(ctx); err != nil {
			return err
		}
		if after.depth == 0 {
			break
		}
		if time.Since(start) > 45*time.Minute {
			return fmt.Errorf("the manager's Tenant queue holds %d after %s", int(after.depth), time.Since(start).Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	idle := time.Since(start)
	idleCPU := cpuSeconds(b.mgr.PID()) - cpu0
	if stopCPU != nil {
		if err := stopCPU(); err != nil {
			return err
		}
	}
	hwm, err := procStatus(b.mgr.PID(), "VmHWM")
	if err != nil {
		return err
	}
	writes, err := b.p.Writes(plane.CapwrightUser, start)
	if err != nil {
		return err
	}
	b.printf("\ncold convergence: %s (Tenants created in %s; manager CPU %.0fs); manager idle (Tenant queue empty) after %s (CPU %.0fs); manager writes %d (%s); manager peak RSS (VmHWM) %d MiB (target ≤ %d MiB: %s)\n",
		took.Round(time.Second), created.Round(time.Second), cpu, idle.Round(time.Second), idleCPU, len(writes), summarizeWrites(writes), hwm>>20, targetRSSMiB, pass(hwm>>20 <= targetRSSMiB))
	b.printf("  Tenant reconciles: %s\n", reconcileStats(before, after))
	if b.o.profile {
		if err := b.heapProfile(ctx, "cold"); err != nil {
			return err
		}
	}
	return nil
}

func pass(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// converged says whether every tenant's status describes its generation
// with all its clusters, and every (tenant, cluster) has a Kustomization.
func (b *bench) converged(ctx context.Context) (bool, int, string, error) {
	var tenants tenancyv1alpha1.TenantList
	if err := b.c.List(ctx, &tenants); err != nil {
		return false, 0, "", err
	}
	caught := 0
	for _, tn := range tenants.Items {
		if tn.Status.ObservedGeneration == tn.Generation && int(tn.Status.TotalClusters) == b.o.clusters && tn.Status.PendingClusters == 0 {
			caught++
		}
	}
	pairs := map[string]bool{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind("KustomizationList"))
	cont := ""
	for {
		if err := b.c.List(ctx, list, client.HasLabels{tenancyv1alpha1.TenantLabel}, client.Limit(5000), client.Continue(cont)); err != nil {
			return false, 0, "", err
		}
		for _, m := range list.Items {
			l := m.Labels
			if c := l[tenancyv1alpha1.ClusterNameLabel]; c != "" {
				pairs[l[tenancyv1alpha1.TenantLabel]+"/"+l[tenancyv1alpha1.ClusterNamespaceLabel]+"/"+c] = true
			}
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	msg := fmt.Sprintf("%d/%d tenants caught up", caught, b.o.tenants)
	return caught == b.o.tenants && len(pairs) == b.o.tenants*b.o.clusters, len(pairs), msg, nil
}

// carried tells whether the tenant's Flux objects carry a change.
type carried func(objs []unstructured.Unstructured, b *bench) (bool, int)

// tagCarried: no object of the tenant names the old tag or its digest,
// and one names the new tag or its digest.
func tagCarried(objs []unstructured.Unstructured, b *bench) (bool, int) {
	old, next := b.art["fleet-a"], b.art["fleet-b"]
	n := 0
	for _, o := range objs {
		spec, _ := json(o.Object["spec"])
		if strings.Contains(spec, `"`+old.Tag+`"`) || strings.Contains(spec, old.Digest) {
			return false, n
		}
		if strings.Contains(spec, `"`+next.Tag+`"`) || strings.Contains(spec, next.Digest) {
			n++
		}
	}
	return n > 0, n
}

// substitutionCarried: every per-cluster stack Kustomization substitutes
// the new value.
func substitutionCarried(objs []unstructured.Unstructured, b *bench) (bool, int) {
	n, stacks := 0, 0
	for _, o := range objs {
		if o.GetKind() != kustomizev1.KustomizationKind || o.GetLabels()[tenancyv1alpha1.ClusterNameLabel] == "" {
			continue
		}
		if kind, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "kind"); kind != sourcev1.OCIRepositoryKind {
			continue // the Kustomization creating the target namespace
		}
		stacks++
		if v, _, _ := unstructured.NestedString(o.Object, "spec", "postBuild", "substitute", "GREETING"); v == "changed" {
			n++
		}
	}
	return stacks > 0 && n == b.o.clusters, n
}

func json(v any) (string, error) {
	u := unstructured.Unstructured{Object: map[string]any{"v": v}}
	out, err := u.MarshalJSON()
	return string(out), err
}

var fluxKinds = []schema.GroupVersionKind{
	sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind + "List"),
	sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind + "List"),
	kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind + "List"),
}

// tenantObjects are the Flux objects labelled for tenant, in its cluster
// namespace.
func (b *bench) tenantObjects(ctx context.Context, tenant string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, gvk := range fluxKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := b.c.List(ctx, list, client.InNamespace(clusterNamespace(tenant)), client.MatchingLabels{tenancyv1alpha1.TenantLabel: tenant}); err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			o.SetKind(strings.TrimSuffix(gvk.Kind, "List"))
			out = append(out, o)
		}
	}
	return out, nil
}

// change changes one tenant (the middle one) and waits until its objects
// carry the change, then counts the manager's writes meanwhile.
func (b *bench) change(ctx context.Context, what string, edit func(*tenancyv1alpha1.Tenant), done carried) error {
	name := tenantName(b.o.tenants / 2)
	before, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tn := &tenancyv1alpha1.Tenant{}
		if err := b.c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
			return err
		}
		edit(tn)
		return b.c.Update(ctx, tn)
	}); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	var n int
	for {
		objs, err := b.tenantObjects(ctx, name)
		if err != nil {
			return err
		}
		var ok bool
		if ok, n = done(objs, b); ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s change of Tenant %s: its objects do not carry it after 5m (%d do)", what, name, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen := time.Since(start)
	// Let whatever else the change sets off land before counting.
	time.Sleep(15 * time.Second)
	writes, err := b.p.Writes(plane.CapwrightUser, start)
	if err != nil {
		return err
	}
	after, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	var own, objectsElsewhere, statusElsewhere, events []plane.Write
	var last time.Time
	for _, w := range writes {
		switch {
		case w.Resource == "events":
			events = append(events, w)
		case w.Namespace == clusterNamespace(name) || w.Namespace == tenancyv1alpha1.DefaultNamespacePrefix+name || (w.Resource == "tenants" && w.Name == name):
			own = append(own, w)
			if w.Resource != "tenants" && w.Time.After(last) {
				last = w.Time
			}
		case w.Resource == "tenants":
			statusElsewhere = append(statusElsewhere, w)
		default:
			objectsElsewhere = append(objectsElsewhere, w)
		}
	}
	lastWrite := "none"
	if !last.IsZero() {
		lastWrite = last.Sub(start).Round(time.Millisecond).String()
	}
	b.printf("\n%s change of Tenant %s: its objects carry it after %s (seen by polling; last object write after %s; target ≤ %s: %s); %d objects carry it\n",
		what, name, seen.Round(time.Millisecond), lastWrite, targetChange, pass(seen <= targetChange), n)
	b.printf("  manager writes in the %s after: %d to the tenant (%s); %d to other tenants' objects (target 0: %s)%s; %d to other Tenants' status; %d events\n",
		(seen + 15*time.Second).Round(time.Second), len(own), summarizeWrites(own), len(objectsElsewhere), pass(len(objectsElsewhere) == 0), examples(objectsElsewhere), len(statusElsewhere), len(events))
	b.printf("  Tenant reconciles: %s\n", reconcileStats(before, after))
	return nil
}

// resync restarts the manager, so that every Tenant is reconciled once
// more with nothing changed (as a resync does, and from an empty cache),
// and counts its writes.
func (b *bench) resync(ctx context.Context) error {
	start := time.Now()
	if err := b.mgr.Restart(ctx); err != nil {
		return err
	}
	ready := time.Since(start)
	var peakRSS uint64
	var before metricsSample
	for {
		if rss, err := procStatus(b.mgr.PID(), "VmRSS"); err == nil {
			peakRSS = max(peakRSS, rss)
		}
		m, err := b.scrape(ctx)
		if err != nil {
			return err
		}
		before = m
		if int(m.reconciles) >= b.o.tenants && m.depth == 0 {
			break
		}
		if time.Since(start) > 30*time.Minute {
			return fmt.Errorf("the restarted manager reconciled %d of %d Tenants in 30m", int(m.reconciles), b.o.tenants)
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)
	cpu := cpuSeconds(b.mgr.PID())
	time.Sleep(15 * time.Second)
	writes, err := b.p.Writes(plane.CapwrightUser, start)
	if err != nil {
		return err
	}
	var objects []plane.Write
	for _, w := range writes {
		if w.Resource != "events" && w.Resource != "leases" {
			objects = append(objects, w)
		}
	}
	hwm, err := procStatus(b.mgr.PID(), "VmHWM")
	if err != nil {
		return err
	}
	b.printf("\nfull resync with nothing changed (manager restarted, ready after %s): every Tenant reconciled after %s (manager CPU %.0fs); writes %d (target 0: %s)%s; %d in all (%s); peak RSS (VmHWM) %d MiB (target ≤ %d MiB: %s)\n",
		ready.Round(time.Millisecond), took.Round(time.Second), cpu, len(objects), pass(len(objects) == 0), examples(objects), len(writes), summarizeWrites(writes), hwm>>20, targetRSSMiB, pass(hwm>>20 <= targetRSSMiB))
	b.printf("  Tenant reconciles: %s\n", reconcileStats(metricsSample{buckets: map[float64]float64{}}, before))
	if b.o.profile {
		return b.heapProfile(ctx, "resync")
	}
	return nil
}

func summarizeWrites(ws []plane.Write) string {
	counts, keys := plane.CountWrites(ws)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func examples(ws []plane.Write) string {
	if len(ws) == 0 {
		return ""
	}
	var out []string
	for _, w := range ws[:min(3, len(ws))] {
		out = append(out, w.String())
	}
	return " e.g. " + strings.Join(out, "; ")
}

// procStatus reads a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func procStatus(pid int, field string) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// cpuSeconds is the CPU time (user and system) process pid has used.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the whole line, in clock ticks (100 a
	// second on Linux).
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return (user + sys) / 100
}

// metricsSample is the Tenant controller's reconcile time histogram and
// work queue depth.
type metricsSample struct {
	reconciles, sum float64
	buckets         map[float64]float64
	depth           float64
}

func (b *bench) scrape(ctx context.Context) (metricsSample, error) {
	s := metricsSample{buckets: map[float64]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.mgr.MetricsURL(), nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case name == "workqueue_depth" && strings.Contains(labels, `name="Tenant"`):
			s.depth += v // one series per priority
		case !strings.Contains(labels, `controller="Tenant"`):
		case name == "controller_runtime_reconcile_time_seconds_count":
			s.reconciles = v
		case name == "controller_runtime_reconcile_time_seconds_sum":
			s.sum = v
		case name == "controller_runtime_reconcile_time_seconds_bucket":
			_, le, _ := strings.Cut(labels, `le="`)
			le, _, _ = strings.Cut(le, `"`)
			bound, err := strconv.ParseFloat(le, 64)
			if le == "+Inf" {
				bound, err = math.Inf(1), nil
			}
			if err == nil {
				s.buckets[bound] = v
			}
		}
	}
	return s, sc.Err()
}

// reconcileStats is the number, mean and bucket-estimated median and p99
// of the Tenant reconciles between two samples.
func reconcileStats(before, after metricsSample) string {
	n := after.reconciles - before.reconciles
	if n <= 0 {
		return "none"
	}
	bounds := slices.Sorted(func(yield func(float64) bool) {
		for k := range after.buckets {
			if !yield(k) {
				return
			}
		}
	})
	quantile := func(q float64) string {
		for _, bound := range bounds {
			if after.buckets[bound]-before.buckets[bound] >= q*n {
				if math.IsInf(bound, 1) {
					return "> largest bucket"
				}
				return fmt.Sprintf("≤ %gs", bound)
			}
		}
		return "?"
	}
	return fmt.Sprintf("%d, mean %.3fs, median %s, p99 %s", int(n), (after.sum-before.sum)/n, quantile(0.5), quantile(0.99))
}

// pprofURL is the manager's /debug/pprof endpoint (on its metrics
// server).
func (b *bench) pprofURL(path string) string {
	return strings.TrimSuffix(b.mgr.MetricsURL(), "/metrics") + "/debug/pprof/" + path
}

func (b *bench) fetchProfile(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.pprofURL(path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", b.pprofURL(path), resp.Status, msg)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// heapProfile saves the manager's heap and prints its top entries.
func (b *bench) heapProfile(ctx context.Context, phase string) error {
	file := filepath.Join(b.p.RunDir, "manager-heap-"+phase+".pprof")
	if err := b.fetchProfile(ctx, "heap?gc=1", file); err != nil {
		return err
	}
	return b.top(ctx, file, "-sample_index=inuse_space")
}

// cpuProfile profiles the manager's CPU in 60-second pieces from now until
// the returned stop is called, and then prints the top entries of each.
func (b *bench) cpuProfile(ctx context.Context, phase string) func() error {
	stop := make(chan struct{})
	var files []string
	var errs []error
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			file := filepath.Join(b.p.RunDir, fmt.Sprintf("manager-cpu-%s-%d.pprof", phase, i))
			if err := b.fetchProfile(ctx, "profile?seconds=60", file); err != nil {
				errs = append(errs, err)
				return
			}
			files = append(files, file)
		}
	})
	return func() error {
		close(stop)
		wg.Wait()
		if err := errors.Join(errs...); err != nil || len(files) == 0 {
			return err
		}
		return b.top(ctx, strings.Join(files, " "), "")
	}
}

// top prints `go tool pprof -top` of profiles (space-separated), its first
// lines.
func (b *bench) top(ctx context.Context, files, flag string) error {
	args := []string{"tool", "pprof", "-top", "-nodecount=15"}
	if flag != "" {
		args = append(args, flag)
	}
	args = append(args, filepath.Join(b.p.RepoRoot(), "bin", "capwright-manager"))
	args = append(args, strings.Fields(files)...)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %w\n%s", err, out)
	}
	b.printf("  pprof %s:\n", strings.Join(strings.Fields(files), ", "))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		b.printf("    %s\n", line)
	}
	return nil
}
