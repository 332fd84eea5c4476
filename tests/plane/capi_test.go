package plane

import (
	"context"
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
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2",
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": "standalone"},
		"spec": map[string]any{"infrastructureRef": map[string]any{
			"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": TestInfraClusterKind, "name": "standalone",
		}},
	}}
	if _, err := clusters.Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
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
