package plane

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// TestHCPSim runs the simulated hosted-control-plane operator on a plane:
// a SimulatedControlPlane gets a reachable API server and its kubeconfig
// Secret, a version change passes through Upgrading, a simulated failure
// is reported, and deletion stops the processes before the finalizer goes.
func TestHCPSim(t *testing.T) {
	bin := binDir(t)
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	p, err := Start(ctx, Options{BinDir: bin, RunDir: runDir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	t.Logf("plane ready in %s", time.Since(began).Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("hcpsim log: %s", p.LogPath("hcpsim"))
		}
	}()
	for range 2 { // idempotent
		if err := p.StartHCPSim(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	scps := dyn.Resource(hcpsim.GVR).Namespace("default")

	// Creation: a real API server, its kubeconfig Secret, status Ready.
	created, err := scps.Create(ctx, newSCP("alpha", "v1.31.0", "1s"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	alpha := waitSCP(ctx, t, scps, "alpha", "ready", func(st scpStatus) bool { return st.Ready })
	t.Logf("alpha ready in %s", time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(alpha.status.Endpoint, "https://127.0.0.1:") || alpha.status.Version != "v1.31.0" ||
		alpha.status.Reason != hcpsim.ReasonReady || alpha.status.ObservedGeneration != created.GetGeneration() {
		t.Errorf("status of a ready control plane: %+v", alpha.status)
	}
	if !slices.Contains(alpha.obj.GetFinalizers(), hcpsim.Finalizer) {
		t.Errorf("finalizers %v lack %s", alpha.obj.GetFinalizers(), hcpsim.Finalizer)
	}
	secret, err := kube.CoreV1().Secrets("default").Get(ctx, "alpha-admin-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := secret.Data["value"]; ok || len(secret.Data) != 1 {
		t.Errorf("kubeconfig Secret keys: want only %s, got %v", hcpsim.KubeconfigSecretKey, slices.Collect(maps.Keys(secret.Data)))
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].UID != created.GetUID() || refs[0].Kind != hcpsim.Kind {
		t.Errorf("kubeconfig Secret owner references: %+v", refs)
	}
	hosted := hostedClient(t, secret)
	requireServes(ctx, t, hosted)
	if config, _ := clientcmd.RESTConfigFromKubeConfig(secret.Data[hcpsim.KubeconfigSecretKey]); config.Host != alpha.status.Endpoint {
		t.Errorf("kubeconfig names %s, status.endpoint %s", config.Host, alpha.status.Endpoint)
	}
	pids := p.HCPSimPIDs("default", "alpha")
	if len(pids) != 2 || !p.HCPSimRunning("default", "alpha") {
		t.Fatalf("want etcd and kube-apiserver running for default/alpha, got pids %v", pids)
	}

	// A version change: Upgrading at the old version, then Ready at the new.
	patchSCP(ctx, t, scps, "alpha", `{"spec":{"version":"v1.32.0"}}`)
	upgrading := waitSCP(ctx, t, scps, "alpha", "upgrading", func(st scpStatus) bool { return st.Reason == hcpsim.ReasonUpgrading })
	if upgrading.status.Ready || upgrading.status.Version != "v1.31.0" ||
		!strings.Contains(upgrading.status.Message, "v1.31.0") || !strings.Contains(upgrading.status.Message, "v1.32.0") {
		t.Errorf("status while upgrading: %+v", upgrading.status)
	}
	upgraded := waitSCP(ctx, t, scps, "alpha", "upgraded", func(st scpStatus) bool { return st.Ready && st.Version == "v1.32.0" })
	if upgraded.status.ObservedGeneration != upgraded.obj.GetGeneration() || upgraded.status.Endpoint != alpha.status.Endpoint {
		t.Errorf("status after the upgrade: %+v (generation %d)", upgraded.status, upgraded.obj.GetGeneration())
	}
	requireServes(ctx, t, hosted)

	// A simulated failure of the backend: reported, and what runs keeps running.
	patchSCP(ctx, t, scps, "alpha", `{"spec":{"failure":{"reason":"QuotaExceeded","message":"no capacity left"}}}`)
	failed := waitSCP(ctx, t, scps, "alpha", "failed", func(st scpStatus) bool { return st.Reason == "QuotaExceeded" })
	if failed.status.Ready || failed.status.Message != "no capacity left" || !p.HCPSimRunning("default", "alpha") {
		t.Errorf("status of a failing backend: %+v", failed.status)
	}
	patchSCP(ctx, t, scps, "alpha", `{"spec":{"failure":null}}`)
	waitSCP(ctx, t, scps, "alpha", "recovered", func(st scpStatus) bool { return st.Ready && st.Version == "v1.32.0" })

	// An object that fails from the start gets no processes and no Secret.
	broken := newSCP("broken", "v1.31.0", "")
	_ = unstructured.SetNestedMap(broken.Object, map[string]any{"message": "backend down"}, "spec", "failure")
	if _, err := scps.Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	brokenNow := waitSCP(ctx, t, scps, "broken", "failed", func(st scpStatus) bool { return st.Reason == hcpsim.FailureReason })
	if brokenNow.status.Ready || brokenNow.status.Message != "backend down" || brokenNow.status.Endpoint != "" || brokenNow.status.Version != "" {
		t.Errorf("status of an object failing from the start: %+v", brokenNow.status)
	}
	if p.HCPSimRunning("default", "broken") {
		t.Error("hcpsim started a control plane for an object whose backend fails")
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "broken-admin-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kubeconfig Secret of an object failing from the start: %v", err)
	}

	// Deletion: the processes go, then the object and (garbage collected)
	// its Secret.
	start = time.Now()
	for _, name := range []string{"alpha", "broken"} {
		if err := scps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pollUntil(ctx, t, "SimulatedControlPlanes deleted", func(ctx context.Context) (bool, error) {
		list, err := scps.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	t.Logf("alpha and broken deleted in %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d of default/alpha still exists after the object's deletion (kill -0: %v)", pid, err)
		}
	}
	if p.HCPSimRunning("default", "alpha") || p.HCPSimPIDs("default", "alpha") != nil {
		t.Error("hcpsim still reports a control plane for the deleted default/alpha")
	}
	pollUntil(ctx, t, "kubeconfig Secret garbage collected", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Secrets("default").Get(ctx, "alpha-admin-kubeconfig", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// A control plane still running when the plane stops goes with it.
	if _, err := scps.Create(ctx, newSCP("left", "v1.31.0", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSCP(ctx, t, scps, "left", "ready", func(st scpStatus) bool { return st.Ready })
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	requireNothingRunning(t, runDir)
}

func newSCP(name, version, upgradeDelay string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(hcpsim.GVK)
	u.SetNamespace("default")
	u.SetName(name)
	spec := map[string]any{"version": version, "kubeconfigSecretName": name + "-admin-kubeconfig"}
	if upgradeDelay != "" {
		spec["upgradeDelay"] = upgradeDelay
	}
	_ = unstructured.SetNestedMap(u.Object, spec, "spec")
	return u
}

type scpStatus struct {
	Ready              bool
	Endpoint           string
	Version            string
	Reason             string
	Message            string
	ObservedGeneration int64
}

type observedSCP struct {
	obj    *unstructured.Unstructured
	status scpStatus
}

// waitSCP polls the SimulatedControlPlane name until its status satisfies
// cond, and returns it.
func waitSCP(ctx context.Context, t *testing.T, scps dynamic.ResourceInterface, name, what string, cond func(scpStatus) bool) observedSCP {
	t.Helper()
	var last observedSCP
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		obj, err := scps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last.obj = obj
		last.status.Ready, _, _ = unstructured.NestedBool(obj.Object, "status", "ready")
		last.status.Endpoint, _, _ = unstructured.NestedString(obj.Object, "status", "endpoint")
		last.status.Version, _, _ = unstructured.NestedString(obj.Object, "status", "version")
		last.status.Reason, _, _ = unstructured.NestedString(obj.Object, "status", "reason")
		last.status.Message, _, _ = unstructured.NestedString(obj.Object, "status", "message")
		last.status.ObservedGeneration, _, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		return cond(last.status), nil
	})
	if err != nil {
		t.Fatalf("SimulatedControlPlane default/%s not %s; last status %+v", name, what, last.status)
	}
	return last
}

func patchSCP(ctx context.Context, t *testing.T, scps dynamic.ResourceInterface, name, data string) {
	t.Helper()
	if _, err := scps.Patch(ctx, name, types.MergePatchType, []byte(data), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func pollUntil(ctx context.Context, t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func hostedClient(t *testing.T, secret *corev1.Secret) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[hcpsim.KubeconfigSecretKey])
	if err != nil {
		t.Fatalf("kubeconfig in Secret %s: %v", secret.Name, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// requireServes lists the hosted cluster's namespaces.
func requireServes(ctx context.Context, t *testing.T, hosted kubernetes.Interface) {
	t.Helper()
	namespaces, err := hosted.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing namespaces of the hosted control plane: %v", err)
	}
	var names []string
	for _, ns := range namespaces.Items {
		names = append(names, ns.Name)
	}
	if !slices.Contains(names, "kube-system") {
		t.Errorf("the hosted control plane lists namespaces %v, without kube-system", names)
	}
}
