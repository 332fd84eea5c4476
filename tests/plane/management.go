package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// A second management cluster, as a site bootstraps one to replace the
// first (an upgrade, a migration, a recovery) and moves its Clusters to
// it with `clusterctl move`: its own etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok nodes, webhook router,
// certsim and, with Options.RunDeployments, its own pod runner, so the
// Flux controllers, Capwright's manager and Cluster API's core manager
// that its `flux bootstrap git` and its Kustomizations install run as
// processes of their own, against it alone. What a site shares between
// its management clusters is shared: the registry (Capwright's release,
// the stacks) and the Git server (fleet.git, which both sync), and the
// CAs the first cluster's pods trust (TrustCA).

// managementName is what a second management cluster may be called: a
// DNS label, since it names its kubeconfig context and run directory.
var managementName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// StartManagementCluster starts a second management cluster named name
// beside p, with p's options (nodes, extra arguments, RunDeployments),
// in the run directory <RunDir>/<name>, its admin kubeconfig's context
// named name, and returns it once every component is ready. It is a
// Plane of its own (Kubeconfig, Config, Kill, Restart, LogPath,
// StartWorkloadCluster, TrustCA…) whose Registry and Git are p's; p's
// Stop stops it, and its own Stop or StopCluster stop only it.
func (p *Plane) StartManagementCluster(ctx context.Context, name string) (*Plane, error) {
	if !managementName.MatchString(name) {
		return nil, fmt.Errorf("management cluster name %q is not a DNS label", name)
	}
	if p.name != "" {
		return nil, fmt.Errorf("start further management clusters from the first one, not from %s", p.name)
	}
	opts := p.opts
	opts.RunDir = filepath.Join(p.RunDir, name)
	opts.APIServerPort = 0
	opts.KustomizeShards = nil
	if _, err := os.Stat(opts.RunDir); err == nil {
		return nil, fmt.Errorf("management cluster %s exists already (%s)", name, opts.RunDir)
	}
	if err := os.MkdirAll(opts.RunDir, 0o755); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m := &Plane{
		RunDir:   opts.RunDir,
		Registry: p.Registry,
		Git:      p.Git,
		opts:     opts,
		tracker:  &tracker{logDir: opts.RunDir},
		runCtx:   runCtx,
		cancel:   cancel,
		name:     name,
	}
	p.mu.Lock()
	p.managements = append(p.managements, m)
	p.mu.Unlock()
	start := time.Now()
	if err := m.start(ctx, runCtx); err != nil {
		_ = m.Stop()
		return nil, fmt.Errorf("starting management cluster %s (logs in %s): %w", name, opts.RunDir, err)
	}
	if p.pods != nil && m.pods != nil {
		// A site's nodes trust the same CAs whichever cluster they serve.
		p.pods.mu.Lock()
		trust := p.pods.trust
		p.pods.mu.Unlock()
		m.pods.mu.Lock()
		m.pods.trust = trust
		m.pods.mu.Unlock()
	}
	p.logf("management cluster %s ready at %s in %s (logs in %s)", name, m.api.URL(), time.Since(start).Round(time.Millisecond), m.RunDir)
	return m, nil
}

// Name is the management cluster's name: what StartManagementCluster was
// given, or "" for the first.
func (p *Plane) Name() string { return p.name }
