package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestSmokeFluxAppliesOCIArtifact proves the plane is real: an artifact
// with one tar+gzip layer in the in-process registry is fetched by the real
// source-controller, applied by the real kustomize-controller, and its
// Deployment rolls out on kwok nodes.
func TestSmokeFluxAppliesOCIArtifact(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	d, err := framework.Deliver(ctx, c, env.Registry.Host, plane.FluxNamespace, "smoke", map[string][]byte{
		"app.yaml": []byte(framework.SmokeManifests),
	})
	if err != nil {
		t.Fatal(err)
	}
	repo, ks, pushed := d.Repository, d.Kustomization, d.Artifact
	wantRevision := "v1@" + pushed.Digest
	if repo.Status.Artifact == nil || repo.Status.Artifact.Revision != wantRevision {
		t.Fatalf("OCIRepository artifact = %+v, want revision %s", repo.Status.Artifact, wantRevision)
	}
	if ks.Status.LastAppliedRevision != wantRevision {
		t.Fatalf("Kustomization lastAppliedRevision = %q, want %q", ks.Status.LastAppliedRevision, wantRevision)
	}
	t.Logf("source-controller fetched %s; kustomize-controller: %s", repo.Status.Artifact.Revision, readyMessage(ks))
	assertInventory(t, ks, "smoke_smoke-app_apps_Deployment", "smoke_smoke-settings__ConfigMap", "_smoke__Namespace")

	// kustomize-controller's wait already required the Deployment to be
	// healthy; check the API server's own view too.
	var dep appsv1.Deployment
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke-app"}, &dep); err != nil {
			return false, nil
		}
		return deploymentAvailable(&dep) && dep.Status.ReadyReplicas == 2, nil
	})
	if err != nil {
		t.Fatalf("Deployment smoke/smoke-app not Available with 2 ready replicas: %+v", dep.Status)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("smoke"), client.MatchingLabels{"app": "smoke-app"}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || !strings.HasPrefix(pod.Spec.NodeName, "kwok-node-") {
			t.Fatalf("pod %s: phase %s on node %q, want Running on a kwok node", pod.Name, pod.Status.Phase, pod.Spec.NodeName)
		}
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke-settings"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "hello from an OCI artifact" {
		t.Fatalf("ConfigMap data = %v", cm.Data)
	}
	if cm.Labels["kustomize.toolkit.fluxcd.io/name"] != "smoke" {
		t.Fatalf("ConfigMap labels = %v, want kustomize-controller's ownership labels", cm.Labels)
	}
}

func deploymentAvailable(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func readyMessage(ks *kustomizev1.Kustomization) string {
	for _, c := range ks.Status.Conditions {
		if c.Type == "Ready" {
			return c.Message
		}
	}
	return ""
}

func assertInventory(t *testing.T, ks *kustomizev1.Kustomization, ids ...string) {
	t.Helper()
	if ks.Status.Inventory == nil {
		t.Fatalf("Kustomization %s has no inventory", ks.Name)
	}
	have := map[string]bool{}
	for _, e := range ks.Status.Inventory.Entries {
		have[e.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			t.Fatalf("Kustomization %s inventory lacks %s: %+v", ks.Name, id, ks.Status.Inventory.Entries)
		}
	}
}
