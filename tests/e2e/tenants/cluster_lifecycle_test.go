package tenants

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestSelectedClusterFromCreationToDeletion follows one selected Cluster from
// creation to deletion. While its control plane is not initialized
// (status.initialization.controlPlaneInitialized), it gets no Flux object
// and a Pending line; once Cluster API says it is, the tenant controller,
// which watches Clusters, installs the stack at once, well within a
// resync. When the Cluster object is deleted, the tenant's Flux object for
// it goes, Flux uninstalls the stack from that workload cluster, and the
// Cluster's line leaves the status.
func TestSelectedClusterFromCreationToDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	remote := newClient(t, workloads[1].Config)
	const name, clustersNS, target = "initech", "initech-clusters", "initech"
	cluster := types.NamespacedName{Namespace: clustersNS, Name: "doomed"}
	createUninitializedCluster(t, ctx, c, workloads[1], cluster)
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/initech", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: []string{cluster.Name}, Namespaces: []string{cluster.Namespace}})
	createTenant(t, ctx, c, tn)

	ks := client.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(name, cluster)}
	waitTenant(t, ctx, c, name, 2*time.Minute, "a Pending line for the uninitialized Cluster", func(tn *tenancyv1alpha1.Tenant) bool {
		l := clusterLine(tn, cluster.Name)
		return l != nil && l.Phase == tenancyv1alpha1.ClusterPhasePending && l.Reason == tenancyv1alpha1.ControlPlaneNotInitializedReason
	})
	if err := c.Get(ctx, ks, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Kustomization %s for a Cluster whose control plane is not initialized: %v", ks, err)
	}
	// Only the Cluster may wake the tenant in the time measured: its
	// source is Ready first, and the tenant has taken that in.
	src := client.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantSourceName(name)}
	eventually(t, time.Minute, "the stack's OCIRepository Ready", func() (bool, string) {
		repo := &sourcev1.OCIRepository{}
		if err := c.Get(ctx, src, repo); err != nil {
			return false, err.Error()
		}
		return apimeta.IsStatusConditionTrue(repo.Status.Conditions, meta.ReadyCondition), fmt.Sprint(repo.Status.Conditions)
	})
	time.Sleep(2 * time.Second)
	initialized := time.Now()
	initializeControlPlane(t, ctx, c, cluster)
	eventually(t, time.Minute, "the Cluster's Kustomization once its control plane is initialized", func() (bool, string) {
		err := c.Get(ctx, ks, &kustomizev1.Kustomization{})
		return err == nil, fmt.Sprint(err)
	})
	// The controller resyncs a Tenant every resyncInterval: without the
	// watch of Clusters, the Kustomization would come only then.
	if took := time.Since(initialized); took > resyncInterval/2 {
		t.Fatalf("the Kustomization came %s after the control plane was initialized: a resync (every %s), not the watch of Clusters", took.Round(time.Millisecond), resyncInterval)
	} else {
		t.Logf("Kustomization written %s after the control plane was initialized", took.Round(time.Millisecond))
	}

	waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready on the doomed cluster", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	t.Logf("stack Ready on the Cluster %s after its control plane was initialized", time.Since(initialized).Round(time.Millisecond))
	config := &corev1.ConfigMap{}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: target, Name: "stack-config"}, config); err != nil {
		t.Fatalf("the stack is not on the workload cluster: %v", err)
	}

	start := time.Now()
	if err := c.Delete(ctx, plane.NewTestCluster(cluster.Namespace, cluster.Name)); err != nil {
		t.Fatal(err)
	}
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

// createUninitializedCluster registers workload cluster w as Cluster key
// the way Cluster API shows it while its control plane comes up: the
// Cluster without status.initialization.controlPlaneInitialized, and
// already its kubeconfig Secret, so only the control plane holds the
// stack back.
func createUninitializedCluster(t *testing.T, ctx context.Context, c client.Client, w *plane.WorkloadCluster, key types.NamespacedName) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Create(ctx, plane.NewTestCluster(key.Namespace, key.Name)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, plane.KubeconfigSecret(key.Namespace, key.Name, w.Kubeconfig)); err != nil {
		t.Fatal(err)
	}
}

// initializeControlPlane sets the Cluster's
// status.initialization.controlPlaneInitialized, as Cluster API's manager
// does once the control plane answers.
func initializeControlPlane(t *testing.T, ctx context.Context, c client.Client, key types.NamespacedName) {
	t.Helper()
	u := plane.NewTestCluster(key.Namespace, key.Name)
	if err := c.Get(ctx, key, u); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, true, "status", "initialization", "controlPlaneInitialized"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
}
