package tenants

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestDeletedClusterIsUninstalled: when a selected Cluster object is
// deleted, the tenant's Flux object for it goes, Flux uninstalls the stack
// from that workload cluster, and the Cluster's line leaves the status.
func TestDeletedClusterIsUninstalled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	remote := newClient(t, workloads[1].Config)
	const name, clustersNS, target = "initech", "initech-clusters", "initech"
	cluster := types.NamespacedName{Namespace: clustersNS, Name: "doomed"}
	if _, err := env.RegisterWorkloadCluster(ctx, workloads[1], cluster.Namespace, cluster.Name); err != nil {
		t.Fatal(err)
	}
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/initech", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: []string{cluster.Name}, Namespaces: []string{cluster.Namespace}})
	createTenant(t, ctx, c, tn)

	waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready on the doomed cluster", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	config := &corev1.ConfigMap{}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: target, Name: "stack-config"}, config); err != nil {
		t.Fatalf("the stack is not on the workload cluster: %v", err)
	}

	start := time.Now()
	if err := c.Delete(ctx, plane.NewTestCluster(cluster.Namespace, cluster.Name)); err != nil {
		t.Fatal(err)
	}
	ks := client.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(name, cluster)}
	eventually(t, 2*time.Minute, "the Cluster's Kustomization gone", func() (bool, string) {
		err := c.Get(ctx, ks, &kustomizev1.Kustomization{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	eventually(t, 2*time.Minute, "the stack uninstalled from the workload cluster", func() (bool, string) {
		err := remote.Get(ctx, client.ObjectKeyFromObject(config), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("stack uninstalled %s after the Cluster was deleted", time.Since(start).Round(time.Millisecond))
	waitTenant(t, ctx, c, name, time.Minute, "the deleted Cluster's line gone", func(tn *tenancyv1alpha1.Tenant) bool {
		return tn.Status.TotalClusters == 0 && clusterLine(tn, cluster.Name) == nil
	})
}
