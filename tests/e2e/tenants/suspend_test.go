package tenants

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestSuspendedTenantHoldsItsStack: while spec.suspend is set, a new tag
// does not reach the workload cluster and the Tenant says Paused; once it
// is unset, the new tag is applied.
func TestSuspendedTenantHoldsItsStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	remote := newClient(t, workloads[0].Config)
	const name = "hooli"
	cluster := types.NamespacedName{Namespace: clusterNamespace, Name: workloads[0].Name}
	first, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/hooli", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := maps.Clone(stackFiles)
	files["configmap.yaml"] = []byte(strings.Replace(string(stackFiles["configmap.yaml"]), "greeting: hello", "greeting: held-back", 1))
	second, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/hooli", "v2.0.0", files, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := kustomizeTenant(name, first, tenancyv1alpha1.ClusterSelector{Names: []string{cluster.Name}, Namespaces: []string{cluster.Namespace}})
	createTenant(t, ctx, c, tn)

	waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	greeting := func() string { return stackGreeting(t, ctx, remote, name, cluster.Name) }
	if got := greeting(); got != "hello" {
		t.Fatalf("greeting = %q, want hello", got)
	}

	// Suspend and move to v2.0.0 in one change.
	update := func(mutate func(*tenancyv1alpha1.Tenant)) {
		t.Helper()
		updateTenant(t, ctx, c, name, mutate)
	}
	update(func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Suspend, tn.Spec.Stack.Kustomize.Tag = true, second.Tag })
	waitTenant(t, ctx, c, name, time.Minute, "Tenant Paused", func(tn *tenancyv1alpha1.Tenant) bool {
		return apimeta.IsStatusConditionTrue(tn.Status.Conditions, tenancyv1alpha1.PausedCondition)
	})
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(name, cluster)}, ks); err != nil {
		t.Fatal(err)
	}
	if !ks.Spec.Suspend {
		t.Errorf("Kustomization %s/%s is not suspended", ks.Namespace, ks.Name)
	}
	time.Sleep(10 * time.Second) // long enough for Flux to have applied v2.0.0 were it not suspended
	if got := greeting(); got != "hello" {
		t.Fatalf("greeting = %q while the Tenant is suspended, want hello (v2.0.0 must wait)", got)
	}

	start := time.Now()
	update(func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Suspend = false })
	waitTenant(t, ctx, c, name, 2*time.Minute, second.Tag+" Ready after resuming", func(tn *tenancyv1alpha1.Tenant) bool {
		line := clusterLine(tn, cluster.Name)
		return isReady(tn) && line != nil && strings.HasPrefix(line.AppliedRevision, second.Tag+"@")
	})
	if got := greeting(); got != "held-back" {
		t.Errorf("greeting = %q after resuming, want held-back", got)
	}
	t.Logf("%s applied %s after the Tenant was resumed", second.Tag, time.Since(start).Round(time.Millisecond))
}
