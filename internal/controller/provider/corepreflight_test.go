package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
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
		env.r.CorePreflights.pass(core, "v1beta2")
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
		env.r.CorePreflights.pass(older, "v1beta2")
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
		env.r.CorePreflights.pass(core, "v1beta2")
		if c := compatible(t, env, docker); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("against the core's new version: Compatible = %+v, want True", c)
		}
	})
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
	cp.pass(core, "v1beta2")
	cp.pass(core, "v1beta2") // no news
	next := core.DeepCopy()
	next.Generation++
	cp.pass(next, "v1beta2")
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
	cp.forget(next)
	if _, ok := cp.contract(next); ok {
		t.Error("a forgotten core still has a contract")
	}
}
