package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// fleetSize is how many clusters one tenant change must reach.
const fleetSize = 20

// BenchmarkTenantChangeReachesTwentyClusters measures the time from a
// change of a Tenant's stack (a new tag) until the new revision is applied
// and healthy on all 20 of its clusters, through the real Flux
// controllers. The 20 CAPI Clusters share the suite's two workload API
// servers (10 each), as the issue allows; each has its own Kustomization.
//
//	go test ./tests/e2e/tenants -run '^$' -bench . -benchtime 3x
func BenchmarkTenantChangeReachesTwentyClusters(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := newClient(b, env.Config)
	const name, clustersNS = "fleet", "fleet-clusters"
	for i := range fleetSize {
		if _, err := env.RegisterWorkloadCluster(ctx, workloads[i%len(workloads)], clustersNS, fmt.Sprintf("fleet-%02d", i)); err != nil {
			b.Fatal(err)
		}
	}
	push := func(tag string) framework.PushedArtifact {
		files := map[string][]byte{
			"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
			"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-settings\n  namespace: stack\ndata:\n  release: " + tag + "\n"),
		}
		art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/fleet", tag, files, nil)
		if err != nil {
			b.Fatal(err)
		}
		return art
	}
	art := push("v0.0.0")
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}, Namespaces: []string{clustersNS}})
	createTenant(b, ctx, c, tn)

	onEveryCluster := func(tag string) func(*tenancyv1alpha1.Tenant) bool {
		return func(tn *tenancyv1alpha1.Tenant) bool {
			if !isReady(tn) || tn.Status.ReadyClusters != fleetSize {
				return false
			}
			for _, line := range tn.Status.Clusters {
				if !strings.HasPrefix(line.AppliedRevision, tag+"@") {
					return false
				}
			}
			return true
		}
	}
	waitTenant(b, ctx, c, name, 5*time.Minute, "the fleet Tenant Ready on 20 clusters", onEveryCluster(art.Tag))

	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		next := push(fmt.Sprintf("v1.%d.0", i))
		current := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, current); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		current.Spec.Stack.Kustomize.Tag = next.Tag
		if err := c.Update(ctx, current); err != nil {
			b.Fatal(err)
		}
		waitTenant(b, ctx, c, name, 5*time.Minute, next.Tag+" Ready on 20 clusters", onEveryCluster(next.Tag))
		took := time.Since(start)
		total += took
		b.Logf("change %d: %s Ready on %d clusters after %s", i, next.Tag, fleetSize, took.Round(time.Millisecond))
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/change")
}
