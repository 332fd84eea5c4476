package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestClusterAPIInstalledAfterTheManager (fault 8) runs first in the
// suite, while the plane serves no Cluster kind, as on a management
// cluster where Capwright is installed before Cluster API: a Tenant says
// ClusterAPIMissing; once the Cluster kind is served and a Cluster
// registered, the manager starts watching Clusters by itself (no restart)
// and the Tenant installs its stack on the cluster. Then a person edits
// the Tenant's Kustomization of that cluster (fault 10).
func TestClusterAPIInstalledAfterTheManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t)
	if err := tenancyv1alpha1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	clusters := &unstructured.UnstructuredList{}
	clusters.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	clusters.SetKind("ClusterList")
	if err := c.List(ctx, clusters); !apimeta.IsNoMatchError(err) {
		t.Fatalf("the plane serves Clusters already (%v): this test must run before the suite installs Cluster API, as the first test of the package", err)
	}

	const clusterNamespace = "faults-clusters"
	tn := stackTenant(t, ctx, "latecomer", clusterNamespace, "late")
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), tn)
		framework.WaitGone(t, context.Background(), c, tn, 3*time.Minute)
	})
	waitTenantCondition(t, ctx, c, tn, tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.ClusterAPIMissingReason)

	w := startCluster(t, ctx, c, clusterNamespace, "late")
	waitTenantCondition(t, ctx, c, tn, tenancyv1alpha1.ReadyCondition, "")
	if tn.Status.ReadyClusters != 1 {
		t.Errorf("Tenant Ready with %d clusters, want 1", tn.Status.ReadyClusters)
	}
	remote, err := framework.NewClient(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: tn.Name, Name: "stack-config"}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}); err != nil {
		t.Errorf("the stack is not on the cluster: %v", err)
	}
	t.Run("an edited Flux object of the tenant is taken back (fault 10)", func(t *testing.T) {
		key := client.ObjectKey{Namespace: clusterNamespace, Name: render.TenantClusterObjectName(tn.Name, types.NamespacedName{Namespace: clusterNamespace, Name: w.Name})}
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, key, ks); err != nil {
			t.Fatal(err)
		}
		ks.Spec.Suspend = true
		delete(ks.Labels, tenancyv1alpha1.TenantLabel)
		if err := c.Update(ctx, ks); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, key, ks); err != nil {
				return false, nil
			}
			return !ks.Spec.Suspend && ks.Labels[tenancyv1alpha1.TenantLabel] == tn.Name, nil
		})
		if err != nil {
			t.Fatalf("not taken back: suspend=%v, labels %v", ks.Spec.Suspend, ks.Labels)
		}
		waitTenantCondition(t, ctx, c, tn, tenancyv1alpha1.ReadyCondition, "")
	})

	log, err := os.ReadFile(env.LogPath("capwright-manager"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Cluster API is served now: watching Clusters and kubeconfig Secrets for Tenants") {
		t.Error("the manager did not start watching Clusters once Cluster API was served")
	}
}

// waitTenantCondition waits until the tenant's condition is True (reason
// empty) or has reason, for its current generation.
func waitTenantCondition(t *testing.T, ctx context.Context, c client.Client, tn *tenancyv1alpha1.Tenant, condType, reason string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, nil
		}
		cond := apimeta.FindStatusCondition(tn.Status.Conditions, condType)
		if cond == nil || cond.ObservedGeneration != tn.Generation {
			return false, nil
		}
		if reason == "" {
			return cond.Status == metav1.ConditionTrue, nil
		}
		return cond.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("Tenant %s: want %s %s; conditions %+v", tn.Name, condType, reason, tn.Status.Conditions)
	}
}

// TestTenantDeletedWhileAClusterIsUnreachable (fault 9) deletes a Tenant
// installed on two clusters while one of them cannot be reached (its API
// server killed): the stack goes from the other at once, the Tenant's
// Deleting condition names the cluster that holds it, and the deletion
// completes once that cluster is back, leaving its stack on neither.
// Like the test above, it registers Clusters before the suite installs
// the real Cluster API (whose webhooks no process serves here).
func TestTenantDeletedWhileAClusterIsUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)
	if err := tenancyv1alpha1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	const clusterNamespace = "faults-leaving"
	staying, away := startCluster(t, ctx, c, clusterNamespace, "staying"), startCluster(t, ctx, c, clusterNamespace, "away")
	workloads := []*plane.WorkloadCluster{staying, away}
	tn := stackTenant(t, ctx, "leaving", clusterNamespace, staying.Name, away.Name)
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	waitTenantCondition(t, ctx, c, tn, tenancyv1alpha1.ReadyCondition, "")
	stackOn := func(w *plane.WorkloadCluster) error {
		remote, err := framework.NewClient(w.Config)
		if err != nil {
			return err
		}
		return remote.Get(ctx, client.ObjectKey{Namespace: tn.Name, Name: "stack-config"}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})
	}
	for _, w := range workloads {
		if err := stackOn(w); err != nil {
			t.Fatalf("the stack is not on %s: %v", w.Name, err)
		}
	}

	if err := away.Kill("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, tn); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, nil
		}
		d := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.DeletingCondition)
		return d != nil && d.Status == metav1.ConditionTrue && strings.Contains(d.Message, "(cluster "+clusterNamespace+"/"+away.Name+")") &&
			!strings.Contains(d.Message, "(cluster "+clusterNamespace+"/"+staying.Name+")") && apierrors.IsNotFound(stackOn(staying)), nil
	})
	if err != nil {
		t.Fatalf("while %s is unreachable: Deleting %+v; the stack on %s: %v", away.Name,
			apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.DeletingCondition), staying.Name, stackOn(staying))
	}

	if err := away.Restart(ctx, "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, tn, 3*time.Minute)
	if err := stackOn(away); !apierrors.IsNotFound(err) {
		t.Errorf("the stack is still on %s after the Tenant went: %v", away.Name, err)
	}
}

// stackTenant publishes a small kustomize stack (a Namespace, which Flux
// does not create, and a ConfigMap stack-config) and returns a Tenant
// named name (not created) that installs it on the named Clusters of
// namespace.
func stackTenant(t *testing.T, ctx context.Context, name, namespace string, clusters ...string) *tenancyv1alpha1.Tenant {
	t.Helper()
	stack, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/"+name, "v1.0.0", map[string][]byte{
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stack-config\n  namespace: stack\ndata:\n  greeting: hello\n"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: clusters, Namespaces: []string{namespace}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: stack.URL, Insecure: true}, Tag: stack.Tag}},
		}}
}

// startCluster starts a workload cluster and registers it as the Cluster
// namespace/name (deleted when the test ends).
func startCluster(t *testing.T, ctx context.Context, c client.Client, namespace, name string) *plane.WorkloadCluster {
	t.Helper()
	w, err := env.StartWorkloadCluster(ctx, name, plane.WorkloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Once a test before this one has installed the core provider, Cluster
	// API's webhooks admit every Cluster write, and this suite runs no pod
	// of its Deployment: its manager runs here for the rest of the test,
	// as the Deployment's pod would on a cluster (registering is
	// idempotent).
	cluster, err := env.RegisterWorkloadCluster(ctx, w, namespace, w.Name)
	if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
		m, startErr := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"})
		if startErr != nil {
			t.Fatalf("%v; starting Cluster API's manager for its webhooks: %v", err, startErr)
		}
		t.Cleanup(m.Stop)
		cluster, err = env.RegisterWorkloadCluster(ctx, w, namespace, w.Name)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cluster) })
	return w
}
