package clusters

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// TestBadInputAndFailingBackendsAreReported walks one control plane
// through what users get wrong and what backends do wrong, each reported
// with a condition that names the object, the problem and the fix, and
// nothing deleted: a CEL expression that does not parse and an undefined
// variable (nothing is rendered), chart values the chart refuses (Flux's
// reason, on the control plane and through Cluster API on the Cluster), a
// backend that says it is not ready (its own reason passed through), a
// status object that does not exist, an endpoint that is not one, a
// kubeconfig Secret without the key, a chart whose cosign signature does
// not verify (unsigned, or signed with another key; signed with the
// trusted key, it installs), and a chart pinned by a digest the repository
// does not hold. The chart is pinned by its digest throughout, and the
// control plane is installed from exactly that artifact.
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
	// The chart is pinned by digest throughout: Flux fetches it by digest.
	pinned := chartDigest(t, ctx)
	cp.Spec.Backend.Chart.Digest = pinned
	cp.Spec.StatusFrom.Ready = "status.ready =="
	infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gamma"}}
	for _, o := range []client.Object{cp, infra} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cluster := framework.ContractCluster(ns, "gamma", nil)
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

	// Fixed, it becomes Ready: nothing was lost on the way, and the
	// control plane runs exactly the pinned chart.
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Kubeconfig.SecretName = "${CLUSTER_NAME}-admin-kubeconfig"
	})
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	clusterCondition(t, ctx, c, key, "Available", metav1.ConditionTrue, 2*time.Minute)
	installedPinned(t, ctx, c, key, pinned)

	// 9. A digest the repository does not hold: Flux's refusal to pull
	// it, naming the source and the digest; the installed release stays.
	wrong := "sha256:" + strings.Repeat("0", 64)
	start := time.Now()
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) { cp.Spec.Backend.Chart.Digest = wrong })
	cond = cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, sourcev1.OCIPullFailedReason, 2*time.Minute)
	contains(cond, "OCIRepository failures/controlplane-gamma", wrong, "spec.backend.chart.digest")
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionFalse, sourcev1.OCIPullFailedReason, time.Minute)
	if !env.HCPSimRunning(ns, "gamma") {
		t.Fatal("the control plane stopped when its chart's pin went wrong")
	}
	t.Logf("a digest the repository does not hold, reported after %s: %s: %s", time.Since(start).Round(100*time.Millisecond), cond.Reason, cond.Message)
	start = time.Now()
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) { cp.Spec.Backend.Chart.Digest = pinned })
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	t.Logf("Ready again %s after the right digest was pinned", time.Since(start).Round(100*time.Millisecond))

	// 10. The backend verifies cosign signatures. The pinned chart is
	// unsigned, then signed with a key the Secret does not hold: both are
	// refused by source-controller with its reason, the OCIRepository
	// named and what to do. Signed with the trusted key too, it installs:
	// the artifact stays the pinned one throughout.
	trustedKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cosign-keys"}, Data: map[string][]byte{"cosign.pub": trustedKey.PublicPEM}}
	if err := c.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	update(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Backend.Chart.Verify = &providersv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: keys.Name}}
	})
	source := client.ObjectKey{Namespace: ns, Name: "controlplane-gamma"}
	for _, signer := range []*framework.CosignKey{nil, otherKey} {
		what := "unsigned"
		if signer != nil {
			what = "signed with another key"
			if err := framework.CosignSign(ctx, strings.TrimPrefix(chartURL, "oci://")+"@"+pinned, signer); err != nil {
				t.Fatal(err)
			}
			// As `flux reconcile source oci` does: the source checks the
			// new signature at once, not after its back-off.
			reconcileSource(t, ctx, c, source)
		}
		cond = cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, sourcev1.VerificationError, 2*time.Minute)
		contains(cond, "OCIRepository failures/controlplane-gamma", "verify", "cosign sign --key", "verify.secretRef")
		t.Logf("the chart %s refused: %s", what, cond.Message)
	}

	// Signed with the trusted key too, it becomes Ready again.
	if err := framework.CosignSign(ctx, strings.TrimPrefix(chartURL, "oci://")+"@"+pinned, trustedKey); err != nil {
		t.Fatal(err)
	}
	reconcileSource(t, ctx, c, source)
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	clusterCondition(t, ctx, c, key, "Available", metav1.ConditionTrue, 2*time.Minute)
	installedPinned(t, ctx, c, key, pinned)

	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, cluster, 3*time.Minute)
}

// chartDigest is the digest of the simulated operator's chart in the
// plane's registry, as `crane digest` would print it.
func chartDigest(t *testing.T, ctx context.Context) string {
	t.Helper()
	repo, err := remote.NewRepository(strings.TrimPrefix(chartURL, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	desc, err := repo.Resolve(ctx, hcpsim.ChartVersion)
	if err != nil {
		t.Fatalf("resolving %s:%s: %v", chartURL, hcpsim.ChartVersion, err)
	}
	return desc.Digest.String()
}

// installedPinned checks that the control plane's chart came from the
// pinned digest: the OCIRepository asks for it, its artifact is it, and
// the HelmRelease's release was made from it.
func installedPinned(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey, digest string) {
	t.Helper()
	name := client.ObjectKey{Namespace: key.Namespace, Name: "controlplane-" + key.Name}
	var repo sourcev1.OCIRepository
	if err := c.Get(ctx, name, &repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != digest || repo.Status.Artifact == nil || !strings.HasSuffix(repo.Status.Artifact.Revision, digest) {
		t.Fatalf("OCIRepository %s: reference %+v, artifact %+v; want the pinned %s", name, repo.Spec.Reference, repo.Status.Artifact, digest)
	}
	var hr helmv2.HelmRelease
	if err := c.Get(ctx, name, &hr); err != nil {
		t.Fatal(err)
	}
	if latest := hr.Status.History.Latest(); latest == nil || latest.OCIDigest != digest {
		t.Fatalf("HelmRelease %s: release history %+v; want the chart of the pinned %s", name, hr.Status.History, digest)
	}
}

// reconcileSource asks source-controller to reconcile the OCIRepository
// key now, as `flux reconcile source oci` does, and waits until it has.
func reconcileSource(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	repo := &sourcev1.OCIRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(repo.DeepCopy())
	if repo.Annotations == nil {
		repo.Annotations = map[string]string{}
	}
	repo.Annotations[meta.ReconcileRequestAnnotation] = token
	if err := c.Patch(ctx, repo, patch); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, key, repo); err != nil {
			t.Fatal(err)
		}
		if repo.Status.LastHandledReconcileAt == token {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("OCIRepository %s did not handle the reconcile request %s within a minute", key, token)
}
