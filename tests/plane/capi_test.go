package plane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// TestCAPIManagerStandalone installs the real core components through the
// harness and runs the real manager: a Cluster passes its webhooks and is
// reconciled (the manager adds its finalizer and the ControlPlane-less
// Cluster gets conditions).
func TestCAPIManagerStandalone(t *testing.T) {
	bin := binDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{BinDir: bin, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if _, err := p.StartCAPIManager(ctx, CAPIManagerOptions{Install: true}); err != nil {
		t.Fatal(err)
	}
	if err := p.InstallTestInfraClusterCRD(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	clusters := dyn.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}).Namespace("default")
	cluster := NewTestCluster("default", "standalone")
	// The API server may still hold webhook configurations from before the
	// CA injection for a moment.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := clusters.Create(ctx, cluster, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			t.Logf("creating Cluster: %v", err)
			return false, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("creating a Cluster through the real webhooks: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := clusters.Get(ctx, "standalone", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		return len(got.GetFinalizers()) > 0 && len(conditions) > 0, nil
	})
	if err != nil {
		t.Fatalf("the CAPI manager did not reconcile Cluster default/standalone (see %s)", p.LogPath("cluster-api-manager"))
	}
}
