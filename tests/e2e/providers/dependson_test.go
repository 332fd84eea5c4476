package providers

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// waitsForDependsOn checks spec.dependsOn: nothing of the provider is
// written while the Kustomization it names is not Ready (Compatible
// Unknown, WaitingForDependency), and the install goes on as soon as it
// turns Ready — woken by the Kustomization's status change, well before
// the manager's resync (30 s in this suite) would have looked again.
func waitsForDependsOn(t *testing.T, ctx context.Context, c client.Client) {
	const ns = "prereq-system"
	ensureNamespace(t, ctx, c, ns)
	art, err := framework.PushFiles(ctx, env.Registry.Host, "prereq/settings", "v1", map[string][]byte{
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: prereq-settings\n  namespace: " + ns + "\ndata:\n  ready: \"yes\"\n"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo := framework.OCIRepository(ns, "prereq", art)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prereq"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "prereq"},
			Path: "./", Prune: true, Wait: true, Interval: metav1.Duration{Duration: 10 * time.Minute}, Suspend: true}}
	for _, o := range []client.Object{repo, ks} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "waits", "v0.1.0", map[string][]byte{
		"metadata.yaml":                  testMetadata("v1beta2"),
		"infrastructure-components.yaml": testComponents(ns, "x"),
	})
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waits"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url),
			DependsOn: []v1alpha1.DependencyReference{{Name: "prereq"}}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, p)
	waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionUnknown, v1alpha1.WaitingForDependencyReason, time.Minute)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "infrastructure-waits"}, &kustomizev1.Kustomization{}); err == nil {
		t.Fatal("the provider's Kustomization was written before its dependency was Ready")
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
		t.Fatal(err)
	}
	ks.Spec.Suspend = false
	if err := c.Update(ctx, ks); err != nil {
		t.Fatal(err)
	}
	var readyAt time.Time
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			return false, nil
		}
		readyAt = time.Now()
		return apimeta.IsStatusConditionTrue(ks.Status.Conditions, "Ready") && ks.Status.ObservedGeneration == ks.Generation, nil
	})
	if err != nil {
		t.Fatalf("the dependency did not turn Ready: %v", err)
	}
	waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionTrue, "", time.Minute)
	if waited := time.Since(readyAt); waited > 10*time.Second {
		t.Errorf("the provider passed preflight %s after its dependency turned Ready; its status change should wake it up at once, not the 30 s resync", waited.Round(time.Millisecond))
	}
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
}
