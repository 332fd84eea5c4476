package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

// TestCoreContractFromThisManager: a non-core provider goes on with the
// contract the core provider's preflight read in this manager, before the
// core's status says it, but only for the core's current generation; and
// that contract, not the one of the version the core is leaving, is the
// one it must match.
func TestCoreContractFromThisManager(t *testing.T) {
	setup := func(t *testing.T, dockerContract string, core *v1alpha1.CoreProvider) (*fakeEnv, *v1alpha1.InfrastructureProvider) {
		t.Helper()
		reg := registrytest.New(t, registrytest.Options{})
		art := pushDocker(t, reg, "v1.14.2", dockerContract)
		docker := dockerProvider(art.URL, "v1.14.2")
		docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
		env := newFakeEnv(t, kindFor(docker), core, docker)
		env.r.CorePreflights = NewCorePreflights()
		return env, docker
	}
	compatible := func(t *testing.T, env *fakeEnv, docker v1alpha1.Provider) *metav1.Condition {
		t.Helper()
		if _, err := env.reconcile(docker); err != nil {
			t.Fatal(err)
		}
		return condition(env.get(docker), v1alpha1.CompatibleCondition)
	}
	wroteKustomization := func(env *fakeEnv) bool {
		return slices.ContainsFunc(env.fluxWrites(), func(w write) bool { return w.Verb == "apply" && w.Kind == "Kustomization" })
	}

	t.Run("first install, before the core's status", func(t *testing.T) {
		core := installedCore("v1beta2")
		core.Status = v1alpha1.ProviderStatus{} // not written yet
		env, docker := setup(t, "v1beta2", core)
		if c := compatible(t, env, docker); c == nil || c.Reason != v1alpha1.WaitingForCoreReason || wroteKustomization(env) {
			t.Fatalf("before the core's preflight passed: Compatible = %+v, Kustomization written %v; want waiting, nothing applied", c, wroteKustomization(env))
		}
		env.r.CorePreflights.Pass(core, "v1beta2")
		if c := compatible(t, env, docker); c == nil || c.Status != metav1.ConditionTrue || !wroteKustomization(env) {
			t.Fatalf("once the core's preflight passed here: Compatible = %+v, Kustomization written %v; want True and written", c, wroteKustomization(env))
		}
	})

	t.Run("a pass for another generation of the core", func(t *testing.T) {
		core := installedCore("v1beta2")
		core.Status = v1alpha1.ProviderStatus{}
		env, docker := setup(t, "v1beta2", core)
		older := core.DeepCopy()
		older.Generation = core.Generation - 1
		env.r.CorePreflights.Pass(older, "v1beta2")
		if c := compatible(t, env, docker); c == nil || c.Reason != v1alpha1.WaitingForCoreReason || wroteKustomization(env) {
			t.Fatalf("Compatible = %+v, Kustomization written %v; want waiting: the pass was for generation %d", c, wroteKustomization(env), older.Generation)
		}
	})

	t.Run("the core's new version, not the installed one", func(t *testing.T) {
		core := installedCore("v1beta1") // installed, its status says v1beta1
		core.Generation = 2              // moving to a version whose contract is v1beta2
		env, docker := setup(t, "v1beta2", core)
		if c := compatible(t, env, docker); c == nil || c.Reason != v1alpha1.IncompatibleContractReason {
			t.Fatalf("against the installed core: Compatible = %+v, want IncompatibleContract", c)
		}
		env.r.CorePreflights.Pass(core, "v1beta2")
		if c := compatible(t, env, docker); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("against the core's new version: Compatible = %+v, want True", c)
		}
	})
}

// The core provider's own reconcile records its contract when its
// preflight passes, and drops it when a later preflight of the same
// generation refuses it: here cert-manager, which it depends on, is no
// longer Ready.
func TestCoreReconcileRecordsItsContract(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Options{})
	art := pushCore(t, reg, "v1.14.2", "v1beta2")
	core := coreProvider(art.URL, "v1.14.2")
	core.Spec.DependsOn = []v1alpha1.DependencyReference{{Kind: helmv2.HelmReleaseKind, Name: "cert-manager", Namespace: "cert-manager"}}
	certManager := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "cert-manager", Name: "cert-manager", Generation: 1},
		Status: helmv2.HelmReleaseStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: meta.SucceededReason, Message: "Helm install succeeded", ObservedGeneration: 1, LastTransitionTime: created}}}}
	env := newFakeEnv(t, kindFor(core), core, certManager)
	env.r.CorePreflights = NewCorePreflights()
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if c, ok := env.r.CorePreflights.contract(env.get(core).(*v1alpha1.CoreProvider)); !ok || c != "v1beta2" {
		t.Fatalf("after a passing preflight: contract %q, %v; want v1beta2", c, ok)
	}

	if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(certManager), certManager); err != nil {
		t.Fatal(err)
	}
	certManager.Status.Conditions[0].Status, certManager.Status.Conditions[0].Reason = metav1.ConditionFalse, "UpgradeFailed"
	if err := env.client.Status().Update(ctx, certManager); err != nil {
		t.Fatal(err)
	}
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	got := env.get(core).(*v1alpha1.CoreProvider)
	if c := condition(got, v1alpha1.CompatibleCondition); c == nil || c.Status == metav1.ConditionTrue {
		t.Fatalf("Compatible = %+v, want the core refused while cert-manager is not Ready", c)
	}
	if c, ok := env.r.CorePreflights.contract(got); ok {
		t.Errorf("a core refused at generation %d still vouches for contract %q", got.Generation, c)
	}
}

// A core provider's preflight passing wakes every provider of the other
// kinds once per generation and contract.
func TestCorePreflightsWake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := NewCorePreflights()
	woken := make(chan string, 10)
	h := handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		woken <- e.Object.GetName()
	}}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := cp.source(h)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	core := installedCore("v1beta2")
	cp.Pass(core, "v1beta2")
	cp.Pass(core, "v1beta2") // no news
	next := core.DeepCopy()
	next.Generation++
	cp.Pass(next, "v1beta2")
	for i := range 2 {
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatalf("woken %d times, want twice: once per generation", i)
		}
	}
	select {
	case <-woken:
		t.Error("woken a third time: the same generation and contract again is no news")
	case <-time.After(100 * time.Millisecond):
	}
	if c, ok := cp.contract(next); !ok || c != "v1beta2" {
		t.Errorf("contract = %q, %v", c, ok)
	}
	cp.forget(next.UID)
	if _, ok := cp.contract(next); ok {
		t.Error("a forgotten core still has a contract")
	}
}
