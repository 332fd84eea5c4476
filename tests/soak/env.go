package soak

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// FluxShards are the kustomize-controller shards the plane runs besides
// its main instance, and the manager's --flux-sharding: the tenants'
// Kustomizations are spread over them, as Flux's sharding guide has it.
var FluxShards = []string{"shard1", "shard2"}

// EnvOptions size the plane and the fleet.
type EnvOptions struct {
	// BinDir and RunDir are the plane's (plane.Options).
	BinDir, RunDir string
	// Tenants are the Tenants the fleet starts with, each with Clusters
	// Cluster API Clusters of its own (default 4 × 3).
	Tenants, Clusters int
	// Contracts are the contract Clusters (contract.go): Clusters whose
	// control plane and infrastructure are Capwright's contract kinds
	// (default 4; negative: none).
	Contracts int
	// WorkloadServers are the workload API servers the fleet's Clusters
	// point at (default 2); one more, of its own, takes the Clusters and
	// Tenants churn adds, so that removing them prunes nothing another
	// Cluster applied to the same server.
	WorkloadServers int
	// Resync is the manager's --resync-interval (default 15s): short, so
	// that a run sees many resyncs, each of which must write nothing.
	Resync time.Duration
	// Log receives progress lines; default io.Discard.
	Log io.Writer
}

func (o EnvOptions) withDefaults() EnvOptions {
	if o.Tenants <= 0 {
		o.Tenants = 4
	}
	if o.Clusters <= 0 {
		o.Clusters = 3
	}
	if o.Contracts == 0 {
		o.Contracts = 4
	}
	if o.WorkloadServers <= 0 {
		o.WorkloadServers = 2
	}
	if o.Resync <= 0 {
		o.Resync = 15 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Env is a running plane with Capwright, its providers and the fleet.
type Env struct {
	Plane    *plane.Plane
	Manager  *plane.Capwright
	Releases *plane.ReleaseServer
	// Client knows Kubernetes', Flux's and Capwright's kinds.
	Client client.Client
	// CLI is bin/capwright built from the working tree.
	CLI string
	// Servers are the workload API servers: the fleet's first, the churn
	// server last.
	Servers []*plane.WorkloadCluster
	// CAPI is the real Cluster API core manager.
	CAPI *plane.CAPIManager
	// Service is the manager's artifact Service, in front of its
	// replicas: the leader, and during a leader failover a standby.
	Service *plane.Service

	// managerOptions start the manager and its standby replica; standby
	// is nil until the first leader failover.
	managerOptions plane.CapwrightOptions
	standby        *plane.Capwright

	opts  EnvOptions
	fleet *fleet
	// managerStarted is when the manager last started.
	managerStarted time.Time
}

// Start brings up the plane, the manager, the providers and the fleet,
// and returns once every provider and Tenant is Ready. On failure it stops
// what it started.
func Start(ctx context.Context, opts EnvOptions) (*Env, error) {
	opts = opts.withDefaults()
	p, err := plane.Start(ctx, plane.Options{BinDir: opts.BinDir, RunDir: opts.RunDir, AuditLog: true, KustomizeShards: FluxShards, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	e := &Env{Plane: p, opts: opts}
	if err := e.start(ctx); err != nil {
		e.Stop()
		return nil, fmt.Errorf("starting the soak's plane (logs in %s): %w", p.RunDir, err)
	}
	return e, nil
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.opts.Log, "%s soak: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func (e *Env) start(ctx context.Context) error {
	p := e.Plane
	cfg := rest.CopyConfig(p.Config)
	cfg.QPS, cfg.Burst = 200, 400
	var err error
	if e.Client, err = newClient(cfg); err != nil {
		return err
	}
	if err := p.BuildCapwright(ctx); err != nil {
		return err
	}
	if e.CLI, err = p.BuildCLI(ctx); err != nil {
		return err
	}
	if e.Releases, err = plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin")); err != nil {
		return err
	}
	for i := range e.opts.WorkloadServers + 1 {
		name := fmt.Sprintf("soak-w%d", i+1)
		if i == e.opts.WorkloadServers {
			name = "soak-churn"
		}
		w, err := p.StartWorkloadCluster(ctx, name, plane.WorkloadOptions{})
		if err != nil {
			return err
		}
		e.Servers = append(e.Servers, w)
	}
	// Served before the manager starts, which watches Clusters only when
	// their kind is served at start-up.
	if err := p.InstallClusterCRD(ctx); err != nil {
		return err
	}
	// The fleet's Clusters are registered before Cluster API's webhooks
	// are installed, which spares them the wait for its manager.
	e.fleet = newFleet(e)
	start := time.Now()
	tenants, err := e.fleet.planTenants(ctx)
	if err != nil {
		return err
	}
	e.logf("%d Clusters registered in %s", e.opts.Tenants*e.opts.Clusters, time.Since(start).Round(time.Second))
	releaseArgs, releaseEnv, err := e.Releases.ManagerSettings(p.RunDir)
	if err != nil {
		return err
	}
	if e.Service, err = plane.StartService(); err != nil {
		return err
	}
	if err := e.fleet.createNamespace(ctx, plane.ManagerNamespace); err != nil {
		return err
	}
	// Leader election as the chart runs it with replicas: 2, on short
	// timings so that a failover takes seconds; the artifacts are
	// advertised at the Service, which any replica answers.
	e.managerOptions = plane.CapwrightOptions{Args: append([]string{
		"--resync-interval=" + e.opts.Resync.String(),
		"--flux-sharding=" + strconv.Itoa(len(FluxShards)),
		"--registry-timeout=5s",
		"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
		"--insecure-registry=" + p.Registry.Host,
		"--enable-leader-election",
		"--leader-election-lease-duration=" + leaseDuration.String(),
		"--leader-election-renew-deadline=8s",
		"--leader-election-retry-period=" + leaseRetry.String(),
		"--artifact-advertise-url=" + e.Service.URL,
	}, releaseArgs...), Env: releaseEnv}
	if e.Manager, err = p.StartCapwright(ctx, e.managerOptions); err != nil {
		return err
	}
	e.Service.SetBackends(e.Manager.ArtifactAddr())
	e.managerStarted = time.Now()
	if err := e.fleet.installProviders(ctx); err != nil {
		return err
	}
	if err := e.fleet.createTenants(ctx, tenants); err != nil {
		return err
	}
	// The real Cluster API manager, once Flux has installed the core
	// provider: its webhooks, which the API server calls for every
	// Cluster write from now on, answer.
	if err := e.waitProviders(ctx, 10*time.Minute); err != nil {
		return err
	}
	if e.CAPI, err = p.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"}); err != nil {
		return err
	}
	if err := e.fleet.createContracts(ctx); err != nil {
		return err
	}
	if err := e.waitConverged(ctx, 10*time.Minute); err != nil {
		return err
	}
	e.logf("providers and %d tenants × %d clusters Ready after %s", e.opts.Tenants, e.opts.Clusters, time.Since(start).Round(time.Second))
	return nil
}

// Stop stops the plane and everything on it.
func (e *Env) Stop() {
	if e.Releases != nil {
		_ = e.Releases.Close()
	}
	_ = e.Plane.Stop()
	if e.Service != nil {
		_ = e.Service.Close()
	}
}

// RunDir is where the plane keeps its logs.
func (e *Env) RunDir() string { return e.Plane.RunDir }

// waitProviders waits until every provider has converged.
func (e *Env) waitProviders(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pending, err := e.fleet.unconverged(ctx)
		var providers []string
		for _, p := range pending {
			if !strings.HasPrefix(p, "Tenant ") {
				providers = append(providers, p)
			}
		}
		if err == nil && len(providers) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("providers not Ready after %s: %s", timeout, strings.Join(providers, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// waitConverged waits until every CR the soak made has converged.
func (e *Env) waitConverged(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pending, err := e.fleet.unconverged(ctx)
		if err == nil && len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("not converged after %s: %s", timeout, summarize(pending, 5))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme,
		helmv2.AddToScheme, tenancyv1alpha1.AddToScheme, providersv1alpha1.AddToScheme, clustersv1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// keepDir makes sure dir exists.
func keepDir(dir string) error { return os.MkdirAll(dir, 0o755) }
