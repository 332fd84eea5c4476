package faults

import (
	"context"
	"os"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestManagerKilledMidUpgradeWithTheRegistryDown (fault 5) SIGKILLs the
// manager right after a provider with additional manifests is moved to a
// new version, takes the registry down, and starts the manager again with
// empty artifact storage (a new pod): the additional manifests are served
// to Flux again at once, although preflight cannot pass, and the upgrade
// completes by itself once the registry is back.
func TestManagerKilledMidUpgradeWithTheRegistryDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	p := testProvider(t, ctx, c, env.Registry.Host, "restarted")
	if _, err := framework.PublishFiles(ctx, env.Registry.Host, v1alpha1.InfrastructureProviderType, "restarted", "v0.1.1", map[string][]byte{
		"metadata.yaml":                  framework.TestMetadata("v1beta2"),
		"infrastructure-components.yaml": framework.TestComponents(p.Namespace+"-system", "v0.1.1"),
	}); err != nil {
		t.Fatal(err)
	}
	url := installWithExtras(t, ctx, c, p, extraConfigMap("restarted-extra", "kept"))
	defer framework.DeleteProviderAndWait(t, ctx, c, p)

	framework.UpdateProvider(t, ctx, c, p, func() { p.Spec.Version = "v0.1.1" })
	manager.Kill()
	t.Cleanup(func() { _ = manager.Restart(context.Background()) })
	if err := env.Registry.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Registry.Start() })
	if err := os.RemoveAll(manager.ArtifactStorage()); err != nil {
		t.Fatal(err)
	}
	if err := manager.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	// Served again without preflight, and kustomize-controller fetches it.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return framework.GetOK(ctx, url) == nil, nil
	})
	if err != nil {
		t.Fatalf("the additional manifests are not served again with the registry down: GET %s: %v", url, framework.GetOK(ctx, url))
	}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "infrastructure-restarted-additional"}}
	if err := framework.RequestReconcile(ctx, c, ks); err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitReady(ctx, c, ks, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: "restarted-extra"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the additional ConfigMap is gone after the restart: %v", err)
	}

	if err := env.Registry.Start(); err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	if p.Status.InstalledVersion != "v0.1.1" {
		t.Errorf("installed %q after the registry came back, want v0.1.1", p.Status.InstalledVersion)
	}
}
