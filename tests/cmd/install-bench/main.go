// Command install-bench installs the real Cluster API core, kubeadm
// bootstrap and kubeadm control plane providers side by side on the local
// plane through Capwright (from OCI artifacts, and "capwright-release" from
// their GitHub release URLs through the plane's stand-in for github.com,
// compared with each other against a 1.1× target), bare Flux (a
// hand-written OCIRepository and Kustomization per provider), bare Flux
// whose Kustomizations carry what
// Capwright's carry for clusterctl's contract ("flux+contract": Flux's own
// share of Capwright's time), Capwright's own rendered Flux objects applied
// with no manager running ("flux+capwright-objects": what the manager's
// presence costs, apart from its objects) and cluster-api-operator
// v0.29.0 — and on request the same objects with an idle manager beside
// them ("flux+capwright-objects+idle-manager": what a watching controller
// costs, apart from Capwright's work) — and prints the medians and ratios, with kustomize-controller's
// own reconcile times and every plane process's CPU during the upgrade.
// `make bench` runs it; -profile keeps CPU profiles of the upgrade, and
// a CPU profile and execution trace of the manager's first install.
//
// Every run of every system gets a fresh plane and the same procedure:
// publish v1.13.6 and v1.14.2 of the three providers to the plane's
// registry (or, for capwright-release, the stand-in for github.com), start the system's controller and let it settle, apply the
// three objects at once and stop the clock when all
// three are Ready (first install), count the API writes of the install
// from the audit log, ask for a reconcile of everything and count the
// writes of that, read the manager's RSS, then move all three to v1.14.2
// and stop the clock when all three are Ready at it (upgrade). Runs
// alternate between the systems, so drift of the machine hits all three.
//
// Ready means, for Capwright, the provider's Ready condition (Flux applied
// the checked revision and its health checks passed); for bare Flux, the
// Kustomization's Ready at the revision (wait: true); for
// cluster-api-operator, its Ready condition at the version (it mirrors the
// provider Deployment's Available).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/benchstat"
	"github.com/capwright/capwright/tests/plane"
)

const (
	fromVersion = "v1.13.6"
	toVersion   = "v1.14.2"
	// benchUser applies the objects, so its writes are not counted as a
	// system's.
	benchUser = "install-bench"
)

type providerSpec struct {
	Type, Name, Namespace string
}

var providers = []providerSpec{
	{v1alpha1.CoreProviderType, "cluster-api", "capi-system"},
	{v1alpha1.BootstrapProviderType, "kubeadm", "capi-kubeadm-bootstrap-system"},
	{v1alpha1.ControlPlaneProviderType, "kubeadm", "capi-kubeadm-control-plane-system"},
}

// crdHold is how long the API server holds the first object of a CRD
// established just before (see run).
const crdHold = 2 * time.Second

// settle is how long a system's controller runs before the clock starts
// (-settle; 0 applies the objects as soon as the manager answers its
// readiness probe, which times its start-up too).
var settle = 5 * time.Second

// profileDir, when set, receives the manager's CPU profile of each
// upgrade.
var profileDir string

// showWrites prints what the system's own controller wrote during each
// install, by verb and resource (-writes).
var showWrites bool

// result is one run of one system.
type result struct {
	Install, Upgrade   time.Duration
	PerProvider        map[string]time.Duration // install, by provider type
	InstallWrites      map[string]int           // by user
	ReconcileWrites    map[string]int           // by user
	RSS                int64                    // bytes, of the system's own manager
	CPUInstall, CPUUp  float64                  // CPU seconds of the system's own manager
	Timeline, UpTimeln map[string]map[string]float64
	// UpFlux is kustomize-controller's own account of the upgrade, by
	// provider type: how many reconciles of the provider's Kustomization
	// finished between the upgrade's start and its Ready, and how long the
	// last one (the one that applied the new revision) took.
	UpFlux map[string]fluxRuns
	// UpHealth is how long kustomize-controller's health check of the
	// new revision took, by provider type, from its Healthy condition
	// ("Health check passed in …"). It polls every 5 s (fixed in
	// kustomize-controller), so a check whose first poll comes before the
	// rollout finished takes 5 s more.
	UpHealth map[string]float64
	// UpCPU is the CPU seconds each plane process (by command name) and
	// the system's own manager spent during the upgrade.
	UpCPU map[string]float64
}

// system is one way of installing the providers.
type system interface {
	Name() string
	// User is the user its own controller writes as ("" for none).
	User() string
	Start(ctx context.Context, p *plane.Plane) (pid int, err error)
	Publish(ctx context.Context, p *plane.Plane, version string) error
	Apply(ctx context.Context, c client.Client, version string) error
	Ready(ctx context.Context, c client.Client, pt providerSpec, version string) (bool, string)
	// Watched is the object Ready reads for pt (its kind, namespace and
	// name).
	Watched(pt providerSpec) client.Object
	RequestReconcile(ctx context.Context, c client.Client) error
}

func main() {
	runs := flag.Int("runs", 3, "runs per system, alternating")
	flag.BoolVar(&showWatchEvents, "watch-events", false, "print the watch events (count and bytes, by resource) the API server sent during each upgrade")
	flag.BoolVar(&showWrites, "writes", false, "print what the system's own controller wrote during each install, by verb and resource")
	flag.DurationVar(&settle, "settle", settle, "how long each system's controller runs before the objects are applied; 0 applies them as soon as it is ready, right after its start")
	flag.StringVar(&profileDir, "profile", "", "directory to write Capwright's manager CPU profile of each upgrade (manager-<time>.pprof) and its CPU profile and execution trace of each first install (install-<system>-<time>.pprof, .trace) to")
	only := flag.String("systems", "capwright,capwright-release,flux,flux+contract,flux+capwright-objects,cluster-api-operator", "systems to run, comma-separated; flux+capwright-objects+idle-manager (Capwright's objects with an idle manager beside them) is also known; -systems capwright,capwright-release compares only the release and OCI paths")
	flag.Parse()
	if err := run(*runs, strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "install-bench:", err)
		os.Exit(1)
	}
}

func run(runs int, names []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	all := map[string]system{"capwright": &capwright{}, "capwright-release": &capwright{releases: true}, "flux": &bareFlux{}, "flux+contract": &bareFlux{contract: true}, "cluster-api-operator": &operator{}, "flux+capwright-objects": &capwrightObjects{},
		"flux+capwright-objects+idle-manager": &idleManager{capwrightObjects: &capwrightObjects{}}}
	var systems []system
	for _, n := range names {
		s, ok := all[strings.TrimSpace(n)]
		if !ok {
			return fmt.Errorf("unknown system %q; choose among capwright, capwright-release, flux, flux+contract, flux+capwright-objects, flux+capwright-objects+idle-manager, cluster-api-operator", n)
		}
		systems = append(systems, s)
	}
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return err
	}
	manager := filepath.Join(bin, "capwright-manager")
	if err := buildManager(ctx, manager); err != nil {
		return err
	}
	results := map[string][]result{}
	for i := range runs {
		for j := range systems {
			s := systems[(i+j)%len(systems)] // alternate which system goes first
			fmt.Printf("run %d/%d: %s …\n", i+1, runs, s.Name())
			r, err := runOnce(ctx, s)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.Name(), i+1, err)
			}
			fmt.Printf("  install %.2fs, upgrade %.2fs\n", r.Install.Seconds(), r.Upgrade.Seconds())
			results[s.Name()] = append(results[s.Name()], r)
		}
	}
	report(systems, results)
	return nil
}

func runOnce(ctx context.Context, s system) (result, error) {
	res := result{PerProvider: map[string]time.Duration{}}
	p, err := plane.Start(ctx, plane.Options{AuditLog: true})
	if err != nil {
		return res, err
	}
	defer func() { _ = p.Stop() }()
	// What a system starts beside the plane for one run (the stand-in for
	// github.com) stops with it.
	if c, ok := s.(io.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	cfg, err := p.UserConfig(benchUser, "system:masters")
	if err != nil {
		return res, err
	}
	// Applying what the manager applies draws the API server's warning
	// about Flux's finalizer name, which the manager drops too.
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	// No client-side limit (client-go's default is 5 requests a second):
	// the bench's reads would queue behind it and move its times.
	cfg.QPS = -1
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return res, err
		}
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return res, err
	}
	// A system's CRDs are installed before anything else, as a chart
	// installs them ahead of the controller: the API server holds the
	// first object of a CRD established less than two seconds before for
	// the rest of them (the create returns two seconds later), which on a
	// real cluster passes while the controller's pod starts, and in a
	// GitOps repository while the install's Kustomization waits for the
	// controller to be Available. The system starts once that has passed,
	// so that -settle 0 times the controller's start-up, not the API
	// server's.
	var established time.Time
	if pre, ok := s.(interface {
		InstallCRDs(context.Context, *plane.Plane) error
	}); ok {
		if err := pre.InstallCRDs(ctx, p); err != nil {
			return res, err
		}
		established = time.Now()
	}
	for _, v := range []string{fromVersion, toVersion} {
		if err := s.Publish(ctx, p, v); err != nil {
			return res, fmt.Errorf("publishing %s: %w", v, err)
		}
	}
	for _, pt := range providers {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pt.Namespace}}); err != nil {
			return res, err
		}
	}
	if !established.IsZero() {
		time.Sleep(time.Until(established.Add(crdHold)))
	}
	pid, err := s.Start(ctx, p)
	if err != nil {
		return res, err
	}
	// On a management cluster the controllers have long been running when
	// providers are applied: their start-up (informers syncing, leader
	// election) is not install time. Flux's controllers started with the
	// plane; the system's own get as long to settle.
	time.Sleep(settle)

	cpu0 := benchstat.CPUSeconds(pid)
	installProfiled := profileInstall(ctx, s)
	start := time.Now()
	if err := s.Apply(ctx, c, fromVersion); err != nil {
		return res, err
	}
	if res.PerProvider, err = waitReady(ctx, c, s, fromVersion, start); err != nil {
		return res, err
	}
	if err := installProfiled(); err != nil {
		return res, fmt.Errorf("profiling the install: %w", err)
	}
	for _, d := range res.PerProvider {
		res.Install = max(res.Install, d)
	}
	// Writes that follow a provider's Ready belong to its install too.
	time.Sleep(3 * time.Second)
	if res.InstallWrites, err = writesByUser(p, s, start); err != nil {
		return res, err
	}
	if showWrites && s.User() != "" {
		if err := printWrites(p, s.Name(), s.User(), start); err != nil {
			return res, err
		}
	}
	if pid > 0 {
		res.RSS = rss(pid)
		res.CPUInstall = benchstat.CPUSeconds(pid) - cpu0
	}

	since := time.Now()
	if err := s.RequestReconcile(ctx, c); err != nil {
		return res, err
	}
	time.Sleep(10 * time.Second)
	if res.ReconcileWrites, err = writesByUser(p, s, since); err != nil {
		return res, err
	}

	cpu0 = benchstat.CPUSeconds(pid)
	plane0 := benchstat.ProcessCPU(append(p.PIDs(), pid))
	profiled := make(chan error, 2)
	profiles := 0
	if profileDir != "" {
		stamp := time.Now().Format("150405")
		profiles++
		go func() {
			profiled <- apiServerProfile(ctx, cfg, 8*time.Second, filepath.Join(profileDir, fmt.Sprintf("kube-apiserver-%s-%s.pprof", s.Name(), stamp)))
		}()
		if cw, ok := s.(*capwright); ok {
			profiles++
			go func() {
				profiled <- cw.profile(ctx, 8*time.Second, filepath.Join(profileDir, fmt.Sprintf("manager-%s.pprof", stamp)))
			}()
		}
	}
	var watched watchTotals
	if showWatchEvents {
		if watched, err = scrapeWatchEvents(ctx, cfg); err != nil {
			return res, err
		}
	}
	start = time.Now()
	if err := s.Apply(ctx, c, toVersion); err != nil {
		return res, err
	}
	up, err := waitReady(ctx, c, s, toVersion, start)
	if err != nil {
		return res, err
	}
	if showWatchEvents {
		after, err := scrapeWatchEvents(ctx, cfg)
		if err != nil {
			return res, err
		}
		printWatchEvents(s.Name(), watched, after)
	}
	res.CPUUp = benchstat.CPUSeconds(pid) - cpu0
	res.UpCPU = benchstat.ProcessCPU(append(p.PIDs(), pid))
	for name, v := range plane0 {
		res.UpCPU[name] -= v
	}
	for _, d := range up {
		res.Upgrade = max(res.Upgrade, d)
	}
	for range profiles {
		if err := <-profiled; err != nil {
			return res, fmt.Errorf("profiling: %w", err)
		}
	}
	res.UpFlux = kustomizeRuns(p.LogPath("kustomize-controller"), start, start.Add(res.Upgrade))
	res.UpHealth = healthChecks(ctx, c)
	if _, ok := s.(*capwright); ok {
		res.Timeline, res.UpTimeln = timelines(p.LogPath("capwright-manager"))
	}
	return res, nil
}

// waitReady waits until every provider is Ready at version and returns
// each one's time since start. It watches the object each provider's
// Ready reads and asks Ready again on each of its changes, so a time is
// when the change arrived, not the next poll's (a client polling three
// objects every 50 ms at client-go's default limit of 5 requests a second
// saw each only every 0.2–0.6 s), and the plane serves one watch event
// per change, not a GET per object every poll.
func waitReady(ctx context.Context, c client.WithWatch, s system, version string, start time.Time) (map[string]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// changed says that one of the objects changed since Ready last read
	// them.
	changed := make(chan struct{}, 1)
	for _, pt := range providers {
		list, opts, err := watchOf(c, s.Watched(pt))
		if err != nil {
			return nil, err
		}
		go watchChanges(ctx, c, list, opts, changed)
	}
	ready := map[string]time.Duration{}
	deadline := time.NewTimer(5 * time.Minute)
	defer deadline.Stop()
	// A watch the API server closed is opened again; the slow tick only
	// covers the moment in between.
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	last := map[string]string{}
	for {
		for _, pt := range providers {
			if _, done := ready[pt.Type]; done {
				continue
			}
			ok, msg := s.Ready(ctx, c, pt, version)
			if ok {
				ready[pt.Type] = time.Since(start)
			}
			last[pt.Type] = msg
		}
		if len(ready) == len(providers) {
			return ready, nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline.C:
			return nil, fmt.Errorf("not all providers Ready at %s after 5m: %v", version, last)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// watchOf is a watch of obj alone: its kind's list and its name.
func watchOf(c client.Client, obj client.Object) (client.ObjectList, []client.ListOption, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, nil, err
	}
	gvk.Kind += "List"
	var list client.ObjectList
	if o, err := c.Scheme().New(gvk); err == nil {
		list = o.(client.ObjectList)
	} else {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(gvk)
		list = u
	}
	return list, []client.ListOption{client.InNamespace(obj.GetNamespace()), client.MatchingFields{"metadata.name": obj.GetName()}}, nil
}

// watchChanges signals changed (without waiting) on every event of the
// watch, which it opens again when the API server ends it, until ctx
// ends.
func watchChanges(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, changed chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for range w.ResultChan() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		w.Stop()
	}
}

// writesByUser counts, from the audit log, the writes since since of the
// system's own controller and of the admin user (the Flux controllers and
// certsim), leaving out the benchmark's own.
func writesByUser(p *plane.Plane, s system, since time.Time) (map[string]int, error) {
	out := map[string]int{}
	users := []string{plane.AdminUser}
	if s.User() != "" {
		users = append(users, s.User())
	}
	for _, u := range users {
		w, err := p.Writes(u, since)
		if err != nil {
			return nil, err
		}
		out[u] = len(w)
	}
	return out, nil
}

// printWrites prints the writes of user since since, counted by verb,
// resource and subresource, most first.
func printWrites(p *plane.Plane, system, user string, since time.Time) error {
	writes, err := p.Writes(user, since)
	if err != nil {
		return err
	}
	counts, keys := plane.CountWrites(writes)
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	fmt.Fprintf(os.Stderr, "  %s's writes during the install (%d):", system, len(writes))
	for _, k := range keys {
		fmt.Fprintf(os.Stderr, " %s ×%d;", k, counts[k])
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

// rss is a process's resident set size in bytes, 0 if unknown.
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// timelines reads the manager's "install timeline" log lines: seconds per
// step, by controller, for generation 1 (install) and 2 (upgrade).
func timelines(logPath string) (install, upgrade map[string]map[string]float64) {
	install, upgrade = map[string]map[string]float64{}, map[string]map[string]float64{}
	data, err := os.ReadFile(logPath)
	if err != nil {
		return install, upgrade
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "install timeline") {
			continue
		}
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		kind, _ := e["controller"].(string)
		gen, _ := e["generation"].(float64)
		steps := map[string]float64{}
		for _, st := range stepNames {
			if v, ok := e[st].(float64); ok {
				steps[st] = v
			}
		}
		switch gen {
		case 1:
			install[kind] = steps
		case 2:
			upgrade[kind] = steps
		}
	}
	return install, upgrade
}

// installWindow is how long the manager's CPU profile and execution
// trace of a first install last: the manager's own share of it (from the
// objects applied to the Flux objects written) is what they are for.
const installWindow = 3 * time.Second

// profileInstall starts recording, with -profile, the manager's CPU
// profile and execution trace of the first install
// (install-<system>-<time>.pprof and .trace), where a cold manager's
// first reconciles show; the returned func waits for both.
func profileInstall(ctx context.Context, s system) func() error {
	cw, ok := s.(*capwright)
	if profileDir == "" || !ok {
		return func() error { return nil }
	}
	stamp := time.Now().Format("150405")
	done := make(chan error, 2)
	go func() {
		done <- cw.profile(ctx, installWindow, filepath.Join(profileDir, fmt.Sprintf("install-%s-%s.pprof", s.Name(), stamp)))
	}()
	go func() {
		done <- cw.trace(ctx, installWindow, filepath.Join(profileDir, fmt.Sprintf("install-%s-%s.trace", s.Name(), stamp)))
	}()
	// Both have begun before the objects are applied.
	time.Sleep(100 * time.Millisecond)
	return func() error { return errors.Join(<-done, <-done) }
}

// apiServerProfile records the API server's CPU profile (its
// /debug/pprof, on by default) for the given time into path.
func apiServerProfile(ctx context.Context, cfg *rest.Config, d time.Duration, path string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	return saveProfile(ctx, hc, strings.TrimSuffix(cfg.Host, "/")+fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), path)
}

// saveProfile GETs a pprof profile into path.
func saveProfile(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(resp.Body, 64<<20))
	return errors.Join(err, f.Close())
}

// fluxRuns are the reconciles of one Kustomization in a window.
type fluxRuns struct {
	Count int
	Last  float64 // seconds
}

// kustomizeRuns reads kustomize-controller's "Reconciliation finished in"
// lines that fall in [from, to], by provider type (each provider has its
// own namespace).
func kustomizeRuns(logPath string, from, to time.Time) map[string]fluxRuns {
	out := map[string]fluxRuns{}
	data, err := os.ReadFile(logPath)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "Reconciliation finished in ") {
			continue
		}
		var e struct {
			TS        time.Time `json:"ts"`
			Msg       string    `json:"msg"`
			Namespace string    `json:"namespace"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.TS.Before(from) || e.TS.After(to.Add(time.Second)) {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(strings.TrimPrefix(e.Msg, "Reconciliation finished in "))[0], ","))
		if err != nil {
			continue
		}
		for _, pt := range providers {
			if pt.Namespace == e.Namespace {
				r := out[pt.Type]
				r.Count++
				r.Last = d.Seconds()
				out[pt.Type] = r
			}
		}
	}
	return out
}

// healthChecks reads, for each provider, how long the health check of its
// Kustomization's last revision took, from the Healthy condition
// kustomize-controller writes when it passes. A system that installs
// without Flux has none.
func healthChecks(ctx context.Context, c client.Client) map[string]float64 {
	out := map[string]float64{}
	for _, pt := range providers {
		var list kustomizev1.KustomizationList
		if err := c.List(ctx, &list, client.InNamespace(pt.Namespace)); err != nil {
			continue
		}
		for _, k := range list.Items {
			h := apimeta.FindStatusCondition(k.Status.Conditions, meta.HealthyCondition)
			if h == nil || !strings.HasPrefix(h.Message, "Health check passed in ") {
				continue
			}
			if d, err := time.ParseDuration(strings.TrimPrefix(h.Message, "Health check passed in ")); err == nil {
				out[pt.Type] = max(out[pt.Type], d.Seconds())
			}
		}
	}
	return out
}

// secondPoll is how long a health check takes at least when
// kustomize-controller's first poll found the rollout unfinished.
const secondPoll = 4.5

var stepNames = []string{"preflight", "written", "source", "applied", "healthy", "ready"}

func report(systems []system, results map[string][]result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nthree CAPI providers, CR applied → all Ready; medians over runs (each on a fresh plane)")
	fmt.Fprintln(w, "system\truns\tinstall s\tupgrade s\tcore s\tbootstrap s\tcontrol plane s\twrites/install (own, admin=Flux+certsim)\twrites/forced reconcile (own, admin)\tmanager RSS MiB\tmanager CPU s (install, upgrade)")
	base := map[string]float64{}
	for _, s := range systems {
		rs := results[s.Name()]
		inst := benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.Install.Seconds() }))
		up := benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.Upgrade.Seconds() }))
		per := func(t string) float64 {
			return benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.PerProvider[t].Seconds() }))
		}
		writes := func(m func(result) map[string]int, u string) float64 {
			return benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return float64(m(r)[u]) }))
		}
		own := "-"
		ownR := "-"
		if s.User() != "" {
			own = fmt.Sprintf("%.0f", writes(func(r result) map[string]int { return r.InstallWrites }, s.User()))
			ownR = fmt.Sprintf("%.0f", writes(func(r result) map[string]int { return r.ReconcileWrites }, s.User()))
		}
		mem := "-"
		if m := benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return float64(r.RSS) })); m > 0 {
			mem = fmt.Sprintf("%.0f", m/(1<<20))
		}
		cpu := "-"
		if s.User() != "" {
			cpu = fmt.Sprintf("%.2f, %.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.CPUInstall })), benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.CPUUp })))
		}
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s, %.0f\t%s, %.0f\t%s\t%s\n", s.Name(), len(rs), inst, up,
			per(v1alpha1.CoreProviderType), per(v1alpha1.BootstrapProviderType), per(v1alpha1.ControlPlaneProviderType),
			own, writes(func(r result) map[string]int { return r.InstallWrites }, plane.AdminUser),
			ownR, writes(func(r result) map[string]int { return r.ReconcileWrites }, plane.AdminUser), mem, cpu)
		base[s.Name()+"/install"], base[s.Name()+"/upgrade"] = inst, up
	}
	_ = w.Flush()
	if f := base["flux/install"]; f > 0 {
		fmt.Println("\nratios to bare Flux (install, upgrade):")
		for _, s := range systems {
			fmt.Printf("  %-22s %.2f×  %.2f×\n", s.Name(), base[s.Name()+"/install"]/f, base[s.Name()+"/upgrade"]/cmp.Or(base["flux/upgrade"], 1))
		}
	}
	// The machine drifts between rounds; a system's time over another's in
	// the same round cancels most of it.
	perRound := func(baseline, label string) {
		against := results[baseline]
		if len(against) == 0 {
			return
		}
		fmt.Printf("median of per-round ratios to %s (install, upgrade):\n", label)
		for _, s := range systems {
			rs := results[s.Name()]
			var inst, up []float64
			for i := range min(len(rs), len(against)) {
				inst = append(inst, rs[i].Install.Seconds()/against[i].Install.Seconds())
				up = append(up, rs[i].Upgrade.Seconds()/against[i].Upgrade.Seconds())
			}
			fmt.Printf("  %-22s %.2f×  %.2f×\n", s.Name(), benchstat.Median(inst), benchstat.Median(up))
		}
	}
	perRound("flux", "bare Flux")
	if o := base["cluster-api-operator/install"]; o > 0 {
		fmt.Println("ratios to cluster-api-operator (install, upgrade):")
		for _, s := range systems {
			fmt.Printf("  %-22s %.2f×  %.2f×\n", s.Name(), base[s.Name()+"/install"]/o, base[s.Name()+"/upgrade"]/cmp.Or(base["cluster-api-operator/upgrade"], 1))
		}
	}
	perRound("cluster-api-operator", "cluster-api-operator")
	fmt.Println("\nkustomize-controller during the upgrade, medians: reconciles of each provider's Kustomization finished, seconds the last one took, of which its health check;")
	fmt.Println("and the upgrades in which a health check took Flux's second poll (5 s later: the first came before the rollout finished)")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tcore\tbootstrap\tcontrol plane\tsecond polls")
	for _, s := range systems {
		rs := results[s.Name()]
		var cells []string
		for _, t := range []string{v1alpha1.CoreProviderType, v1alpha1.BootstrapProviderType, v1alpha1.ControlPlaneProviderType} {
			cells = append(cells, fmt.Sprintf("%.0f × %.2f s (health %.2f s)",
				benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return float64(r.UpFlux[t].Count) })),
				benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.UpFlux[t].Last })),
				benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.UpHealth[t] }))))
		}
		second := 0
		for _, r := range rs {
			for _, d := range r.UpHealth {
				if d >= secondPoll {
					second++
					break
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d of %d\n", s.Name(), strings.Join(cells, "\t"), second, len(rs))
	}
	_ = tw.Flush()

	fmt.Println("\nCPU seconds during the upgrade, medians (the plane has 2 cores; everything runs on them)")
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	procs := []string{"kube-apiserver", "etcd", "kustomize-contr", "source-controll", "capwright-manag", "cluster-api-ope"}
	fmt.Fprintf(tw, "system\tall\t%s\n", strings.Join(procs, "\t"))
	for _, s := range systems {
		rs := results[s.Name()]
		cells := []string{fmt.Sprintf("%.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 {
			var all float64
			for _, v := range r.UpCPU {
				all += v
			}
			return all
		})))}
		for _, name := range procs {
			cells = append(cells, fmt.Sprintf("%.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.UpCPU[name] }))))
		}
		fmt.Fprintf(tw, "%s\t%s\n", s.Name(), strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	releaseVsOCI(results)
	for _, name := range []string{"capwright", "capwright-release"} {
		rs := results[name]
		if len(rs) == 0 {
			continue
		}
		fmt.Printf("\n%s: the manager's own timeline, medians (seconds since the manager first saw the generation; Flux works from written to healthy);\n", name)
		fmt.Println("manager = its share of the path (seen to written, healthy to ready; from a release, written includes fetching its files), Flux = written to healthy:")
		for _, phase := range []struct {
			name string
			get  func(result) map[string]map[string]float64
		}{{"install", func(r result) map[string]map[string]float64 { return r.Timeline }}, {"upgrade", func(r result) map[string]map[string]float64 { return r.UpTimeln }}} {
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\t%s\tmanager\tFlux\n", phase.name, strings.Join(stepNames, "\t"))
			for _, ctrl := range []string{"CoreProvider", "BootstrapProvider", "ControlPlaneProvider"} {
				var cells []string
				for _, st := range stepNames {
					cells = append(cells, fmt.Sprintf("%.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return phase.get(r)[ctrl][st] }))))
				}
				manager := benchstat.Median(benchstat.Collect(rs, func(r result) float64 {
					t := phase.get(r)[ctrl]
					return t["written"] + t["ready"] - t["healthy"]
				}))
				flux := benchstat.Median(benchstat.Collect(rs, func(r result) float64 {
					t := phase.get(r)[ctrl]
					return t["healthy"] - t["written"]
				}))
				cells = append(cells, fmt.Sprintf("%.2f", manager), fmt.Sprintf("%.2f", flux))
				fmt.Fprintf(tw, "  %s\t%s\n", ctrl, strings.Join(cells, "\t"))
			}
			_ = tw.Flush()
		}
	}
}

// requestAnnotation asks Flux (and Capwright) for a reconcile, as `flux
// reconcile` does.
func requestAnnotation(ctx context.Context, c client.Client, obj client.Object) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
		obj.SetAnnotations(a)
		return c.Update(ctx, obj)
	})
}

// conditionTrue tells whether a condition is True for the generation.
func conditionTrue(conds []metav1.Condition, t string, generation int64) (bool, string) {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil {
		return false, "no " + t + " condition"
	}
	return c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation, fmt.Sprintf("%s=%s %s: %s", t, c.Status, c.Reason, c.Message)
}

// releaseVsOCI compares the first install (and the upgrade, also a first
// fetch of its version) from release URLs with the same from OCI
// artifacts: medians, spread (min–max) and ratios, the ratio of medians
// and the median of per-round ratios (runs alternate, so a round's two
// runs saw the same machine). The target is within 1.1×.
func releaseVsOCI(results map[string][]result) {
	oci, rel := results["capwright"], results["capwright-release"]
	if len(oci) == 0 || len(rel) == 0 {
		return
	}
	fmt.Println("\nCapwright from GitHub release URLs (the plane's stand-in for github.com, GitHub's redirect) vs from OCI artifacts (the plane's registry), same three providers:")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system	runs	install s: median (min–max)	upgrade s: median (min–max)")
	spread := func(rs []result, f func(result) float64) string {
		v := benchstat.Collect(rs, f)
		return fmt.Sprintf("%.2f (%.2f–%.2f)", benchstat.Median(v), slices.Min(v), slices.Max(v))
	}
	install := func(r result) float64 { return r.Install.Seconds() }
	upgrade := func(r result) float64 { return r.Upgrade.Seconds() }
	for _, x := range []struct {
		name string
		rs   []result
	}{{"capwright (OCI)", oci}, {"capwright-release", rel}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", x.name, len(x.rs), spread(x.rs, install), spread(x.rs, upgrade))
	}
	_ = tw.Flush()
	var perInstall, perUpgrade []float64
	for i := range min(len(oci), len(rel)) {
		perInstall = append(perInstall, rel[i].Install.Seconds()/oci[i].Install.Seconds())
		perUpgrade = append(perUpgrade, rel[i].Upgrade.Seconds()/oci[i].Upgrade.Seconds())
	}
	verdict := func(r float64) string {
		if r <= 1.1 {
			return "within 1.1×"
		}
		return "OVER 1.1×"
	}
	ri := benchstat.Median(benchstat.Collect(rel, install)) / benchstat.Median(benchstat.Collect(oci, install))
	ru := benchstat.Median(benchstat.Collect(rel, upgrade)) / benchstat.Median(benchstat.Collect(oci, upgrade))
	fmt.Printf("release / OCI, ratio of medians: install %.2f× (%s), upgrade %.2f× (%s)\n", ri, verdict(ri), ru, verdict(ru))
	fmt.Printf("release / OCI, per round: install %.2f× median (%.2f–%.2f), upgrade %.2f× median (%.2f–%.2f)\n",
		benchstat.Median(perInstall), slices.Min(perInstall), slices.Max(perInstall), benchstat.Median(perUpgrade), slices.Min(perUpgrade), slices.Max(perUpgrade))
}
