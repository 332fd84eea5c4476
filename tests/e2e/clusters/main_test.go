// Package clusters is the end-to-end suite of Capwright's Cluster API
// contract kinds: Clusters whose control plane (CapwrightControlPlane) is
// a chart the real Flux controllers install from the plane's registry,
// its backend the plane's simulated hosted-control-plane operator
// (hcpsim: a real etcd and kube-apiserver per control plane), reconciled
// by the real Cluster API core manager (ClusterTopology on, for
// ClusterClasses) and the Capwright manager built from the working tree,
// which forwards its events to Flux's notification-controller.
package clusters

import (
	"context"
	"os"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	// chartURL is the simulated operator's chart in the plane's registry.
	chartURL string
)

func TestMain(m *testing.M) {
	opts := plane.Options{AuditLog: true, ExtraArgs: map[string][]string{
		"cluster-api-manager": {"--feature-gates=ClusterTopology=true"},
	}}
	os.Exit(framework.RunSuite(m, opts, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		// Cluster API first: the manager watches Clusters when they are
		// served at start-up.
		if _, err := p.StartCAPIManager(ctx, plane.CAPIManagerOptions{Install: true}); err != nil {
			return err
		}
		var err error
		if chartURL, err = framework.StartHostedControlPlanes(ctx, p); err != nil {
			return err
		}
		// The contract kinds' events go to notification-controller.
		notification, err := framework.StartNotification(ctx, p)
		if err != nil {
			return err
		}
		_, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{"--resync-interval=30s", "--events-addr=" + notification.EventsURL}})
		return err
	}, func(p *plane.Plane) { env = p }))
}
