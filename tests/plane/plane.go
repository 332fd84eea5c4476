package plane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/capwright/capwright/tests/bindir"
	"github.com/capwright/capwright/tests/plane/certsim"
)

// Options configure a management plane.
type Options struct {
	// BinDir holds the component binaries and assets `make tools` builds.
	// Default: $CAPWRIGHT_BIN_DIR, else bin/ at the repository root.
	BinDir string
	// RunDir receives every component's log, certificates and data.
	// Default: a new directory under <BinDir>/runs/.
	RunDir string
	// Nodes is the number of kwok nodes; default 1.
	Nodes int
	// APIServerPort fixes the API server port; 0 picks a free one.
	APIServerPort int
	// ExtraArgs adds command-line arguments per component name
	// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
	// source-controller, kustomize-controller, helm-controller).
	ExtraArgs map[string][]string
	// KustomizeShards run kustomize-controller sharded, as Flux's sharding
	// guide does (https://fluxcd.io/flux/installation/configuration/sharding/):
	// the main instance with --watch-label-selector=!sharding.fluxcd.io/key
	// reconciles the Kustomizations without a shard key, and for each
	// shard named here (e.g. shard1) an instance kustomize-controller-<shard>
	// (KustomizeShard; its own process, ports, temp directory and log)
	// with --watch-label-selector=sharding.fluxcd.io/key=<shard> those
	// labelled with it. The shards get ExtraArgs of kustomize-controller
	// and of their own name. source-controller and helm-controller stay
	// single, watching every object whatever its key.
	KustomizeShards []string
	// AuditLog makes the API server record every write request (who, what
	// verb, which object) so tests can count a component's writes; see
	// Plane.Writes.
	AuditLog bool
	// RunDeployments starts no Flux controllers with the plane: Flux comes
	// up as on a cluster, when `flux bootstrap` (or anything else) applies
	// its Deployments, and the plane runs their pods as local processes,
	// with what the Deployments say (feature gates included), as it does
	// for Capwright's manager from its released image and Cluster API's
	// core manager (pods.go). Flux's CRDs come with what bootstrap applies.
	RunDeployments bool
	// Log receives progress lines; default io.Discard.
	Log io.Writer
}

// Plane is a running local management plane: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok with simulated nodes, the
// Flux source, kustomize and helm controllers, an in-process OCI registry,
// the certsim stand-in for cert-manager and a webhook router that lets the
// API server reach webhooks served by local processes. StartHCPSim adds the
// hcpsim stand-in for a hosted-control-plane operator.
type Plane struct {
	// RunDir holds the logs (<component>.log), certificates and data.
	RunDir string
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config
	// Registry is the in-process OCI registry (plain HTTP on loopback).
	Registry *Registry
	// Git is the in-process Git server (smart HTTP and HTTPS with the
	// plane's CA, basic auth) holding the empty repository fleet.git.
	Git *GitServer
	// Webhooks routes API server webhook calls for a Service to a local
	// process.
	Webhooks *WebhookRouter

	opts    Options
	api     *apiServer
	tracker *tracker
	// runCtx ends on Stop; in-process servers started after Start (hcpsim)
	// run under it.
	runCtx    context.Context
	cancel    context.CancelFunc
	inProcess sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error

	// pods runs Deployments' pods (Options.RunDeployments).
	pods *podRunner

	// name is a second management cluster's name (StartManagementCluster);
	// empty for the first. Such a plane shares its Registry and Git with
	// the first, which owns them.
	name string
	// clusterStopped is set by StopCluster.
	clusterStopped sync.Once

	mu        sync.Mutex
	workloads []*WorkloadCluster
	// managements are the further management clusters started beside
	// this one (StartManagementCluster).
	managements []*Plane
	hcpsim      *hcpsimRun // set by StartHCPSim
}

// tracker remembers started processes so teardown reaches all of them.
type tracker struct {
	logDir string
	mu     sync.Mutex
	procs  []*process
}

func (t *tracker) add(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.procs = append(t.procs, p)
}

// stopAll stops processes in reverse start order.
func (t *tracker) stopAll() {
	t.mu.Lock()
	procs := append([]*process(nil), t.procs...)
	t.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
}

// find is the last process started under name.
func (t *tracker) find(name string) (*process, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for i := len(t.procs) - 1; i >= 0; i-- {
		if t.procs[i].name == name {
			return t.procs[i], nil
		}
		names = append(names, t.procs[i].name)
	}
	return nil, fmt.Errorf("the plane has no component %q; it has %s", name, strings.Join(names, ", "))
}

// kill SIGKILLs the last process started under name.
func (t *tracker) kill(name string) error {
	proc, err := t.find(name)
	if err != nil {
		return err
	}
	proc.kill()
	return nil
}

// restartNamed kills the last process started under name if it runs,
// and starts it again.
func (t *tracker) restartNamed(ctx context.Context, name string) error {
	proc, err := t.find(name)
	if err != nil {
		return err
	}
	proc.kill()
	_, err = t.restart(ctx, proc)
	return err
}

// restart starts the ended process p again and tracks the new one in its
// place.
func (t *tracker) restart(ctx context.Context, p *process) (*process, error) {
	next, err := p.restart(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.procs {
		if t.procs[i] == p {
			t.procs[i] = next
			return next, nil
		}
	}
	t.procs = append(t.procs, next)
	return next, nil
}

// PIDs returns the process ids of every component started so far.
func (t *tracker) pids() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var pids []int
	for _, p := range t.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

// Start brings up a plane and returns once every component is ready. On any
// failure it tears down what it started and returns an error naming the
// component, the cause and its log file.
func Start(ctx context.Context, opts Options) (*Plane, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p := &Plane{
		RunDir:  opts.RunDir,
		opts:    opts,
		tracker: &tracker{logDir: opts.RunDir},
		runCtx:  runCtx,
		cancel:  cancel,
	}
	if err := p.start(ctx, runCtx); err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("starting the local management plane (logs in %s): %w", opts.RunDir, err)
	}
	return p, nil
}

func (p *Plane) logf(format string, args ...any) {
	prefix := "plane: "
	if p.name != "" {
		prefix = "plane " + p.name + ": "
	}
	fmt.Fprintf(p.opts.Log, prefix+format+"\n", args...)
}

func (p *Plane) start(ctx, runCtx context.Context) error {
	start := time.Now()
	webhooks, err := newWebhookRouter(p.RunDir)
	if err != nil {
		return err
	}
	p.Webhooks = webhooks
	p.inProcess.Add(1)
	go func() {
		defer p.inProcess.Done()
		webhooks.serve(runCtx)
	}()

	p.api, err = startAPIServer(ctx, apiServerOptions{
		Dir:      p.RunDir,
		BinDir:   p.opts.BinDir,
		Port:     p.opts.APIServerPort,
		Extra:    p.opts.ExtraArgs,
		Egress:   webhooks.egressConfig,
		Tracker:  p.tracker,
		AuditLog: p.opts.AuditLog,
		Context:  p.name,
	})
	if err != nil {
		return err
	}
	p.Kubeconfig, p.Config = p.api.KubeconfigPath, p.api.Config
	p.logf("kube-apiserver ready at %s after %s", p.api.URL(), time.Since(start).Round(time.Millisecond))
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	webhooks.setClient(client)

	// The rest starts side by side; each is awaited below.
	kcm, err := p.startControllerManager()
	if err != nil {
		return err
	}
	scheduler, err := p.startScheduler()
	if err != nil {
		return err
	}
	kwok, err := p.startKwok()
	if err != nil {
		return err
	}
	if err := p.installCRDs(ctx); err != nil {
		return err
	}
	var flux []readyWait
	if !p.opts.RunDeployments {
		if flux, err = p.startFlux(ctx); err != nil {
			return err
		}
	}
	if p.name == "" {
		// A second management cluster uses the first's (Registry and
		// Git are set already).
		if p.Registry, err = startRegistry(RegistryOptions{}); err != nil {
			return err
		}
	}
	if p.opts.RunDeployments {
		if p.pods, err = p.startPodRunner(runCtx); err != nil {
			return err
		}
	}
	if p.name == "" {
		if err := p.startGit(&CA{ca: p.api.ca}); err != nil {
			return err
		}
	}
	p.startCertsim(runCtx)

	for _, wait := range append([]func(context.Context) error{kcm, scheduler, kwok}, flux...) {
		if err := wait(ctx); err != nil {
			return err
		}
	}
	p.logf("ready in %s (logs in %s)", time.Since(start).Round(time.Millisecond), p.RunDir)
	return nil
}

// startCertsim runs the cert-manager stand-in in this process; its log is
// certsim.log in the run directory.
func (p *Plane) startCertsim(ctx context.Context) {
	logFile, err := os.Create(filepath.Join(p.RunDir, "certsim.log"))
	if err != nil {
		logFile = nil
	}
	p.inProcess.Add(1)
	go func() {
		defer p.inProcess.Done()
		if logFile != nil {
			defer logFile.Close()
		}
		err := certsim.Run(ctx, p.Config, certsim.Options{Logf: func(format string, args ...any) {
			if logFile != nil {
				fmt.Fprintf(logFile, time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
			}
		}})
		if err != nil && logFile != nil {
			fmt.Fprintf(logFile, "certsim stopped: %v\n", err)
		}
	}()
}

// Stop tears everything down: the further management clusters, hcpsim
// and its control planes, workload clusters, processes (whole process
// groups), in-process servers. It is safe to call more than once.
func (p *Plane) Stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		p.mu.Lock()
		workloads, managements, hcpsim := p.workloads, p.managements, p.hcpsim
		p.mu.Unlock()
		for _, m := range managements {
			errs = append(errs, m.Stop())
		}
		if hcpsim != nil {
			// First: it stops the control planes it runs, and its open
			// watch would hold up the API server's shutdown.
			hcpsim.stop()
		}
		for _, w := range workloads {
			w.stop()
		}
		p.StopCluster()
		if p.name == "" && p.Registry != nil {
			errs = append(errs, p.Registry.Close())
		}
		if p.name == "" && p.Git != nil {
			errs = append(errs, p.Git.Close())
		}
		p.inProcess.Wait()
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// StopCluster tears down the management cluster itself, as a site tears
// down a management cluster it has moved its Clusters away from: its API
// server, etcd, controllers, the pods it runs and the in-process servers
// that work for it (hcpsim and its control planes included). What stands
// beside it stays: the registry, the Git server, the workload clusters
// and the other management clusters. Stop calls it; it is safe to call
// more than once.
func (p *Plane) StopCluster() {
	p.clusterStopped.Do(func() {
		p.mu.Lock()
		hcpsim := p.hcpsim
		p.mu.Unlock()
		if hcpsim != nil {
			// First: it stops the control planes it runs, and its open
			// watch would hold up the API server's shutdown.
			hcpsim.stop()
		}
		p.tracker.stopAll()
		p.cancel()
	})
}

// Kill SIGKILLs the component process named name (its log's name: etcd,
// kube-apiserver, kube-controller-manager, source-controller,
// kustomize-controller, helm-controller, capwright-manager…), as a crash
// or an OOM kill does. Restart brings it back.
func (p *Plane) Kill(name string) error { return p.tracker.kill(name) }

// Restart starts the component process named name again with the
// arguments it had, killing it first if it still runs, and returns once
// it passes the readiness check it was started with. Its state on disk
// (etcd's data, source-controller's storage) is what it left.
func (p *Plane) Restart(ctx context.Context, name string) error {
	return p.tracker.restartNamed(ctx, name)
}

// PIDs lists the process ids of every component process the plane started,
// workload clusters included; after Stop none of them is alive.
func (p *Plane) PIDs() []int {
	pids := p.tracker.pids()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.workloads {
		pids = append(pids, w.tracker.pids()...)
	}
	for _, m := range p.managements {
		pids = append(pids, m.PIDs()...)
	}
	return pids
}

// PID is the process id of the component process named name (as for
// Kill), for a benchmark reading its CPU time and memory from /proc.
func (p *Plane) PID(name string) (int, error) {
	proc, err := p.tracker.find(name)
	if err != nil {
		return 0, err
	}
	return proc.pid(), nil
}

// LogPath returns the log file of a component.
func (p *Plane) LogPath(component string) string {
	return filepath.Join(p.RunDir, component+".log")
}

func (o Options) withDefaults() (Options, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.BinDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	if o.RunDir == "" {
		suffix := make([]byte, 3)
		_, _ = rand.Read(suffix)
		o.RunDir = filepath.Join(o.BinDir, "runs", time.Now().Format("20060102-150405")+"-"+hex.EncodeToString(suffix))
	}
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return o, fmt.Errorf("creating run directory: %w", err)
	}
	return o, nil
}

// DefaultBinDir is $CAPWRIGHT_BIN_DIR, or bin/ in the repository root.
func DefaultBinDir() (string, error) { return bindir.Default() }
