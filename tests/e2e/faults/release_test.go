package faults

import (
	"context"
	"os"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestManagerRestartedWithTheReleaseHostDown installs the real
// kubeadm bootstrap provider from its GitHub release (through the stand-in
// for github.com), then SIGKILLs the manager, takes the release host down
// and starts the manager again with empty artifact storage (a new pod):
// it serves Flux the installed release again from its copy in the
// manager's namespace, kustomize-controller fetches and applies it, and
// the provider stays Ready; deleting the provider removes the copy.
func TestManagerRestartedWithTheReleaseHostDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	const ns = "kubeadm-bootstrap-from-release"
	framework.EnsureNamespace(t, ctx, c, ns)
	p := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: coreVersion, Source: &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{
			URL: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/bootstrap-components.yaml"}}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	deleted := false
	defer func() {
		if !deleted {
			framework.DeleteProviderAndWait(t, ctx, c, p)
		}
	}()
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	name := "bootstrap-kubeadm"
	var ea sourcev1.ExternalArtifact
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ea); err != nil || ea.Status.Artifact == nil {
		t.Fatalf("no served ExternalArtifact %s/%s: %v %+v", ns, name, err, ea.Status)
	}
	url := ea.Status.Artifact.URL
	copies := func() []corev1.ConfigMap {
		var list corev1.ConfigMapList
		if err := c.List(ctx, &list, client.InNamespace(plane.ManagerNamespace), client.HasLabels{"providers.capwright.io/release-copy"}); err != nil {
			t.Fatal(err)
		}
		var mine []corev1.ConfigMap
		for _, cm := range list.Items {
			if cm.Annotations["providers.capwright.io/provider"] == "BootstrapProvider "+ns+"/kubeadm" {
				mine = append(mine, cm)
			}
		}
		return mine
	}
	if kept := copies(); len(kept) == 0 || kept[0].Annotations["providers.capwright.io/digest"] != ea.Status.Artifact.Digest {
		t.Fatalf("the manager keeps no copy of the served release %s in %s: %+v", ea.Status.Artifact.Digest, plane.ManagerNamespace, kept)
	}

	manager.Kill()
	t.Cleanup(func() { _ = manager.Restart(context.Background()) })
	if err := releases.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = releases.Start() })
	if err := os.RemoveAll(manager.ArtifactStorage()); err != nil {
		t.Fatal(err)
	}
	if err := manager.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return framework.GetOK(ctx, url) == nil, nil
	})
	if err != nil {
		t.Fatalf("the installed release is not served again with the release host down: GET %s: %v", url, framework.GetOK(ctx, url))
	}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := framework.RequestReconcile(ctx, c, ks); err != nil {
		t.Fatal(err)
	}
	requested := ks.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			return false, err
		}
		ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		return ks.Status.LastHandledReconcileAt == requested && ready != nil && ready.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("kustomize-controller does not apply the release served again: %+v", ks.Status.Conditions)
	}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)

	if err := releases.Start(); err != nil {
		t.Fatal(err)
	}
	framework.DeleteProviderAndWait(t, ctx, c, p)
	deleted = true
	if left := copies(); len(left) != 0 {
		t.Errorf("the release copy outlives the deleted provider: %d ConfigMaps", len(left))
	}
}
