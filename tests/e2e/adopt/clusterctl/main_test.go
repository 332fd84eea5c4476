// Package clusterctl is the end-to-end proof that Capwright adopts the
// providers of a management cluster that the real clusterctl installed,
// without reinstalling them: `clusterctl init` (built from Cluster API
// v1.14.2, run offline against a local repository holding the real
// v1.13.6 and v1.14.2 releases) installs the core, kubeadm bootstrap and
// kubeadm control plane providers and a Cluster exists; then
// docs/migrate.md's clusterctl steps hand them to the Capwright manager
// built from the working tree, and clusterctl still reads the result.
package clusterctl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	// releases stands in for github.com, serving the same real releases;
	// the manager and `capwright convert` reach it through a mirror rule.
	releases *plane.ReleaseServer
	// releaseCA is the file of the stand-in's CA.
	releaseCA string
	// cli is the capwright CLI built from the working tree.
	cli string
	// installed is what clusterctl installed before any test runs.
	installed *clusterctlInstall
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{}, func(ctx context.Context, p *plane.Plane) error {
		var err error
		if releases, err = plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin")); err != nil {
			return err
		}
		if releaseCA, err = releases.WriteCA(p.RunDir); err != nil {
			return err
		}
		// First the management cluster as clusterctl leaves it, with a
		// Cluster; Capwright comes later, as it would to a running site.
		if installed, err = initWithClusterctl(ctx, p); err != nil {
			return err
		}
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		if cli, err = p.BuildCLI(ctx); err != nil {
			return err
		}
		releaseArgs, releaseEnv, err := releases.ManagerSettings(p.RunDir)
		if err != nil {
			return err
		}
		_, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: append([]string{"--resync-interval=30s"}, releaseArgs...), Env: releaseEnv})
		return err
	}, func(p *plane.Plane) { env = p }))
}
