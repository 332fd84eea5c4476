package tenants

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
)

// rolloutNamespace holds the rollout's Clusters: six, two per ring,
// spread over the suite's two workload API servers.
const rolloutNamespace = "rollout-clusters"

// rolloutTenantLabel marks the rollout namespace's Clusters with the test
// tenant they are for.
const rolloutTenantLabel = "e2e.capwright.io/tenant"

// rolloutBake is the rollout's bake time: the minimum.
const rolloutBake = 10 * time.Second

// TestTenantRollout rolls a kustomize stack out over six clusters in
// three waves (by their ring label) through the real Flux controllers: a
// good revision goes wave by wave, each wave starting no sooner than the
// bake time after the one before it; a bad revision (a Deployment that
// never becomes Available, so its health check fails) stops in the first
// wave, which goes back to the last good revision while the other waves
// are never written to, and the Tenant and its events say so; a fixed
// revision then goes through, and a cluster that joins meanwhile runs the
// last good revision until its wave comes.
func TestTenantRollout(t *testing.T) {
	// The rollout tests have tenants and clusters of their own: they run
	// side by side, after the suite's other tests.
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "rollout"
	rings := map[string]string{}
	for i := 1; i <= 6; i++ {
		cluster := fmt.Sprintf("ring-%d", i)
		rings[cluster] = []string{"canary", "early", "late"}[(i-1)/2]
		registerLabelled(t, ctx, c, i%2, name, cluster, rings[cluster])
	}
	push := func(tag string, broken bool) framework.PushedArtifact {
		if !broken {
			return pushRelease(t, ctx, "tenants/rollout", tag, nil)
		}
		// No node runs it on the plane: it never becomes Available.
		return pushRelease(t, ctx, "tenants/rollout", tag, map[string][]byte{"deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: broken
spec:
  replicas: 1
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec:
      containers: [{name: broken, image: registry.invalid/broken:1}]
`)})
	}
	two := intstr.FromInt32(2)
	tn := kustomizeTenant(name, push("v1.0.0", false), tenancyv1alpha1.ClusterSelector{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{rolloutTenantLabel: name}}, Namespaces: []string{rolloutNamespace}})
	tn.Spec.Stack.Timeout = &metav1.Duration{Duration: 20 * time.Second}
	tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", MaxUpdating: &two, BakeTime: &metav1.Duration{Duration: rolloutBake},
		Waves: []tenancyv1alpha1.Wave{{Name: "canary"}, {Name: "early"}, {Name: "late"}}}
	createTenant(t, ctx, c, tn)

	// The first revision, wave by wave; kstatus reads a rollout on its
	// way as in progress.
	waitTenant(t, ctx, c, name, 2*time.Minute, "the first wave on its way", func(tn *tenancyv1alpha1.Tenant) bool {
		r := tn.Status.Rollout
		return r != nil && (r.Phase == tenancyv1alpha1.RolloutProgressing || r.Phase == tenancyv1alpha1.RolloutBaking) &&
			kstatusOf(t, tn) == kstatus.InProgressStatus
	})
	done := waitTenant(t, ctx, c, name, 4*time.Minute, "v1.0.0 rolled out", rolledOut("v1.0.0", 6))
	if s := kstatusOf(t, done); s != kstatus.CurrentStatus {
		t.Errorf("kstatus reads a complete rollout as %s", s)
	}
	assertWavesInOrder(t, done, rings)
	good := done.Status.Rollout.LastGood
	t.Logf("v1.0.0 went through the three waves: %s", waveTimes(done))

	// A bad revision stops in the canary wave and goes back; the guide's
	// Alert pages on it.
	hook := applyRolloutAlert(t, ctx, name)
	others := clusterObjects(t, ctx, c, name, "ring-3", "ring-4", "ring-5", "ring-6")
	since := time.Now()
	set := func(tag string) {
		t.Helper()
		updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Stack.Kustomize.Tag = tag })
	}
	push("v2.0.0-broken", true)
	set("v2.0.0-broken")
	back := waitTenant(t, ctx, c, name, 4*time.Minute, "the broken revision rolled back", func(tn *tenancyv1alpha1.Tenant) bool {
		if r := tn.Status.Rollout; r == nil || r.Phase != tenancyv1alpha1.RolloutRolledBack {
			return false
		}
		for cluster := range rings {
			if l := clusterLine(tn, cluster); l == nil || l.Revision != good.ID || l.Phase != tenancyv1alpha1.ClusterPhaseReady {
				return false
			}
		}
		return true
	})
	failed := back.Status.Rollout.Failed
	if len(failed) != 1 || failed[0].Wave != "canary" || !strings.Contains(failed[0].Artifact, "v2.0.0-broken@sha256:") ||
		!strings.Contains(failed[0].Message, "health check failed") {
		t.Fatalf("status.rollout.failed = %+v", failed)
	}
	rolled := apimeta.FindStatusCondition(back.Status.Conditions, tenancyv1alpha1.RolledOutCondition)
	stalled := apimeta.FindStatusCondition(back.Status.Conditions, "Stalled")
	ready := apimeta.FindStatusCondition(back.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if rolled == nil || rolled.Reason != tenancyv1alpha1.RolledBackReason || !strings.Contains(rolled.Message, "went back to v1.0.0@sha256:") ||
		stalled == nil || stalled.Status != metav1.ConditionTrue || ready == nil || ready.Status != metav1.ConditionFalse {
		t.Fatalf("after the rollback: RolledOut %+v, Stalled %+v, Ready %+v", rolled, stalled, ready)
	}
	if s := kstatusOf(t, back); s != kstatus.FailedStatus {
		t.Errorf("kstatus reads a rolled back Tenant as %s, want Failed", s)
	}
	t.Run("capwright status names the rollback, exit code 8", func(t *testing.T) { statusShowsTenant(t, ctx, c, name, 8) })
	for ref, before := range others {
		for _, w := range writesSince(t, since) {
			if strings.Contains(w, ref) {
				t.Errorf("the rollout of the broken revision wrote %s of a later wave: %s", ref, w)
			}
		}
		if after := clusterObjects(t, ctx, c, name, before.cluster)[ref]; after.generation != before.generation {
			t.Errorf("%s changed generation (%d → %d) during the broken rollout", ref, before.generation, after.generation)
		}
	}
	assertEvent(t, ctx, c, name, corev1.EventTypeWarning, tenancyv1alpha1.RolledBackReason, "v2.0.0-broken")
	eventually(t, time.Minute, "the rollback paged through notification-controller", func() (bool, string) {
		var got []string
		for _, e := range hook.Events("/") {
			if e.InvolvedObject.Kind == "Kustomization" && e.Reason == tenancyv1alpha1.RolledBackReason && e.Severity == "error" &&
				strings.Contains(e.Message, "v2.0.0-broken") && strings.HasPrefix(e.InvolvedObject.Name, name+"-ring-") {
				return true, ""
			}
			got = append(got, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Severity+" "+e.Reason)
		}
		return false, strings.Join(got, "; ")
	})
	// Nothing tries it again by itself.
	time.Sleep(rolloutBake)
	if again := waitTenant(t, ctx, c, name, time.Minute, "still rolled back", func(*tenancyv1alpha1.Tenant) bool { return true }); again.Status.Rollout.Phase != tenancyv1alpha1.RolloutRolledBack {
		t.Fatalf("the failed revision was tried again: %s", tenantState(again))
	}

	// A fixed revision goes through; a cluster joining meanwhile runs the
	// last good revision until its wave (late, the last) comes.
	fixed := push("v2.0.1", false)
	set(fixed.Tag)
	waitTenant(t, ctx, c, name, 2*time.Minute, "the fixed revision on its way", func(tn *tenancyv1alpha1.Tenant) bool {
		r := tn.Status.Rollout
		return r != nil && r.Target != nil && strings.HasPrefix(r.Target.Artifact, fixed.Tag+"@") && r.Phase != tenancyv1alpha1.RolloutComplete
	})
	registerLabelled(t, ctx, c, 0, name, "ring-7", "late")
	joined := waitTenant(t, ctx, c, name, 2*time.Minute, "ring-7 on the last good revision", func(tn *tenancyv1alpha1.Tenant) bool {
		l := clusterLine(tn, "ring-7")
		return l != nil && l.Revision != "" && l.Phase == tenancyv1alpha1.ClusterPhaseReady
	})
	if l := clusterLine(joined, "ring-7"); l.Revision != good.ID || l.Wave != "late" {
		if joined.Status.Rollout.Phase != tenancyv1alpha1.RolloutComplete {
			t.Fatalf("ring-7 joined mid-rollout and got revision %s (wave %s), want the last good %s: %s", l.Revision, l.Wave, good.ID, tenantState(joined))
		}
		t.Logf("the rollout was complete before ring-7 was selected; it got the new revision")
	}
	rings["ring-7"] = "late"
	done = waitTenant(t, ctx, c, name, 4*time.Minute, "v2.0.1 rolled out", rolledOut(fixed.Tag, 7))
	assertWavesInOrder(t, done, rings)
	if done.Status.Rollout.LastGood.ID == good.ID || len(done.Status.Rollout.Failed) != 1 {
		t.Errorf("after the fixed revision: last good %+v, failed %+v", done.Status.Rollout.LastGood, done.Status.Rollout.Failed)
	}
	assertEvent(t, ctx, c, name, corev1.EventTypeNormal, "RolloutStarted", fixed.Tag)
	t.Run("capwright status shows every cluster's wave and revision, exit code 0", func(t *testing.T) { statusShowsTenant(t, ctx, c, name, 0) })
	t.Run("capwright status on a cluster without Capwright", func(t *testing.T) { statusOnAWorkloadCluster(t, ctx) })
}

// TestTenantRolloutRefusesWhatCannotBeFollowed: a rollout whose failure
// budget is not below a wave's size, or which puts a cluster in two waves,
// is refused with a condition naming the field and the fix, and no cluster
// changes revision; a wave no cluster is in says so; the API server
// refuses label waves without a label key (and a bake time below the
// minimum: TestTenantsRefuseBadInput).
func TestTenantRolloutRefusesWhatCannotBeFollowed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "rollout-checks"
	registerLabelled(t, ctx, c, 0, name, "check-1", "canary")
	registerLabelled(t, ctx, c, 1, name, "check-2", "canary")
	art := pushRelease(t, ctx, "tenants/rollout-checks", "v1", nil)
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: []string{"check-1", "check-2"}, Namespaces: []string{rolloutNamespace}})
	tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", BakeTime: &metav1.Duration{Duration: rolloutBake},
		Waves: []tenancyv1alpha1.Wave{{Name: "canary"}, {Name: "nobody"}}}

	bad := tn.DeepCopy()
	bad.Spec.Rollout.WaveLabel = ""
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "set waveLabel, or list each wave's clusters") {
		t.Fatalf("a label wave without waveLabel: %v", err)
	}
	createTenant(t, ctx, c, tn)
	done := waitTenant(t, ctx, c, name, 3*time.Minute, "v1 rolled out", rolledOut("v1", 2))
	if w := done.Status.Rollout.Waves; len(w) != 2 || w[1].Clusters != 0 || !strings.Contains(w[1].Message, "ring=nobody") {
		t.Errorf("the empty wave: %+v", w)
	}
	revision := clusterLine(done, "check-1").Revision

	for _, tt := range []struct {
		name   string
		change func(*tenancyv1alpha1.RolloutSpec)
		want   string
	}{
		{"budget not below the wave", func(r *tenancyv1alpha1.RolloutSpec) { r.FailureBudget = 2 }, "failureBudget 2 is not below the size of wave canary (2 clusters)"},
		{"a cluster in two waves", func(r *tenancyv1alpha1.RolloutSpec) {
			r.Waves = append(r.Waves, tenancyv1alpha1.Wave{Name: "again", Clusters: []string{"check-2"}})
		}, "cluster " + rolloutNamespace + "/check-2 is in waves canary and again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A new tag with it: nothing may move to it.
			pushRelease(t, ctx, "tenants/rollout-checks", "v2", nil)
			var good *tenancyv1alpha1.RolloutSpec
			updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) {
				good = tn.Spec.Rollout.DeepCopy()
				tt.change(tn.Spec.Rollout)
				tn.Spec.Stack.Kustomize.Tag = "v2"
			})
			got := waitTenant(t, ctx, c, name, time.Minute, "InvalidRollout", func(tn *tenancyv1alpha1.Tenant) bool {
				r := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.RolledOutCondition)
				return r != nil && r.Reason == tenancyv1alpha1.InvalidRolloutReason
			})
			if r := apimeta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.RolledOutCondition); !strings.Contains(r.Message, tt.want) {
				t.Errorf("RolledOut says %q, want it to say %q", r.Message, tt.want)
			}
			for _, cl := range []string{"check-1", "check-2"} {
				if l := clusterLine(got, cl); l.Revision != revision {
					t.Errorf("%s moved to revision %s under an invalid rollout", cl, l.Revision)
				}
			}
			updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Rollout, tn.Spec.Stack.Kustomize.Tag = good, "v1" })
			waitTenant(t, ctx, c, name, time.Minute, "valid again", rolledOut("v1", 2))
		})
	}
}

// registerLabelled registers a Cluster of the rollout namespace on
// workload API server w, labelled ring=ring and with the test's tenant
// (the rollout tests run side by side in that namespace).
func registerLabelled(t *testing.T, ctx context.Context, c client.Client, w int, tenant, name, ring string) {
	t.Helper()
	if _, err := env.RegisterWorkloadCluster(ctx, workloads[w], rolloutNamespace, name); err != nil {
		t.Fatal(err)
	}
	cluster := clusterObject()
	if err := c.Get(ctx, client.ObjectKey{Namespace: rolloutNamespace, Name: name}, cluster); err != nil {
		t.Fatal(err)
	}
	labels := cluster.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["ring"], labels[rolloutTenantLabel] = ring, tenant
	cluster.SetLabels(labels)
	if err := c.Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
}

// rolledOut: the rollout of tag is complete and Ready on n clusters.
func rolledOut(tag string, n int32) func(*tenancyv1alpha1.Tenant) bool {
	return func(tn *tenancyv1alpha1.Tenant) bool {
		r := tn.Status.Rollout
		if r == nil || r.Phase != tenancyv1alpha1.RolloutComplete || r.LastGood == nil || !strings.HasPrefix(r.LastGood.Artifact, tag+"@") ||
			!isReady(tn) || tn.Status.ReadyClusters != n {
			return false
		}
		for _, l := range tn.Status.Clusters {
			if l.Revision != r.LastGood.ID || !strings.HasPrefix(l.AppliedRevision, tag+"@") {
				return false
			}
		}
		return true
	}
}

// assertWavesInOrder checks that every wave completed after the one
// before it had baked, and that each cluster became Ready on the revision
// only once its wave's turn came: no sooner than the bake time after the
// previous wave completed.
func assertWavesInOrder(t *testing.T, tn *tenancyv1alpha1.Tenant, rings map[string]string) {
	t.Helper()
	waves := tn.Status.Rollout.Waves
	completed := map[string]time.Time{}
	for k, w := range waves {
		if w.CompletedAt == nil {
			t.Fatalf("wave %s has no completion time: %+v", w.Name, waves)
		}
		completed[w.Name] = w.CompletedAt.Time
		if k > 0 && w.CompletedAt.Time.Before(waves[k-1].CompletedAt.Add(rolloutBake)) {
			t.Errorf("wave %s completed at %s, less than the bake time after wave %s (%s)", w.Name, w.CompletedAt, waves[k-1].Name, waves[k-1].CompletedAt)
		}
	}
	order := []string{"canary", "early", "late"}
	for cluster, ring := range rings {
		l := clusterLine(tn, cluster)
		if l == nil {
			t.Fatalf("no line for %s", cluster)
		}
		if l.Wave != ring {
			t.Errorf("%s is in wave %q, want %q", cluster, l.Wave, ring)
		}
		for k, w := range order {
			if w == ring && k > 0 {
				// Status times are whole seconds.
				if earliest := completed[order[k-1]].Add(rolloutBake - time.Second); l.LastTransitionTime.Time.Before(earliest) {
					t.Errorf("%s (wave %s) became Ready at %s, before wave %s had baked (%s)", cluster, ring, l.LastTransitionTime, order[k-1], earliest)
				}
			}
		}
	}
}

func waveTimes(tn *tenancyv1alpha1.Tenant) string {
	var parts []string
	for _, w := range tn.Status.Rollout.Waves {
		parts = append(parts, fmt.Sprintf("%s %d/%d at %s", w.Name, w.Updated, w.Clusters, w.CompletedAt.Format(time.TimeOnly)))
	}
	return strings.Join(parts, ", ")
}

type objectState struct {
	cluster    string
	generation int64
}

// clusterObjects are the Kustomizations of the named clusters of tenant,
// by "namespace/name", with their generation.
func clusterObjects(t *testing.T, ctx context.Context, c client.Client, tenant string, clusters ...string) map[string]objectState {
	t.Helper()
	out := map[string]objectState{}
	for _, cl := range clusters {
		ref := types.NamespacedName{Namespace: rolloutNamespace, Name: render.TenantClusterObjectName(tenant, types.NamespacedName{Namespace: rolloutNamespace, Name: cl})}
		ks := clusterKustomizationAt(t, ctx, c, ref)
		out[ref.String()] = objectState{cluster: cl, generation: ks.Generation}
	}
	return out
}

// assertEvent waits for an event on the Tenant of type and reason whose
// message mentions what.
func assertEvent(t *testing.T, ctx context.Context, c client.Client, tenant, eventType, reason, what string) {
	t.Helper()
	eventually(t, time.Minute, "a "+reason+" event on Tenant "+tenant, func() (bool, string) {
		var list corev1.EventList
		if err := c.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != tenancyv1alpha1.TenantKind || e.InvolvedObject.Name != tenant {
				continue
			}
			if e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, what) {
				return true, ""
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "\n")
	})
}

// clusterKustomizationAt is the Kustomization ref.
func clusterKustomizationAt(t *testing.T, ctx context.Context, c client.Client, ref types.NamespacedName) *kustomizev1.Kustomization {
	t.Helper()
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, ref, ks); err != nil {
		t.Fatalf("Kustomization %s: %v", ref, err)
	}
	return ks
}

// clusterObject is an empty Cluster API Cluster to read into.
func clusterObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	u.SetKind("Cluster")
	return u
}

// kstatusOf is the tenant's status as kstatus (Flux's health checks,
// kubectl wait, flux-operator) computes it.
func kstatusOf(t *testing.T, tn *tenancyv1alpha1.Tenant) kstatus.Status {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tn)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(tenancyv1alpha1.GroupVersion.String())
	u.SetKind(tenancyv1alpha1.TenantKind)
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// TestTenantChartRollout: a chart stack rolls out the same way. Two
// clusters on the two workload API servers, one wave each: a chart
// version that fails to render stops in the first wave and goes back to
// the last good chart, the second wave never sees it; a change of the
// values alone is a new revision and goes through.
func TestTenantChartRollout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "chart-rollout"
	registerLabelled(t, ctx, c, 0, name, "chart-canary", "canary")
	registerLabelled(t, ctx, c, 1, name, "chart-late", "late")
	push := func(version, template string) string {
		url, err := framework.PushChart(ctx, env.Registry.Host, "tenants/charts/rollout", "rollout", version, map[string][]byte{
			"templates/configmap.yaml": []byte(template),
			"values.yaml":              []byte("tier: default\n"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return url
	}
	url := push("0.1.0", chartConfigMap)
	one := intstr.FromInt32(1)
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{"chart-canary", "chart-late"}, Namespaces: []string{rolloutNamespace}},
			Stack: tenancyv1alpha1.StackSpec{
				Chart: &tenancyv1alpha1.ChartStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: url, Insecure: true},
					Version:             "0.1.0",
					Values:              &apiextensionsv1.JSON{Raw: []byte(`{"tier":"gold"}`)},
				},
				Timeout: &metav1.Duration{Duration: time.Minute},
			},
			Rollout: &tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", MaxUpdating: &one, BakeTime: &metav1.Duration{Duration: rolloutBake},
				Waves: []tenancyv1alpha1.Wave{{Name: "canary"}, {Name: "late"}}},
		},
	}
	createTenant(t, ctx, c, tn)
	done := waitTenant(t, ctx, c, name, 3*time.Minute, "0.1.0 rolled out", rolledOut("0.1.0", 2))
	good := done.Status.Rollout.LastGood
	late := clusterObjectsOf(t, ctx, c, name, "chart-late")

	push("0.2.0", "{{ fail \"this chart version is broken\" }}\n")
	update := func(change func(*tenancyv1alpha1.ChartStack)) {
		t.Helper()
		updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { change(tn.Spec.Stack.Chart) })
	}
	update(func(s *tenancyv1alpha1.ChartStack) { s.Version = "0.2.0" })
	back := waitTenant(t, ctx, c, name, 4*time.Minute, "the broken chart rolled back", func(tn *tenancyv1alpha1.Tenant) bool {
		r := tn.Status.Rollout
		l := clusterLine(tn, "chart-canary")
		return r != nil && r.Phase == tenancyv1alpha1.RolloutRolledBack && l != nil && l.Revision == good.ID && l.Phase == tenancyv1alpha1.ClusterPhaseReady
	})
	if f := back.Status.Rollout.Failed; len(f) != 1 || f[0].Wave != "canary" || !strings.HasPrefix(f[0].Artifact, "0.2.0@sha256:") {
		t.Fatalf("status.rollout.failed = %+v", f)
	}
	if after := clusterObjectsOf(t, ctx, c, name, "chart-late"); after != late {
		t.Errorf("the late wave's HelmRelease changed during the broken rollout: generation %d → %d", late, after)
	}

	// Values alone make a new revision.
	update(func(s *tenancyv1alpha1.ChartStack) {
		s.Version = "0.1.0"
		s.Values = &apiextensionsv1.JSON{Raw: []byte(`{"tier":"platinum"}`)}
	})
	done = waitTenant(t, ctx, c, name, 3*time.Minute, "the new values rolled out", func(tn *tenancyv1alpha1.Tenant) bool {
		return rolledOut("0.1.0", 2)(tn) && tn.Status.Rollout.LastGood.ID != good.ID
	})
	assertWavesInOrder(t, done, map[string]string{"chart-canary": "canary", "chart-late": "late"})
	for i, w := range workloads {
		var cm corev1.ConfigMap
		if err := newClient(t, w.Config).Get(ctx, client.ObjectKey{Namespace: name, Name: name + "-settings"}, &cm); err != nil || cm.Data["tier"] != "platinum" {
			t.Errorf("workload %d: the chart's ConfigMap %v (err %v), want tier platinum", i+1, cm.Data, err)
		}
	}
}

// clusterObjectsOf is the generation of the HelmRelease of a tenant's
// cluster in the rollout namespace.
func clusterObjectsOf(t *testing.T, ctx context.Context, c client.Client, tenant, cluster string) int64 {
	t.Helper()
	hr := &helmv2.HelmRelease{}
	key := types.NamespacedName{Namespace: rolloutNamespace, Name: render.TenantClusterObjectName(tenant, types.NamespacedName{Namespace: rolloutNamespace, Name: cluster})}
	if err := c.Get(ctx, key, hr); err != nil {
		t.Fatalf("HelmRelease %s: %v", key, err)
	}
	return hr.Generation
}

// rolloutAlertExample is the Alert the alerts guide gives for paging on a
// stopped rollout.
const rolloutAlertExample = "docs/examples/repository/infrastructure/tenant-alerts/team-a-rollouts.yaml"

// applyRolloutAlert applies the guide's Alert for tenant in the rollout
// namespace, with a webhook as its address.
func applyRolloutAlert(t *testing.T, ctx context.Context, tenant string) *framework.Webhook {
	t.Helper()
	return framework.ApplyGuideAlert(t, ctx, env.Config, env.RepoRoot(), rolloutAlertExample, rolloutNamespace, "team-a-on-call", func(s string) string {
		return strings.ReplaceAll(s, "tenancy.capwright.io/tenant: team-a", "tenancy.capwright.io/tenant: "+tenant)
	})
}

// pushRelease pushes a kustomize stack of a ConfigMap naming tag, and
// extra files, to repository:tag on the plane's registry.
func pushRelease(t *testing.T, ctx context.Context, repository, tag string, extra map[string][]byte) framework.PushedArtifact {
	t.Helper()
	files := map[string][]byte{
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rollout-settings\ndata:\n  release: " + tag + "\n"),
	}
	maps.Copy(files, extra)
	art, err := framework.PushFiles(ctx, env.Registry.Host, repository, tag, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return art
}
