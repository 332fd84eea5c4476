package providers

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// idleRuns is how many runs of every provider's Flux objects the idle
// check asks for, and idleWindow how long the check watches at least:
// longer than the manager's --resync-interval (30s, main_test.go), so
// that it resyncs every provider in the window too.
const (
	idleRuns   = 2
	idleWindow = 35 * time.Second
)

// nothingWrittenWhileIdle checks that, while Flux re-fetches, re-applies
// and re-checks every provider's objects twice (and the manager resyncs),
// the manager writes nothing: Flux's routine runs are no news. Those runs
// come every spec.interval, at least a minute (the API server refuses
// less), so the check does not wait for them: it asks Flux for each run
// itself, as `flux reconcile` does, with reconcile.fluxcd.io/requestedAt
// on the OCIRepository and the Kustomization — the run Flux then makes is
// the one the interval brings, and the request is Flux's to acknowledge,
// not the manager's.
func nothingWrittenWhileIdle(t *testing.T, ctx context.Context, c client.Client, providers []v1alpha1.Provider) {
	for _, p := range providers {
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
	}
	time.Sleep(2 * time.Second)
	since := time.Now()
	for run := 1; run <= idleRuns; run++ {
		for _, p := range providers {
			name := render.ObjectName(p.ProviderType(), p.GetName())
			for _, obj := range []client.Object{
				&sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: name}},
				&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: name}},
			} {
				fluxRun(t, ctx, c, obj)
			}
		}
	}
	time.Sleep(max(idleWindow-time.Since(since), 8*time.Second))

	// Flux did run: kustomize-controller wrote the status of every
	// provider's Kustomization at least twice in the window.
	flux, err := env.Writes(plane.AdminUser, since)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, w := range flux {
		if w.Resource == "kustomizations" && w.Subresource == "status" {
			runs[w.Namespace+"/"+w.Name]++
		}
	}
	for _, p := range providers {
		key := p.GetNamespace() + "/" + render.ObjectName(p.ProviderType(), p.GetName())
		if runs[key] < idleRuns {
			t.Fatalf("kustomize-controller wrote the status of Kustomization %s %d times in %s; the check needs at least %d runs (all: %v)",
				key, runs[key], time.Since(since).Round(time.Second), idleRuns, runs)
		}
	}
	noManagerWrites(t, since, fmt.Sprintf("while Flux re-reconciled (%v status writes per Kustomization), the manager", runs))
	t.Logf("Flux reconciled each provider's Kustomization %v times in %s; the manager wrote nothing", runs, time.Since(since).Round(time.Second))
}

// fluxRun asks Flux to reconcile its object obj now, as `flux reconcile`
// does, and waits until it handled the request and is Ready.
func fluxRun(t *testing.T, ctx context.Context, c client.Client, obj client.Object) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	if err := c.Get(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	if err := framework.RequestReconcile(ctx, c, obj); err != nil {
		t.Fatal(err)
	}
	token := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, nil
		}
		var handled string
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *sourcev1.OCIRepository:
			handled, conds = o.Status.LastHandledReconcileAt, o.Status.Conditions
		case *kustomizev1.Kustomization:
			handled, conds = o.Status.LastHandledReconcileAt, o.Status.Conditions
		}
		return handled == token && apimeta.IsStatusConditionTrue(conds, meta.ReadyCondition), nil
	})
	if err != nil {
		t.Fatalf("%T %s did not handle the reconcile request %s and turn Ready: %v", obj, key, token, err)
	}
}

// noClusterWatch checks that, with Cluster API served (the core provider
// installed it) but no Tenant and no contract object, the manager never
// watched Clusters: a management cluster that only runs providers keeps
// no cache of them. The plane's audit log records every watch of
// Clusters; kube-controller-manager's garbage collector opens one, which
// shows the record works.
func noClusterWatch(t *testing.T, ctx context.Context, c client.Client) {
	clusters := &unstructured.UnstructuredList{}
	clusters.SetAPIVersion(render.ClusterAPIVersion)
	clusters.SetKind(render.ClusterKind + "List")
	if err := c.List(ctx, clusters); err != nil {
		t.Fatalf("Cluster API's Clusters are not served after the core provider was installed: %v", err)
	}
	watches, err := env.Watches("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(watches) == 0 {
		t.Fatal("the audit log records no watch of Clusters, not even kube-controller-manager's: the check cannot see the manager's either")
	}
	for _, w := range watches {
		if w.User == plane.CapwrightUser {
			t.Errorf("the manager watched Clusters (%s) although no Tenant, CapwrightControlPlane or CapwrightCluster exists", w)
		}
	}
}
