package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestARolloutWaitsOutARegistryOutage: the registry goes down just as a
// rollout tenant's new revision starts (a substitution change: the same
// artifact under a new revision, with a source of its own that must be
// pulled). The new source cannot reach the registry, which is no failure
// of the revision: nothing is rolled back or recorded as failed, and once
// the registry is back the revision rolls out. The soak found the
// revision counted as failed at its source's first refused connection,
// rolled back and never tried again.
func TestARolloutWaitsOutARegistryOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)
	if err := tenancyv1alpha1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	const namespace = "faults-rollout"
	startCluster(t, ctx, c, namespace, "rollout-1")
	tn := stackTenant(t, ctx, "rolling", namespace, "rollout-1")
	tn.Spec.Stack.Kustomize.Substitute = map[string]string{"GREETING": "one"}
	tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{BakeTime: &metav1.Duration{Duration: 10 * time.Second},
		Waves: []tenancyv1alpha1.Wave{{Name: "canary", Clusters: []string{"rollout-1"}}}}
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), tn)
		framework.WaitGone(t, context.Background(), c, tn, 3*time.Minute)
	})
	first := waitRollout(t, ctx, c, tn, "the first revision rolled out", func(r *tenancyv1alpha1.RolloutStatus) bool {
		return r.Phase == tenancyv1alpha1.RolloutComplete && r.LastGood != nil
	})

	if err := env.Registry.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Registry.Start() })
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return err
		}
		tn.Spec.Stack.Kustomize.Substitute["GREETING"] = "two"
		return c.Update(ctx, tn)
	}); err != nil {
		t.Fatal(err)
	}
	// The new revision's source tries the registry and fails.
	var refused string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var repos sourcev1.OCIRepositoryList
		if err := c.List(ctx, &repos, client.InNamespace(namespace), client.MatchingLabels{tenancyv1alpha1.TenantLabel: tn.Name}); err != nil {
			return false, nil
		}
		for _, r := range repos.Items {
			if rev := r.Labels[tenancyv1alpha1.RevisionLabel]; rev == "" || rev == first.LastGood.ID {
				continue
			}
			if ready := apimeta.FindStatusCondition(r.Status.Conditions, meta.ReadyCondition); ready != nil && ready.Status == metav1.ConditionFalse {
				refused = r.Name + ": " + ready.Message
				return strings.Contains(ready.Message, "connection refused"), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the new revision's source did not fail to reach the stopped registry: %s", refused)
	}
	t.Logf("the new revision's source: %s", refused)
	// Over two resyncs with the registry down, the revision is not failed.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err == nil {
			if r := tn.Status.Rollout; r != nil && (r.Phase == tenancyv1alpha1.RolloutRolledBack || len(r.Failed) > 0) {
				t.Fatalf("the registry outage failed the new revision: phase %s, failed %+v", r.Phase, r.Failed)
			}
		}
		time.Sleep(time.Second)
	}

	if err := env.Registry.Start(); err != nil {
		t.Fatal(err)
	}
	done := waitRollout(t, ctx, c, tn, "the new revision rolled out once the registry is back", func(r *tenancyv1alpha1.RolloutStatus) bool {
		return r.Phase == tenancyv1alpha1.RolloutComplete && r.LastGood != nil && r.LastGood.ID != first.LastGood.ID
	})
	if len(done.Failed) > 0 {
		t.Errorf("status.rollout.failed after the outage: %+v", done.Failed)
	}
}

// waitRollout waits until the tenant's status, for its generation, has a
// rollout that satisfies ok, and returns it.
func waitRollout(t *testing.T, ctx context.Context, c client.Client, tn *tenancyv1alpha1.Tenant, what string, ok func(*tenancyv1alpha1.RolloutStatus) bool) *tenancyv1alpha1.RolloutStatus {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, nil
		}
		r := tn.Status.Rollout
		if r == nil || tn.Status.ObservedGeneration != tn.Generation {
			last = "no rollout status for the current generation"
			return false, nil
		}
		last = fmt.Sprintf("%s, failed %+v", r.Phase, r.Failed)
		return ok(r), nil
	})
	if err != nil {
		t.Fatalf("Tenant %s: %s: not after 4m: %s", tn.Name, what, last)
	}
	return tn.Status.Rollout
}
