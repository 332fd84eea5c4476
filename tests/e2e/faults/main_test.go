// Package faults is the end-to-end suite of what Capwright does when the
// parts around it fail: the registry down or not answering, Flux's
// controllers, the API server and the manager itself killed and started
// again. Each test breaks one part of a running plane, checks that nothing
// the user owns is lost and that the status tells the truth, and that it
// all converges once the part is back.
package faults

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
	// manager is the Capwright manager the suite runs.
	manager *plane.Capwright
	// releases stands in for github.com (GitHub's layout and redirect),
	// serving the real provider releases; a mirror rule sends the
	// manager there.
	releases *plane.ReleaseServer
)

// resync is the manager's --resync-interval here: short, so that tests
// see several resyncs.
const resync = "10s"

// registryTimeout is the manager's --registry-timeout here.
const registryTimeout = "5s"

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{AuditLog: true}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		var err error
		if releases, err = plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin")); err != nil {
			return err
		}
		releaseArgs, releaseEnv, err := releases.ManagerSettings(p.RunDir)
		if err != nil {
			return err
		}
		manager, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: append([]string{
			"--resync-interval=" + resync,
			"--registry-timeout=" + registryTimeout,
			"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
			"--insecure-registry=" + p.Registry.Host,
		}, releaseArgs...), Env: releaseEnv})
		return err
	}, func(p *plane.Plane) { env = p }))
}
