package main

// The -apply mode: the fleet with Flux applying it. The default mode stops
// kustomize-controller and measures Capwright's share alone; this one
// lets kustomize-controller run, sharded as --flux-sharding labels the
// objects, and times every phase until each stack Kustomization is Ready
// at the new revision (status.lastAppliedRevision), with the two shares
// side by side:
//
//   - Capwright's: from the change made (the Tenants created, annotated or
//     edited) to the manager's last write of a Flux object for it, from
//     the API server's audit log;
//   - Flux's: from that write to the last stack Kustomization seen Ready
//     at the new revision, from a watch of the Kustomizations.
//
// The clusters' kubeconfigs point at -workload-servers real API servers
// (the k-th (tenant, cluster) pair at server k mod N), so each stack's
// objects are applied there. A tenant's clusters share those servers:
// with 20 clusters on 4, five Kustomizations apply the same two objects
// on each server, and each apply rewrites kustomize-controller's owner
// labels on them, which 20 separate clusters would not: Flux's share is,
// if anything, overstated. As in the default mode the manager runs
// without an artifact server and the stack carries its own Namespace,
// so each cluster has one Kustomization (the stack's), written at once.
//
// Phases, each on the same plane, in this order:
//   - cold: every Tenant created → every stack applied;
//   - every tenant: a new artifact pushed under the tag every Tenant
//     follows, and every Tenant annotated with reconcile.fluxcd.io/requestedAt
//     (the documented way to have Flux look now rather than at the next
//     interval; the manager passes the request on to the tenant's source
//     and Kustomizations) → every stack applied at the new artifact;
//   - one tenant: its stack's tag bumped to another artifact → its
//     clusters applied (it comes last, so that the push before reaches
//     every tenant).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// fluxBenchmark is flux-benchmark's published Flux v2.9.0 figure for
// 1,000 Kustomizations (github.com/fluxcd/flux-benchmark, RESULTS.md): on
// a 16-core GitHub runner, kustomize-controller with 2 CPUs and
// --concurrent=20, applying to its own cluster.
const (
	fluxBenchmarkKustomizations = 1000
	fluxBenchmarkDuration       = 4*time.Minute + 13*time.Second
	fluxBenchmarkMiB            = 223
)

// runApply runs the -apply mode once per shard count of -shards, each on
// a fresh plane, and prints a table per run.
func runApply(o options) error {
	// The watch's informers log through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var counts []int
	for f := range strings.SplitSeq(o.shards, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > render.MaxShards {
			return fmt.Errorf("-shards: %q is not a number of shards from 1 to %d", f, render.MaxShards)
		}
		counts = append(counts, n)
	}
	if o.workloadServers < 1 {
		return errors.New("-workload-servers must be at least 1")
	}
	var tables []string
	for _, n := range counts {
		table, err := applyRun(ctx, o, n)
		if err != nil {
			return fmt.Errorf("%d shard(s): %w", n, err)
		}
		tables = append(tables, table)
	}
	if len(tables) > 1 {
		fmt.Printf("\n%s\n", strings.Join(tables, "\n"))
	}
	return nil
}

// applyBench is one -apply run: a bench with Flux applying, its workload
// servers and the watch of the stacks.
type applyBench struct {
	*bench
	shards    int
	workloads []*plane.WorkloadCluster
	watch     *fleetWatch
	// kustomize are kustomize-controller's processes: one, or the main
	// instance and one per shard.
	kustomize []string
	rows      []phaseRow
}

func applyRun(parent context.Context, o options, shards int) (string, error) {
	ctx, cancel := context.WithTimeout(parent, o.timeout)
	defer cancel()
	load := loadAverage()
	opts := plane.Options{AuditLog: true, Log: os.Stderr, ExtraArgs: map[string][]string{}}
	kustomize := []string{"kustomize-controller"}
	if shards > 1 {
		for i := 1; i <= shards; i++ {
			opts.KustomizeShards = append(opts.KustomizeShards, render.ShardName(i))
			kustomize = append(kustomize, plane.KustomizeShard(render.ShardName(i)))
		}
	}
	if kargs := strings.Fields(o.kustomizeArgs); len(kargs) > 0 {
		opts.ExtraArgs["kustomize-controller"] = kargs
	}
	p, err := plane.Start(ctx, opts)
	if err != nil {
		return "", err
	}
	defer func() { _ = p.Stop() }()
	b := &applyBench{
		bench:     &bench{o: o, p: p, art: map[string]framework.PushedArtifact{}, report: &bytes.Buffer{}},
		shards:    shards,
		kustomize: kustomize,
	}
	cfg := rest.CopyConfig(p.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	if b.c, err = newClient(cfg); err != nil {
		return "", err
	}
	if err := p.BuildCapwright(ctx); err != nil {
		return "", err
	}
	for i := range o.workloadServers {
		w, err := p.StartWorkloadCluster(ctx, fmt.Sprintf("fleet-w%d", i), plane.WorkloadOptions{})
		if err != nil {
			return "", err
		}
		b.workloads = append(b.workloads, w)
	}
	for _, tag := range []string{"fleet-a", "fleet-b"} {
		if b.art[tag], err = pushStack(ctx, p, tag, tag); err != nil {
			return "", err
		}
	}
	if err := b.registerClusters(ctx, b.workloads); err != nil {
		return "", err
	}
	// No artifact server (the last --artifact-storage-path wins over the
	// plane's): see the package comment.
	args := []string{"--artifact-storage-path="}
	if shards > 1 {
		args = append(args, "--flux-sharding="+strconv.Itoa(shards))
	}
	if o.resync != "" {
		args = append(args, "--resync-interval="+o.resync)
	}
	if o.concurrent > 0 {
		args = append(args, "--concurrent="+strconv.Itoa(o.concurrent))
	}
	if b.mgr, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: args}); err != nil {
		return "", err
	}
	// After the manager, which installs the Tenant CRD.
	if b.watch, err = watchFleet(ctx, cfg); err != nil {
		return "", err
	}
	title := fmt.Sprintf("fleet-bench -apply: %d tenants × %d clusters = %d stack Kustomizations on %d workload API servers; kustomize-controller %s (%s); manager %s; load average before the run %s; run dir %s",
		o.tenants, o.clusters, o.tenants*o.clusters, o.workloadServers, shardingText(shards), cmpOr(o.kustomizeArgs, "Flux's defaults"), cmpOr(strings.Join(args[1:], " "), "at its defaults"), load, p.RunDir)
	b.printf("%s\n", title)

	if err := b.cold(ctx); err != nil {
		return "", err
	}
	if err := b.everyTenant(ctx); err != nil {
		return "", err
	}
	if err := b.oneTenant(ctx); err != nil {
		return "", err
	}
	table := b.table(title, loadAverage())
	b.printf("\n%s", table)
	if err := os.WriteFile(filepath.Join(p.RunDir, "fleet-bench-apply.txt"), b.report.Bytes(), 0o644); err != nil {
		return "", err
	}
	if o.keep {
		logf("plane kept: KUBECONFIG=%s; interrupt to stop", p.Kubeconfig)
		<-ctx.Done()
	}
	return table, nil
}

func shardingText(shards int) string {
	if shards == 1 {
		return "not sharded (one instance)"
	}
	return fmt.Sprintf("in %d shards (--flux-sharding=%d; the main instance besides)", shards, shards)
}

// pushStack pushes the stack's artifact under tag: its Namespace (see the
// package comment) and a ConfigMap saying release.
func pushStack(ctx context.Context, p *plane.Plane, tag, release string) (framework.PushedArtifact, error) {
	files := map[string][]byte{
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-settings\ndata:\n  release: " + release + "\n"),
	}
	return framework.PushFiles(ctx, p.Registry.Host, "tenants/fleet", tag, files, nil)
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// fleetWatch follows the stack Kustomizations and the Tenants, and
// remembers when each was first seen at each revision: a Kustomization
// Ready at its generation with that lastAppliedRevision, a Tenant with
// every cluster Ready at it.
type fleetWatch struct {
	mu      sync.Mutex
	stacks  map[string]*seenAt
	tenants map[string]*seenAt
}

// seenAt is one object's first sightings: per revision digest, and of
// the object itself.
type seenAt struct {
	tenant   string
	created  time.Time
	revision map[string]time.Time
}

func watchFleet(ctx context.Context, cfg *rest.Config) (*fleetWatch, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kustomizev1.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	tenantLabel, err := labels.NewRequirement(tenancyv1alpha1.TenantLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&kustomizev1.Kustomization{}: {Label: labels.NewSelector().Add(*tenantLabel)},
	}})
	if err != nil {
		return nil, err
	}
	w := &fleetWatch{stacks: map[string]*seenAt{}, tenants: map[string]*seenAt{}}
	handler := func(observe func(client.Object)) toolscache.ResourceEventHandlerFuncs {
		return toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { observe(obj.(client.Object)) },
			UpdateFunc: func(_, obj any) { observe(obj.(client.Object)) },
		}
	}
	for obj, observe := range map[client.Object]func(client.Object){
		&kustomizev1.Kustomization{}: w.observeStack,
		&tenancyv1alpha1.Tenant{}:    w.observeTenant,
	} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler(observe)); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("the watch of Kustomizations and Tenants did not sync")
	}
	return w, nil
}

// digestOf is the digest of a Flux revision (tag@sha256:…, or the digest).
func digestOf(revision string) string {
	if _, d, ok := strings.Cut(revision, "@"); ok {
		return d
	}
	return revision
}

func (w *fleetWatch) observeStack(obj client.Object) {
	ks := obj.(*kustomizev1.Kustomization)
	if ks.Labels[tenancyv1alpha1.ClusterNameLabel] == "" || ks.Spec.SourceRef.Kind != sourcev1.OCIRepositoryKind {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := ks.Namespace + "/" + ks.Name
	s := w.stacks[key]
	if s == nil {
		s = &seenAt{tenant: ks.Labels[tenancyv1alpha1.TenantLabel], created: now, revision: map[string]time.Time{}}
		w.stacks[key] = s
	}
	ready := apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition) && ks.Status.ObservedGeneration == ks.Generation
	if d := digestOf(ks.Status.LastAppliedRevision); ready && d != "" {
		if _, ok := s.revision[d]; !ok {
			s.revision[d] = now
		}
	}
}

func (w *fleetWatch) observeTenant(obj client.Object) {
	t := obj.(*tenancyv1alpha1.Tenant)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.tenants[t.Name]
	if s == nil {
		s = &seenAt{tenant: t.Name, created: now, revision: map[string]time.Time{}}
		w.tenants[t.Name] = s
	}
	if len(t.Status.Clusters) == 0 || t.Status.ObservedGeneration != t.Generation {
		return
	}
	d := digestOf(t.Status.Clusters[0].AppliedRevision)
	for _, c := range t.Status.Clusters {
		if c.Phase != tenancyv1alpha1.ClusterPhaseReady || digestOf(c.AppliedRevision) != d {
			return
		}
	}
	if _, ok := s.revision[d]; !ok && d != "" {
		s.revision[d] = now
	}
}

// progress is how many of set's objects (of tenants, nil for all) have
// been seen at digest, and when the last of them was.
func (w *fleetWatch) progress(set func(*fleetWatch) map[string]*seenAt, tenants map[string]bool, digest string) (n, of int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range set(w) {
		if tenants != nil && !tenants[s.tenant] {
			continue
		}
		of++
		if at, ok := s.revision[digest]; ok {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, of, last
}

func stacksOf(w *fleetWatch) map[string]*seenAt  { return w.stacks }
func tenantsOf(w *fleetWatch) map[string]*seenAt { return w.tenants }

// phaseRow is one phase's figures.
type phaseRow struct {
	name string
	// stacks is the number of stack Kustomizations the change reaches.
	stacks int
	// written: the manager's last write of a Flux object for the change,
	// after the change was made; applied: the last stack seen Ready at
	// the new revision; reported: the last Tenant whose status says so.
	written, applied, reported time.Duration
	fluxWrites                 int
	// statusWrites are the kustomizations/status (kustomize-controller)
	// and tenants/status (the manager) writes of the phase.
	statusWrites          map[string]int
	managerCPU, sourceCPU float64
	kustomizeCPU          []float64
	managerHWM            uint64
	kustomizeHWM          []uint64
}

// cpuSample is the CPU seconds of the manager, source-controller and each
// kustomize-controller instance at one moment.
type cpuSample struct {
	manager, source float64
	kustomize       []float64
	// requests are the manager's API requests so far by method
	// (rest_client_requests_total).
	requests map[string]float64
}

func (b *applyBench) sampleCPU() cpuSample {
	s := cpuSample{manager: cpuSeconds(b.mgr.PID()), source: b.componentCPU("source-controller"), requests: b.managerRequests()}
	for _, name := range b.kustomize {
		s.kustomize = append(s.kustomize, b.componentCPU(name))
	}
	return s
}

// managerRequests reads the manager's rest_client_requests_total by
// method; nil when the metrics do not answer.
func (b *applyBench) managerRequests() map[string]float64 {
	resp, err := http.Get(b.mgr.MetricsURL())
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "rest_client_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		_, method, _ := strings.Cut(labels, `method="`)
		method, _, _ = strings.Cut(method, `"`)
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[method] += v
		}
	}
	return out
}

func requestsBetween(before, after map[string]float64) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(after)) {
		if n := after[m] - before[m]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", m, n))
		}
	}
	return strings.Join(parts, ", ")
}

func (b *applyBench) componentCPU(name string) float64 {
	pid, err := b.p.PID(name)
	if err != nil {
		return 0
	}
	return cpuSeconds(pid)
}

func (b *applyBench) componentHWM(name string) uint64 {
	pid, err := b.p.PID(name)
	if err != nil {
		return 0
	}
	hwm, _ := procStatus(pid, "VmHWM")
	return hwm
}

// measure waits until every stack of tenants (nil: all) is applied at
// digest, then fills a row from the audit log, the watch and /proc.
func (b *applyBench) measure(ctx context.Context, name string, start time.Time, cpu0 cpuSample, tenants map[string]bool, digest string) error {
	want := b.o.clusters * b.o.tenants
	if tenants != nil {
		want = b.o.clusters * len(tenants)
	}
	deadline := time.Now().Add(b.o.phaseTimeout)
	lastLog := time.Now()
	var applied time.Time
	for {
		n, of, last := b.watch.progress(stacksOf, tenants, digest)
		if n == want && of == want {
			applied = last
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d stack Kustomizations applied at %s after %s", name, n, want, digest, b.o.phaseTimeout)
		}
		if time.Since(lastLog) >= 15*time.Second {
			rss, _ := procStatus(b.mgr.PID(), "VmRSS")
			logf("%s: %d/%d stacks applied at the new revision (%d seen) after %s; manager RSS %d MiB; load %s", name, n, want, of, time.Since(start).Round(time.Second), rss>>20, loadAverage())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	cpu := b.sampleCPU()
	// The Tenants' status follows Flux's: give it a while.
	var reported time.Time
	for wait := time.Now().Add(2 * time.Minute); ; {
		n, of, last := b.watch.progress(tenantsOf, tenants, digest)
		if n == of && of > 0 {
			reported = last
			break
		}
		if time.Now().After(wait) {
			logf("%s: %d of %d Tenants report every cluster Ready at the new revision after 2m more", name, n, of)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	all, err := b.p.Writes("", start)
	if err != nil {
		return err
	}
	var writes []plane.Write
	statusWrites := map[string]int{}
	for _, w := range all {
		if w.User == plane.CapwrightUser {
			writes = append(writes, w)
		}
		if w.Subresource == "status" && (w.Resource == "kustomizations" || w.Resource == "tenants") {
			statusWrites[w.Resource]++
		}
	}
	var fluxWrites []plane.Write
	var written time.Time
	for _, w := range writes {
		if w.Subresource != "" || (w.Resource != "kustomizations" && w.Resource != "ocirepositories") || w.Time.After(applied) {
			continue
		}
		fluxWrites = append(fluxWrites, w)
		if w.Time.After(written) {
			written = w.Time
		}
	}
	row := phaseRow{
		name: name, stacks: want, fluxWrites: len(fluxWrites), statusWrites: statusWrites,
		applied:    applied.Sub(start),
		managerCPU: cpu.manager - cpu0.manager, sourceCPU: cpu.source - cpu0.source,
	}
	if !written.IsZero() {
		row.written = written.Sub(start)
	}
	if !reported.IsZero() {
		row.reported = reported.Sub(start)
	}
	for i := range b.kustomize {
		row.kustomizeCPU = append(row.kustomizeCPU, cpu.kustomize[i]-cpu0.kustomize[i])
		row.kustomizeHWM = append(row.kustomizeHWM, b.componentHWM(b.kustomize[i]))
	}
	row.managerHWM, _ = procStatus(b.mgr.PID(), "VmHWM")
	b.rows = append(b.rows, row)
	b.printf("\n%s: %d stacks; Capwright wrote its %d Flux object writes by %s; every stack applied at %s (Flux: %s after the last write); every Tenant reported it at %s\n",
		name, want, row.fluxWrites, dur(row.written), dur(row.applied), dur(row.applied-row.written), dur(row.reported))
	b.printf("  manager writes: %s\n", summarizeWrites(writes))
	b.printf("  manager API requests (rest_client_requests_total): %s\n", requestsBetween(cpu0.requests, cpu.requests))
	b.printf("  status writes until now: kustomizations/status %d (kustomize-controller), tenants/status %d (the manager)\n", statusWrites["kustomizations"], statusWrites["tenants"])
	b.printf("  CPU seconds: manager %.1f, source-controller %.1f, kustomize-controller %s; manager VmHWM %d MiB\n",
		row.managerCPU, row.sourceCPU, b.perInstance(row.kustomizeCPU, func(v float64) string { return fmt.Sprintf("%.1f", v) }), row.managerHWM>>20)
	return nil
}

func dur(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// perInstance names each kustomize-controller instance's value: the
// main one and the shards.
func (b *applyBench) perInstance(vs []float64, format func(float64) string) string {
	if b.shards == 1 && len(vs) == 1 {
		return format(vs[0])
	}
	var parts []string
	for i, v := range vs {
		name := "main"
		if i > 0 {
			name = render.ShardName(i)
		}
		parts = append(parts, name+" "+format(v))
	}
	return strings.Join(parts, ", ")
}

// cold creates every Tenant and waits until every stack is applied.
func (b *applyBench) cold(ctx context.Context) error {
	cpu0 := b.sampleCPU()
	start := time.Now()
	if err := framework.Parallel(ctx, b.o.tenants, b.o.workers, func(ctx context.Context, i int) error {
		return b.c.Create(ctx, b.tenant(i))
	}); err != nil {
		return fmt.Errorf("creating Tenants: %w", err)
	}
	logf("%d Tenants created in %s", b.o.tenants, time.Since(start).Round(time.Millisecond))
	return b.measure(ctx, "cold: every Tenant created", start, cpu0, nil, b.art["fleet-a"].Digest)
}

// everyTenant pushes a new artifact under the tag every Tenant follows and
// asks every Tenant to reconcile now.
func (b *applyBench) everyTenant(ctx context.Context) error {
	b.settle(ctx)
	cpu0 := b.sampleCPU()
	start := time.Now()
	next, err := pushStack(ctx, b.p, "fleet-a", "fleet-a-2")
	if err != nil {
		return err
	}
	b.art["fleet-a"] = next
	token := start.UTC().Format(time.RFC3339Nano)
	if err := framework.Parallel(ctx, b.o.tenants, b.o.workers, func(ctx context.Context, i int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			tn := &tenancyv1alpha1.Tenant{}
			if err := b.c.Get(ctx, client.ObjectKey{Name: tenantName(i)}, tn); err != nil {
				return err
			}
			patch := client.MergeFrom(tn.DeepCopy())
			if tn.Annotations == nil {
				tn.Annotations = map[string]string{}
			}
			tn.Annotations[meta.ReconcileRequestAnnotation] = token
			return b.c.Patch(ctx, tn, patch)
		})
	}); err != nil {
		return fmt.Errorf("asking every Tenant to reconcile: %w", err)
	}
	logf("new artifact under fleet-a pushed and %d Tenants annotated in %s", b.o.tenants, time.Since(start).Round(time.Millisecond))
	return b.measure(ctx, "every tenant: new artifact under the tag all follow, Tenants annotated", start, cpu0, nil, next.Digest)
}

// oneTenant bumps one tenant's tag to another artifact.
func (b *applyBench) oneTenant(ctx context.Context) error {
	b.settle(ctx)
	name := tenantName(b.o.tenants / 2)
	cpu0 := b.sampleCPU()
	start := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tn := &tenancyv1alpha1.Tenant{}
		if err := b.c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
			return err
		}
		tn.Spec.Stack.Kustomize.Tag = "fleet-b"
		return b.c.Update(ctx, tn)
	}); err != nil {
		return err
	}
	return b.measure(ctx, "one tenant: its tag bumped", start, cpu0, map[string]bool{name: true}, b.art["fleet-b"].Digest)
}

// settle waits until the manager's Tenant queue is empty (up to a
// minute), so that one phase's status updates do not run into the next.
func (b *applyBench) settle(ctx context.Context) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if m, err := b.scrape(ctx); err == nil && m.depth == 0 {
			return
		}
		time.Sleep(time.Second)
	}
}

// table is the run's figures as a Markdown table, with the per
// Kustomization figures beside flux-benchmark's.
func (b *applyBench) table(title, loadAfter string) string {
	var t strings.Builder
	fmt.Fprintf(&t, "%s; load average after %s\n\n", title, loadAfter)
	fmt.Fprintf(&t, "| phase | stacks | Capwright: change → Flux objects written (writes) | Flux: written → every stack applied | total | per stack | every Tenant reports it | manager CPU | kustomize-controller CPU | source-controller CPU |\n")
	fmt.Fprintf(&t, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range b.rows {
		fmt.Fprintf(&t, "| %s | %d | %s (%d) | %s | %s | %s | %s | %.1f s | %s | %.1f s |\n",
			r.name, r.stacks, dur(r.written), r.fluxWrites, dur(r.applied-r.written), dur(r.applied),
			perStack(r.applied, r.stacks), dur(r.reported), r.managerCPU,
			b.perInstance(r.kustomizeCPU, func(v float64) string { return fmt.Sprintf("%.1f s", v) }), r.sourceCPU)
	}
	last := b.rows[len(b.rows)-1]
	hwm := make([]float64, len(last.kustomizeHWM))
	for i, v := range last.kustomizeHWM {
		hwm[i] = float64(v >> 20)
	}
	fmt.Fprintf(&t, "\nmanager peak RSS (VmHWM) %d MiB; kustomize-controller VmHWM %s\n", last.managerHWM>>20,
		b.perInstance(hwm, func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }))
	var status []string
	for _, r := range b.rows {
		status = append(status, fmt.Sprintf("%s %d / %d", strings.SplitN(r.name, ":", 2)[0], r.statusWrites["kustomizations"], r.statusWrites["tenants"]))
	}
	fmt.Fprintf(&t, "status writes per phase, kustomize-controller's kustomizations/status / the manager's tenants/status: %s\n", strings.Join(status, "; "))
	cold := b.rows[0]
	var kcpu float64
	for _, v := range cold.kustomizeCPU {
		kcpu += v
	}
	fmt.Fprintf(&t, "cold, per stack Kustomization: %s of wall time (Flux's share alone %s), %.0f ms of kustomize-controller CPU; flux-benchmark's Flux v2.9.0: %d Kustomizations in %s at %d MiB = %s per Kustomization, on a 16-core runner (kustomize-controller with 2 CPUs, --concurrent=20) against 2 shared cores here\n",
		perStack(cold.applied, cold.stacks), perStack(cold.applied-cold.written, cold.stacks), 1000*kcpu/float64(cold.stacks),
		fluxBenchmarkKustomizations, fluxBenchmarkDuration, fluxBenchmarkMiB, perStack(fluxBenchmarkDuration, fluxBenchmarkKustomizations))
	return t.String()
}

func perStack(d time.Duration, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f ms", float64(d.Milliseconds())/float64(n))
}
