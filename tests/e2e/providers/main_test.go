// Package providers is the end-to-end suite of the provider kinds: real
// Cluster API release artifacts published to the plane's registry,
// installed, upgraded and deleted through the real Flux controllers by the
// Capwright manager built from the working tree.
package providers

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	// manager is the Capwright manager the suite runs.
	manager *plane.Capwright
	// notification is Flux's notification-controller the manager forwards
	// its events to.
	notification *plane.NotificationController
	// releases stands in for github.com: it serves the real provider
	// releases rendered from module source in GitHub's layout, with
	// GitHub's redirect to a download host; a mirror rule sends the
	// manager there.
	releases *plane.ReleaseServer
	// managerArgs and managerEnv are what the manager runs with, which
	// capwright build is given too.
	managerArgs, managerEnv []string
)

// registryTimeout is the manager's --registry-timeout here: shorter than
// the default (2m), so that a release host that does not answer is given
// up on within the test's patience.
const registryTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{AuditLog: true}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		// Catalog providers (no spec.source) come from registry.k8s.io; the
		// plane's registry stands in as its mirror, as at an air-gapped site.
		var err error
		if notification, err = framework.StartNotification(ctx, p); err != nil {
			return err
		}
		if releases, err = plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin")); err != nil {
			return err
		}
		releaseArgs, releaseEnv, err := releases.ManagerSettings(p.RunDir)
		if err != nil {
			return err
		}
		managerArgs = append([]string{
			"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
			"--insecure-registry=" + p.Registry.Host,
			"--registry-timeout=" + registryTimeout.String(),
		}, releaseArgs...)
		managerEnv = releaseEnv
		manager, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: append([]string{
			"--resync-interval=30s",
			"--events-addr=" + notification.EventsURL,
		}, managerArgs...), Env: releaseEnv})
		return err
	}, func(p *plane.Plane) { env = p }))
}
