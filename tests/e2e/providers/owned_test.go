package providers

import (
	"context"
	"slices"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestFirstInstallOverAnotherKustomizationsObject: a real Flux
// Kustomization of the platform team's ("third-party") applied one object
// of a provider's components (its ConfigMap) before the provider's CR
// exists. The provider's first install is refused with OwnedByAnotherTool,
// naming the object and the Kustomization, and nothing of it is applied:
// no Kustomization, no Deployment, the ConfigMap's UID and resourceVersion
// unchanged. Following the message's fix — annotate the object
// kustomize.toolkit.fluxcd.io/prune=disabled, drop it from that
// Kustomization's source — the install goes on and takes the very
// object over (same UID, now labelled with the provider's Kustomization).
func TestFirstInstallOverAnotherKustomizationsObject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t)
	const ns = "owned-system"
	ensureNamespace(t, ctx, c, ns)

	// The platform team's Kustomization applies the provider's ConfigMap.
	settings := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-settings\n  namespace: " + ns + "\ndata:\n  setting: \"the team's\"\n"
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-other\n  namespace: " + ns + "\ndata:\n  setting: \"kept\"\n"
	v1, err := framework.PushFiles(ctx, env.Registry.Host, "owned/team", "v1", map[string][]byte{"settings.yaml": []byte(settings), "other.yaml": []byte(other)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo := framework.OCIRepository(ns, "third-party", v1)
	team := framework.Kustomization(ns, "third-party", "third-party")
	for _, o := range []client.Object{repo, team} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		deleteKustomization(t, ctx, c, team)
		_ = c.Delete(ctx, repo)
	}()
	if err := framework.WaitReady(ctx, c, team, 3*time.Minute); err != nil {
		t.Fatalf("the team's Kustomization: %v", err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "test-settings"}
	var before corev1.ConfigMap
	if err := c.Get(ctx, key, &before); err != nil {
		t.Fatal(err)
	}
	if before.Labels["kustomize.toolkit.fluxcd.io/name"] != "third-party" {
		t.Fatalf("the team's Kustomization did not label its ConfigMap: %v", before.Labels)
	}

	core := installReleaseCore(t, ctx, c)
	defer deleteAndWait(t, ctx, c, core)
	url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "owned", "v0.1.0", map[string][]byte{
		"metadata.yaml":                  testMetadata("v1beta2"),
		"infrastructure-components.yaml": testComponents(ns, "x"),
	})
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, p)

	waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.OwnedByAnotherToolReason, 2*time.Minute)
	compatible := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.CompatibleCondition)
	t.Logf("refused: %s", compatible.Message)
	const want = "owned v0.1.0 would take over objects another tool manages: ConfigMap owned-system/test-settings is applied by Flux Kustomization owned-system/third-party; annotate it kustomize.toolkit.fluxcd.io/prune=disabled and remove it from that Kustomization's source, so that Flux leaves it in place for this provider. Nothing was applied"
	if compatible.Message != want {
		t.Errorf("Compatible message\n%s\nwant\n%s", compatible.Message, want)
	}
	if s := apimeta.FindStatusCondition(p.Status.Conditions, "Stalled"); s == nil || s.Reason != v1alpha1.OwnedByAnotherToolReason {
		t.Errorf("Stalled = %+v, want True OwnedByAnotherTool", s)
	}
	// A retry (a minute later) refuses again; nothing was applied
	// meanwhile.
	time.Sleep(5 * time.Second)
	pkey := client.ObjectKey{Namespace: ns, Name: "infrastructure-owned"}
	if err := c.Get(ctx, pkey, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused provider's Kustomization exists: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-controller-manager"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused provider's Deployment reached the cluster: %v", err)
	}
	var after corev1.ConfigMap
	if err := c.Get(ctx, key, &after); err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.ResourceVersion != before.ResourceVersion || after.Data["setting"] != "the team's" {
		t.Errorf("the team's ConfigMap changed: uid %s→%s, resourceVersion %s→%s, data %v",
			before.UID, after.UID, before.ResourceVersion, after.ResourceVersion, after.Data)
	}
	t.Logf("ConfigMap %s unchanged: uid %s, resourceVersion %s", key, after.UID, after.ResourceVersion)

	// The fix the message gives: annotate, then drop it from the source.
	patch := client.MergeFrom(after.DeepCopy())
	if after.Annotations == nil {
		after.Annotations = map[string]string{}
	}
	after.Annotations["kustomize.toolkit.fluxcd.io/prune"] = "disabled"
	if err := c.Patch(ctx, &after, patch); err != nil {
		t.Fatal(err)
	}
	v2, err := framework.PushFiles(ctx, env.Registry.Host, "owned/team", "v2", map[string][]byte{"other.yaml": []byte(other)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
		t.Fatal(err)
	}
	repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: v2.Tag}
	repo.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().Format(time.RFC3339Nano)}
	if err := c.Update(ctx, repo); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(team), team); err != nil || team.Status.Inventory == nil {
			return false, nil
		}
		return !slices.ContainsFunc(team.Status.Inventory.Entries, func(e kustomizev1.ResourceRef) bool {
			return e.ID == ns+"_test-settings__ConfigMap"
		}) && team.Status.LastAppliedRevision == "v2@"+v2.Digest, nil
	})
	if err != nil {
		t.Fatalf("the team's Kustomization still holds the ConfigMap: inventory %+v, applied %s", team.Status.Inventory, team.Status.LastAppliedRevision)
	}
	framework.UpdateProvider(t, ctx, c, p, func() {
		a := p.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
		p.SetAnnotations(a)
	})
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	var adopted corev1.ConfigMap
	if err := c.Get(ctx, key, &adopted); err != nil {
		t.Fatal(err)
	}
	if adopted.UID != before.UID || adopted.Labels["kustomize.toolkit.fluxcd.io/name"] != "infrastructure-owned" || adopted.Data["setting"] != "x" {
		t.Errorf("the ConfigMap after the install: uid %s (before %s), labels %v, data %v; want the same object, the provider's",
			adopted.UID, before.UID, adopted.Labels, adopted.Data)
	}
	t.Logf("ConfigMap %s taken over in place: uid %s, labelled %s", key, adopted.UID, adopted.Labels["kustomize.toolkit.fluxcd.io/name"])
}
