package faults

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestFluxControllersKilledMidInstall (fault 3) installs the real kubeadm
// bootstrap provider while Flux's source-controller and
// kustomize-controller are down, then kills kustomize-controller again
// while it applies: once they run again the provider converges to Ready
// by itself, at the checked revision.
func TestFluxControllersKilledMidInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	ns := publishKubeadm(t, ctx, c, v1alpha1.BootstrapProviderType, coreVersion)
	p := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: coreVersion}}

	for _, name := range []string{"source-controller", "kustomize-controller"} {
		if err := env.Kill(name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Restart(context.Background(), name) })
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, p)
	key := client.ObjectKey{Namespace: p.Namespace, Name: "bootstrap-kubeadm"}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionTrue, "", time.Minute)
	if err := c.Get(ctx, key, &kustomizev1.Kustomization{}); err != nil {
		t.Fatalf("the manager did not write the Kustomization while Flux was down: %v", err)
	}

	if err := env.Restart(ctx, "source-controller"); err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitReady(ctx, c, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := env.Restart(ctx, "kustomize-controller"); err != nil {
		t.Fatal(err)
	}
	// Kill it again while it applies or runs the health checks.
	var ks kustomizev1.Kustomization
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &ks); err != nil {
			return false, nil
		}
		return ks.Status.LastAttemptedRevision != "" || len(ks.Status.Conditions) > 0, nil
	})
	if err != nil {
		t.Fatal("kustomize-controller never started on the Kustomization")
	}
	if err := env.Kill("kustomize-controller"); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed kustomize-controller with the Kustomization at %+v", ks.Status.Conditions)
	time.Sleep(2 * time.Second)
	if err := env.Restart(ctx, "kustomize-controller"); err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	if p.Status.InstalledVersion != coreVersion || p.Status.Artifact == nil {
		t.Errorf("status after the restarts: installed %q, artifact %+v", p.Status.InstalledVersion, p.Status.Artifact)
	}
}

// TestAPIServerRestart (fault 4) kills etcd and kube-apiserver under an
// installed core provider and starts them again: the manager reconnects
// (a provider created afterwards is installed), and it rewrites nothing
// of the core provider, which did not change.
func TestAPIServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	core := ensureCore(t, ctx, c)
	after := testProvider(t, ctx, c, env.Registry.Host, "after-restart")

	since := time.Now()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := env.Kill(name); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := env.Restart(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("etcd and kube-apiserver back after %s", time.Since(since).Round(time.Millisecond))

	if err := c.Create(ctx, after); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, after)
	framework.WaitProviderCondition(t, ctx, c, after, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)

	writes, err := env.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.Namespace == core.Namespace {
			t.Errorf("the manager wrote %s in the unchanged core provider's namespace after the restart", w)
		}
	}
	t.Logf("the manager made %d writes after the restart, all for the new provider", len(writes))
}
