package clusters

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestBadInputAndFailingBackendsAreReported walks one control plane
// through what users get wrong and what backends do wrong, each reported
// with a condition that names the object, the problem and the fix, and
// nothing deleted: a CEL expression that does not parse and an undefined
// variable (nothing is rendered), chart values the chart refuses (Flux's
// reason, on the control plane and through Cluster API on the Cluster), a
// backend that says it is not ready (its own reason passed through), a
// status object that does not exist, an endpoint that is not one, and a
// kubeconfig Secret without the key.
func TestBadInputAndFailingBackendsAreReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)
	ns := "failures"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "gamma"}
	cp := controlPlane(ns, "gamma", "v1.31.0", nil)
	cp.Spec.StatusFrom.Ready = "status.ready =="
	infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gamma"}}
	for _, o := range []client.Object{cp, infra} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cluster := newCluster(ns, "gamma", nil)
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatal(err)
	}
	// The controllers write the object meanwhile (its status, Cluster
	// API's labels): a change is applied to what is current.
	update := func(change func(*clustersv1alpha1.CapwrightControlPlane)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, key, cp); err != nil {
				return err
			}
			change(cp)
			return c.Update(ctx, cp)
		}); err != nil {
			t.Fatal(err)
		}
	}
	contains := func(cond metav1.Condition, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(cond.Message, p) {
				t.Fatalf("%s %s message %q does not say %q", cond.Type, cond.Reason, cond.Message, p)
			}
		}
	}

	// 1. A ready expression that does not parse: refused, nothing written.
	cond := cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.InvalidSpecReason, time.Minute)
	contains(cond, "CapwrightControlPlane failures/gamma", "spec.statusFrom.ready")
	cpCondition(t, ctx, c, key, "Stalled", metav1.ConditionTrue, clustersv1alpha1.InvalidSpecReason, time.Minute)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "controlplane-gamma"}, &helmv2.HelmRelease{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a HelmRelease was written for a spec that cannot be rendered (err %v)", err)
	}

	// 2. An undefined variable in the values.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.StatusFrom.Ready = ""
		cp.Spec.Backend.Chart.Values.Raw = []byte(`{"version":"${KUBERNETES_VERSION}","clusterName":"${CLUSTER_ID}"}`)
	})
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.InvalidSpecReason, time.Minute)
	contains(cond, "spec.backend.chart.values.clusterName uses ${CLUSTER_ID}, which is not defined", "${CLUSTER_NAME}")

	// 3. Values the chart's schema refuses: Flux's reason, on the control
	// plane and on the Cluster.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Backend.Chart.Values.Raw = []byte(`{"version":"1.31","clusterName":"${CLUSTER_NAME}"}`)
	})
	// (Until the source has its artifact, helm-controller says
	// SourceNotReady: that is progress, not this failure.)
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, "InstallFailed", 3*time.Minute)
	contains(cond, "HelmRelease failures/controlplane-gamma", "values don't meet the specifications of the schema", "/version")
	available := cpCondition(t, ctx, c, key, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, cond.Reason, time.Minute)
	eventually(t, ctx, time.Minute, "Flux's reason on the Cluster's ControlPlaneAvailable", func(ctx context.Context) (bool, string) {
		m := clusterCondition(t, ctx, c, key, "ControlPlaneAvailable", metav1.ConditionFalse, time.Minute)
		return m["reason"] == available.Reason && strings.Contains(fmt.Sprint(m["message"]), "controlplane-gamma"), fmt.Sprint(m)
	})
	t.Logf("chart values refused: %s: %s", cond.Reason, cond.Message)

	// 4. The backend says it is not ready, with its own reason.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Backend.Chart.Values.Raw = []byte(`{"version":"${KUBERNETES_VERSION}","failure":{"reason":"QuotaExceeded","message":"the hosting account has no room for another control plane"}}`)
	})
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, "QuotaExceeded", 3*time.Minute)
	contains(cond, "no room for another control plane")
	eventually(t, ctx, time.Minute, "the backend's reason on the Cluster", func(ctx context.Context) (bool, string) {
		m := clusterCondition(t, ctx, c, key, "ControlPlaneAvailable", metav1.ConditionFalse, time.Minute)
		return m["reason"] == "QuotaExceeded" || strings.Contains(fmt.Sprint(m["message"]), "no room"), fmt.Sprint(m)
	})

	// 5. A status object that does not exist.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Backend.Chart.Values.Raw = []byte(`{"version":"${KUBERNETES_VERSION}"}`)
		cp.Spec.StatusFrom.Name = "${CLUSTER_NAME}-cp"
	})
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.StatusObjectNotFoundReason, 2*time.Minute)
	contains(cond, "SimulatedControlPlane failures/gamma-cp", "spec.statusFrom")

	// 6. An endpoint that is not one.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.StatusFrom.Name = "${CLUSTER_NAME}"
		cp.Spec.StatusFrom.Endpoint = `"tcp://" + status.endpoint`
	})
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.StatusInvalidReason, 2*time.Minute)
	contains(cond, "spec.statusFrom.endpoint", "neither host[:port] nor an https:// URL")

	// 7. A kubeconfig Secret without the key.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.StatusFrom.Endpoint = ""
		cp.Spec.Kubeconfig.Key = "kubeconfig"
	})
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionFalse, clustersv1alpha1.KubeconfigKeyMissingReason, 2*time.Minute)
	contains(cond, `Secret failures/gamma-admin-kubeconfig has no key "kubeconfig"`, "admin.conf")
	if strings.Contains(cond.Message, "BEGIN") || strings.Contains(cond.Message, "certificate-authority-data") {
		t.Fatalf("a condition carries the kubeconfig: %s", cond.Message)
	}

	// 8. An undefined variable in the kubeconfig Secret's name: refused
	// like any spec that cannot be rendered (Stalled, no retry storm).
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Kubeconfig.Key = "admin.conf"
		cp.Spec.Kubeconfig.SecretName = "${CLUSTER}-admin-kubeconfig"
	})
	cond = cpCondition(t, ctx, c, key, "Stalled", metav1.ConditionTrue, clustersv1alpha1.InvalidSpecReason, time.Minute)
	contains(cond, "spec.kubeconfig.secretName uses ${CLUSTER}, which is not defined")

	// Fixed, it becomes Ready: nothing was lost on the way.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Kubeconfig.SecretName = "${CLUSTER_NAME}-admin-kubeconfig"
	})
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	clusterCondition(t, ctx, c, key, "Available", metav1.ConditionTrue, 2*time.Minute)

	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, cluster, 3*time.Minute)
}
