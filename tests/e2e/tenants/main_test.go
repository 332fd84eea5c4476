// Package tenants is the end-to-end suite of Tenants: two workload
// clusters (each its own etcd and kube-apiserver) registered as Cluster
// API Clusters with kubeconfig Secrets, a tenant stack pushed to the
// plane's registry, delivered by the real Flux controllers through the
// Capwright manager built from the working tree. Flux is sharded as
// Flux's sharding guide has it: the manager labels the tenants' Flux
// objects over two shards (--flux-sharding), and kustomize-controller runs
// as a main instance and one instance per shard, so every test's
// Kustomizations go through a shard (sharding_test.go checks which).
package tenants

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// clusterNamespace holds the registered Clusters: a namespace shared by
// tenants (spec.clusters.namespaces), created before any Tenant.
const clusterNamespace = "default"

// resyncInterval is how often the manager looks at an unchanged Tenant
// again (--resync-interval): what a test shows to come from a watch must
// come well before it.
const resyncInterval = 30 * time.Second

var (
	env       *plane.Plane
	workloads []*plane.WorkloadCluster
	// notification is Flux's notification-controller the manager forwards
	// events to.
	notification *plane.NotificationController
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{AuditLog: true, KustomizeShards: fluxShardNames}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		// Registered before the manager starts, which watches Clusters
		// only when their kind is served at start-up.
		for i := 1; i <= 2; i++ {
			w, err := p.StartWorkloadCluster(ctx, fmt.Sprintf("workload-%d", i), plane.WorkloadOptions{ControllerManager: true})
			if err != nil {
				return err
			}
			if _, err := p.RegisterWorkloadCluster(ctx, w, clusterNamespace, w.Name); err != nil {
				return err
			}
			workloads = append(workloads, w)
		}
		var err error
		if notification, err = framework.StartNotification(ctx, p); err != nil {
			return err
		}
		_, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{"--resync-interval=" + resyncInterval.String(), fmt.Sprintf("--flux-sharding=%d", fluxShards),
			"--events-addr=" + notification.EventsURL}})
		return err
	}, func(p *plane.Plane) { env = p }))
}
