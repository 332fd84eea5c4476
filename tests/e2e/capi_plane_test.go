package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestRealCAPIComponentsBecomeReadyAndServeWebhooks proves the plane can
// carry real provider manifests: Cluster API's released core components,
// applied by the real kustomize-controller with health checks, become Ready
// (their Deployment through kwok, their Certificate and Issuer through
// certsim), and with the real CAPI manager behind the webhook router a
// Cluster can be created, converted between API versions, reconciled and
// deleted.
func TestRealCAPIComponentsBecomeReadyAndServeWebhooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	components, err := os.ReadFile(env.CAPIComponentsPath(plane.CAPIVersion, "core-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := framework.PushFiles(ctx, env.Registry.Host, "cluster-api/manifests/core-cluster-api", plane.CAPIVersion, map[string][]byte{
		"core-components.yaml": components,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo := framework.OCIRepository(plane.FluxNamespace, "capi-core", pushed)
	ks := framework.Kustomization(plane.FluxNamespace, "capi-core", "capi-core")
	// clusterctl variables at their defaults, as Flux's post-build does.
	ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"EXP_MACHINE_POOL": "true"}}
	for _, obj := range []client.Object{repo, ks} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.WaitApplied(ctx, c, ks, pushed.Tag+"@"+pushed.Digest, 4*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("kustomize-controller: %s", readyMessage(ks))

	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, &dep); err != nil {
		t.Fatal(err)
	}
	if !deploymentAvailable(&dep) {
		t.Fatalf("capi-controller-manager not Available: %+v", dep.Status)
	}
	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-serving-cert"}, cert); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-webhook-service-cert"}, &secret); err != nil {
		t.Fatal(err)
	}
	// certsim injects the CA a moment after the Certificate is issued, as
	// cert-manager's cainjector would.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, crd); err != nil {
			return false, err
		}
		caBundle, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		return caBundle != "", nil
	})
	if err != nil {
		t.Fatalf("clusters.cluster.x-k8s.io never got a conversion caBundle: %v", err)
	}

	// Without a process behind the webhook Service, CAPI objects cannot be
	// created: the webhook is real.
	cluster := plane.NewTestCluster("default", "before-manager")
	err = c.Create(ctx, cluster)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("creating a Cluster with no webhook server: want a webhook error, got %v", err)
	}

	manager, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Stop()

	if err := env.InstallTestInfraClusterCRD(ctx); err != nil {
		t.Fatal(err)
	}

	cluster = plane.NewTestCluster("default", "e2e")
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatalf("Cluster could not be created with the CAPI manager serving webhooks: %v", err)
	}
	// The real manager reconciles it: it adds its finalizer.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := plane.NewTestCluster("default", "e2e")
		if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			return false, nil
		}
		for _, f := range got.GetFinalizers() {
			if f == "cluster.cluster.x-k8s.io" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal("the CAPI manager never added its finalizer to Cluster default/e2e")
	}
	// Reading at v1beta1 goes through the conversion webhook.
	crs := &unstructured.Unstructured{}
	crs.SetGroupVersionKind(schema.GroupVersionKind{Group: "addons.cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterResourceSet"})
	crs.SetNamespace("default")
	crs.SetName("e2e")
	_ = unstructured.SetNestedStringMap(crs.Object, map[string]string{"e2e": "true"}, "spec", "clusterSelector", "matchLabels")
	_ = unstructured.SetNestedSlice(crs.Object, []any{map[string]any{"kind": "ConfigMap", "name": "addons"}}, "spec", "resources")
	if err := c.Create(ctx, crs); err != nil {
		t.Fatal(err)
	}
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(schema.GroupVersionKind{Group: "addons.cluster.x-k8s.io", Version: "v1beta1", Kind: "ClusterResourceSet"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(crs), old); err != nil {
		t.Fatalf("reading a ClusterResourceSet at v1beta1 (conversion webhook): %v", err)
	}
	if old.GetAPIVersion() != "addons.cluster.x-k8s.io/v1beta1" {
		t.Fatalf("converted object has apiVersion %s", old.GetAPIVersion())
	}
	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cluster), plane.NewTestCluster("default", "e2e"))
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("Cluster default/e2e was not finalized and removed by the CAPI manager")
	}
}
