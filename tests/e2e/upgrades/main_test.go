// Package upgrades is the end-to-end suite of provider upgrades that
// cannot strand a management cluster: every upgrade is dry-run on the API
// server before anything of it is applied, and under
// spec.upgrade.onFailure Rollback a new version that never becomes
// healthy is rolled back to the last good one, while the real Cluster API
// manager keeps reconciling Clusters. The releases are the real Cluster
// API v1.14.2 release, and releases derived from it the way a bad release
// goes wrong (an image that cannot be pulled, an immutable field changed,
// a CRD's storage version moved), served by a stand-in for github.com.
package upgrades

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
	// manager is the Capwright manager the suite runs; tests kill and
	// restart it.
	manager *plane.Capwright
	// releases stands in for github.com, serving the real Cluster API
	// releases and the ones derived from them.
	releases *plane.ReleaseServer
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{}, func(ctx context.Context, p *plane.Plane) error {
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
		manager, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: append([]string{"--resync-interval=10s"}, releaseArgs...), Env: releaseEnv})
		return err
	}, func(p *plane.Plane) { env = p }))
}
