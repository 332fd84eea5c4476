package clusters

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// TestClusterClassTopologyUpgradesThroughTheBackend: a ClusterClass whose
// control plane and infrastructure are the contract kinds' Templates; a
// Cluster of that class gets its control plane from the chart at the
// topology's version, a ClusterClass variable reaches the chart's values,
// and a topology version bump is an upgrade through the backend that the
// control plane reports only once the backend runs the new version.
func TestClusterClassTopologyUpgradesThroughTheBackend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)
	ns := "topology"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cpt := &clustersv1alpha1.CapwrightControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted"},
		Spec: clustersv1alpha1.CapwrightControlPlaneTemplateSpec{Template: clustersv1alpha1.CapwrightControlPlaneTemplateResource{
			Spec: controlPlaneSpec(map[string]any{"version": "${KUBERNETES_VERSION}", "clusterName": "${CLUSTER_NAME}", "clusterNamespace": "${TOPOLOGY_owner}"}),
		}},
	}
	ct := &clustersv1alpha1.CapwrightClusterTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted"}}
	for _, o := range []client.Object{cpt, ct} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	class := &unstructured.Unstructured{}
	class.SetGroupVersionKind(clusterClassGVK)
	class.SetNamespace(ns)
	class.SetName("hosted")
	ref := func(kind string) map[string]any {
		return map[string]any{"apiVersion": clustersv1alpha1.GroupVersion.String(), "kind": kind, "name": "hosted"}
	}
	_ = unstructured.SetNestedMap(class.Object, map[string]any{
		"controlPlane":   map[string]any{"templateRef": ref("CapwrightControlPlaneTemplate")},
		"infrastructure": map[string]any{"templateRef": ref("CapwrightClusterTemplate")},
		"variables": []any{map[string]any{"name": "owner", "required": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "string"}}}},
	}, "spec")
	if err := framework.CreateWithRetry(ctx, c, class); err != nil {
		t.Fatal(err)
	}

	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	cluster.SetNamespace(ns)
	cluster.SetName("beta")
	_ = unstructured.SetNestedMap(cluster.Object, map[string]any{
		"classRef":  map[string]any{"name": "hosted"},
		"version":   "v1.31.0",
		"variables": []any{map[string]any{"name": "owner", "value": "team-beta"}},
	}, "spec", "topology")
	start := time.Now()
	// The ClusterClass controller must have reconciled the class (its
	// variables) before the Cluster webhook accepts the topology.
	eventually(t, ctx, 2*time.Minute, "a Cluster of ClusterClass topology/hosted", func(ctx context.Context) (bool, string) {
		if err := c.Create(ctx, cluster.DeepCopy()); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	key := client.ObjectKey{Namespace: ns, Name: "beta"}
	cp := waitControlPlaneOf(t, ctx, c, key)
	cpKey := client.ObjectKeyFromObject(cp)
	cpCondition(t, ctx, c, cpKey, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	clusterCondition(t, ctx, c, key, "Available", metav1.ConditionTrue, 2*time.Minute)
	t.Logf("Cluster of a ClusterClass applied → Available in %s", time.Since(start).Round(100*time.Millisecond))
	sim := simulated(t, ctx, c, ns, "beta")
	if v, _, _ := unstructured.NestedString(sim.Object, "spec", "version"); v != "v1.31.0" {
		t.Fatalf("SimulatedControlPlane spec.version = %q, want the topology's v1.31.0", v)
	}
	if owner := sim.GetAnnotations()["hcpsim.plane.capwright.io/cluster-namespace"]; owner != "team-beta" {
		t.Fatalf("the ClusterClass variable owner did not reach the chart's values: annotation %q", owner)
	}

	// The upgrade: Cluster API moves the control plane's spec.version, the
	// chart is rendered again, and status.version follows only once the
	// backend is ready at it.
	if err := c.Get(ctx, key, cluster); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	_ = unstructured.SetNestedField(cluster.Object, "v1.32.0", "spec", "topology", "version")
	if err := c.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	upgrade := time.Now()
	sawUpgrading := false
	eventually(t, ctx, 3*time.Minute, "the control plane at v1.32.0", func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, cpKey, cp); err != nil {
			return false, err.Error()
		}
		sim := simulated(t, ctx, c, ns, "beta")
		running, _, _ := unstructured.NestedString(sim.Object, "status", "version")
		if cp.Spec.Version == "v1.32.0" && cp.Status.Version == "v1.31.0" {
			sawUpgrading = true
			if !versionsAre(cp, "v1.31.0") {
				t.Errorf("while upgrading, status.versions %+v, want [v1.31.0] (Cluster API v1.14's contract)", cp.Status.Versions)
			}
		}
		if cp.Status.Version == "v1.32.0" && running != "v1.32.0" {
			t.Fatalf("the control plane reports v1.32.0 while the backend runs %q", running)
		}
		return cp.Status.Version == "v1.32.0", "spec.version " + cp.Spec.Version + ", status.version " + cp.Status.Version + ", backend runs " + running
	})
	if !sawUpgrading {
		t.Error("never saw the control plane report the old version while the backend upgraded")
	}
	if !versionsAre(cp, "v1.32.0") {
		t.Errorf("upgraded: status.versions %+v, want [v1.32.0] (Cluster API v1.14's contract)", cp.Status.Versions)
	}
	t.Logf("topology v1.31.0 → v1.32.0: control plane reports the new version after %s", time.Since(upgrade).Round(100*time.Millisecond))
	cpCondition(t, ctx, c, cpKey, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)

	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, cluster, 3*time.Minute)
	if env.HCPSimRunning(ns, "beta") {
		t.Fatal("the simulated control plane still runs after its Cluster was deleted")
	}
}

// waitControlPlaneOf waits until the Cluster names its control plane
// (topology creates it) and returns it.
func waitControlPlaneOf(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) *clustersv1alpha1.CapwrightControlPlane {
	t.Helper()
	cp := &clustersv1alpha1.CapwrightControlPlane{}
	eventually(t, ctx, 2*time.Minute, "the control plane of Cluster "+key.String(), func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(clusterGVK)
		if err := c.Get(ctx, key, u); err != nil {
			return false, err.Error()
		}
		name, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneRef", "name")
		if name == "" {
			return false, "no spec.controlPlaneRef yet"
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, cp); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return cp
}

// simulated is the SimulatedControlPlane the chart made for a Cluster.
func simulated(t *testing.T, ctx context.Context, c client.Client, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(hcpsim.GVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("SimulatedControlPlane %s/%s: %v", namespace, name, err)
	}
	return u
}

// versionsAre tells whether the control plane's status.versions is the
// one entry version, without replicas (a hosted control plane counts
// none), as Cluster API v1.14's ControlPlane contract asks.
func versionsAre(cp *clustersv1alpha1.CapwrightControlPlane, version string) bool {
	return len(cp.Status.Versions) == 1 && cp.Status.Versions[0].Version == version && cp.Status.Versions[0].Replicas == 0
}
