package providers

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/plane"
)

// idleInterval is the Flux interval of the idle check: short, so that Flux
// re-reconciles every object several times within a minute.
const idleInterval = 12 * time.Second

// nothingWrittenWhileIdle gives the installed providers a short Flux
// interval and checks that, while Flux re-fetches, re-applies and
// re-checks everything at least twice (and the manager resyncs), the
// manager writes nothing: Flux's routine runs are no news.
func nothingWrittenWhileIdle(t *testing.T, ctx context.Context, c client.Client, providers []v1alpha1.Provider) {
	for _, p := range providers {
		updateProvider(t, ctx, c, p, func() { p.GetSpec().Interval = &metav1.Duration{Duration: idleInterval} })
	}
	defer func() {
		for _, p := range providers {
			updateProvider(t, ctx, c, p, func() { p.GetSpec().Interval = nil })
		}
	}()
	// The new interval is a new generation of the Flux objects, which Flux
	// reconciles first: the idle window starts once it has.
	for _, p := range providers {
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
		key := client.ObjectKey{Namespace: p.GetNamespace(), Name: render.ObjectName(p.ProviderType(), p.GetName())}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var ks kustomizev1.Kustomization
			if err := c.Get(ctx, key, &ks); err != nil {
				return false, nil
			}
			return ks.Spec.Interval.Duration == idleInterval && ks.Status.ObservedGeneration == ks.Generation &&
				apimeta.IsStatusConditionTrue(ks.Status.Conditions, "Ready"), nil
		})
		if err != nil {
			t.Fatalf("Kustomization %s did not reconcile its %s interval: %v", key, idleInterval, err)
		}
	}
	waitCondition(t, ctx, c, providers[0], v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
	time.Sleep(2 * time.Second)
	since := time.Now()
	time.Sleep(2*idleInterval + 8*time.Second)

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
		if runs[key] < 2 {
			t.Fatalf("kustomize-controller wrote the status of Kustomization %s %d times in %s; the check needs at least two routine runs (all: %v)",
				key, runs[key], time.Since(since).Round(time.Second), runs)
		}
	}
	noManagerWrites(t, since, fmt.Sprintf("while Flux re-reconciled (%v status writes per Kustomization), the manager", runs))
	t.Logf("Flux reconciled each provider's Kustomization %v times in %s; the manager wrote nothing", runs, time.Since(since).Round(time.Second))
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
