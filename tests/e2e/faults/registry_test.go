package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestRegistryOutageKeepsInstalledProvidersReady (fault 1) takes the
// registry down under a Ready core provider, and makes the manager and
// source-controller look again: Ready stays True throughout,
// ArtifactResolved says the registry cannot be reached (one Warning
// event), source-controller stays Ready (the OCIRepository is pinned to a
// digest it holds), the manager writes nothing over two resyncs while the
// outage lasts, what Flux installed stays, and once the registry is back
// the reason returns to Resolved by itself.
func TestRegistryOutageKeepsInstalledProvidersReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	core := ensureCore(t, ctx, c)
	// The core may still show an earlier test's outage of the same
	// registry until its next resync: this one starts from the tag
	// resolved, and only its own events count.
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason, time.Minute)
	digest := core.Status.Artifact.Digest
	notReady := watchReady(t, ctx, c, core)
	earlier := events(t, ctx, c, core, v1alpha1.RegistryUnreachableReason)

	if err := env.Registry.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Registry.Start() })
	// Both the manager and source-controller ask the registry again now,
	// not at their next interval.
	if err := framework.RequestReconcile(ctx, c, core); err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.OCIRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: core.Namespace, Name: "core-cluster-api"}, repo); err != nil {
		t.Fatal(err)
	}
	if err := framework.RequestReconcile(ctx, c, repo); err != nil {
		t.Fatal(err)
	}
	asked := core.Annotations[meta.ReconcileRequestAnnotation]
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.RegistryUnreachableReason, 2*time.Minute)
	// A resync may write the outage before the request is handled; the
	// quiet time starts once the manager has handled it (its upgrade
	// check fails too, and that is written with it).
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			return false, nil
		}
		return core.Status.LastHandledReconcileAt == asked, nil
	})
	if err != nil {
		t.Fatalf("the manager did not handle the reconcile request %s: %+v", asked, core.Status)
	}
	msg := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.ArtifactResolvedCondition).Message
	if !strings.Contains(msg, env.Registry.Host) || !strings.Contains(msg, coreVersion+"@"+digest+", checked when it was installed, stays installed") {
		t.Errorf("ArtifactResolved says %q; want the registry and the installed revision named", msg)
	}
	// source-controller handles a request made during the outage without
	// the registry: the OCIRepository is pinned to the digest checked,
	// which it holds. The request is the test's own, or the core's, which
	// the manager passes on to the OCIRepository and which may replace it.
	duringOutage := map[string]bool{asked: true, repo.Annotations[meta.ReconcileRequestAnnotation]: true}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
			return false, nil
		}
		return duringOutage[repo.Status.LastHandledReconcileAt], nil
	})
	if err != nil {
		t.Fatalf("source-controller did not handle the reconcile request: %+v", repo.Status)
	}
	if !apimeta.IsStatusConditionTrue(repo.Status.Conditions, meta.ReadyCondition) || repo.Status.Artifact == nil || !strings.HasSuffix(repo.Status.Artifact.Revision, digest) {
		t.Errorf("the pinned OCIRepository during the outage: Ready %+v, artifact %+v", repo.Status.Conditions, repo.Status.Artifact)
	}

	t.Run("nothing is written while the outage lasts", func(t *testing.T) {
		quiet := time.Now()
		before := core.Status.DeepCopy()
		time.Sleep(25 * time.Second) // more than two resyncs of 10 s
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err == nil && !equality.Semantic.DeepEqual(before, &core.Status) {
			// What was written tells why.
			t.Logf("the status changed during the outage:\nbefore %s\nafter  %s", asJSON(before), asJSON(&core.Status))
		}
		framework.NoManagerWrites(t, env, quiet, "the manager, with the registry down and nothing else changing,")
		if got := events(t, ctx, c, core, v1alpha1.RegistryUnreachableReason); got[corev1.EventTypeWarning]-earlier[corev1.EventTypeWarning] != 1 {
			t.Errorf("RegistryUnreachable events = %v (%v before this outage), want one more Warning", got, earlier)
		}
	})

	var deploy appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, &deploy); err != nil {
		t.Errorf("the core provider's Deployment is gone during the outage: %v", err)
	}
	if core.Status.InstalledVersion != coreVersion || core.Status.Artifact.Digest != digest {
		t.Errorf("status during the outage: installed %s, artifact %+v", core.Status.InstalledVersion, core.Status.Artifact)
	}

	if err := env.Registry.Start(); err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason, time.Minute)
	if bad := notReady(); len(bad) > 0 {
		t.Errorf("Ready was not True %d times during the outage, first %s", len(bad), bad[0])
	}
}

// TestARegistryThatDoesNotAnswerHoldsNoOtherProvider (fault 2) points one
// provider at a registry that accepts connections but never answers, and
// creates another of the same kind beside it: the other is installed
// meanwhile, the stuck one fails its reconcile after the manager's
// --registry-timeout with a message that says so, and it is installed by
// itself once the registry answers.
func TestARegistryThatDoesNotAnswerHoldsNoOtherProvider(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	hung, err := plane.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hung.Close() })
	stuck := testProvider(t, ctx, c, hung.Host, "stuck")
	steady := testProvider(t, ctx, c, env.Registry.Host, "steady")
	hung.Hang()
	for _, p := range []*v1alpha1.InfrastructureProvider{stuck, steady} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		defer framework.DeleteProviderAndWait(t, ctx, c, p)
	}

	framework.WaitProviderCondition(t, ctx, c, steady, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	framework.WaitProviderCondition(t, ctx, c, stuck, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason, time.Minute)
	msg := apimeta.FindStatusCondition(stuck.Status.Conditions, v1alpha1.ArtifactResolvedCondition).Message
	if !strings.Contains(msg, "the registry did not answer within "+registryTimeout+" (the manager's --registry-timeout)") {
		t.Errorf("ArtifactResolved of the stuck provider says %q; want the timeout named", msg)
	}

	hung.Answer()
	framework.WaitProviderCondition(t, ctx, c, stuck, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
}
