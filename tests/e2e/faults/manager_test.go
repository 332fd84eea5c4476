package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestManagerKilledMidUpgradeWithTheRegistryDown (fault 5) SIGKILLs the
// manager right after the real kubeadm control plane provider, installed
// at v1.13.6 with additional manifests, is moved to v1.14.2, takes the
// registry down, and starts the manager again with empty artifact
// storage (a new pod): the additional manifests are served to Flux again
// at once, although preflight cannot pass, and the upgrade completes by
// itself once the registry is back.
func TestManagerKilledMidUpgradeWithTheRegistryDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	const from, to = "v1.13.6", coreVersion
	ns := publishKubeadm(t, ctx, c, v1alpha1.ControlPlaneProviderType, from, to)
	p := &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: from}}
	url := installWithExtras(t, ctx, c, p, extraConfigMap("restarted-extra", "kept"))
	defer framework.DeleteProviderAndWait(t, ctx, c, p)

	framework.UpdateProvider(t, ctx, c, p, func() { p.Spec.Version = to })
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
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: render.AdditionalObjectName(p.ProviderType(), p.Name)}}
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
	if p.Status.InstalledVersion != to {
		t.Errorf("installed %q after the registry came back, want %s", p.Status.InstalledVersion, to)
	}
	var deploy appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: "capi-kubeadm-control-plane-controller-manager"}, &deploy); err != nil {
		t.Fatal(err)
	}
	if image := deploy.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, ":"+to) {
		t.Errorf("the control plane provider runs %s after the upgrade, want %s", image, to)
	}
}
