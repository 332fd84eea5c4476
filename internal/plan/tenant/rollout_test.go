package tenant

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// fleet simulates a tenant's clusters under decideRollout: each step
// decides, then "Flux" makes every cluster whose pin changed run its new
// revision, healthy unless the revision is bad.
type fleet struct {
	t        *testing.T
	spec     tenancyv1alpha1.RolloutSpec
	waves    []string
	clusters []rolloutCluster
	status   tenancyv1alpha1.RolloutStatus
	snaps    map[string]render.StackSnapshot
	bad      map[string]bool
	now      time.Time
	retry    string
	// startedAt records when each cluster was first pinned to each
	// revision.
	startedAt map[string]map[types.NamespacedName]time.Time
}

func newFleet(t *testing.T, spec tenancyv1alpha1.RolloutSpec, perWave ...int) *fleet {
	f := &fleet{t: t, spec: spec, snaps: map[string]render.StackSnapshot{}, bad: map[string]bool{},
		now: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC), startedAt: map[string]map[types.NamespacedName]time.Time{}}
	for k, n := range perWave {
		f.waves = append(f.waves, fmt.Sprintf("wave-%d", k+1))
		for i := range n {
			f.clusters = append(f.clusters, rolloutCluster{Cluster: types.NamespacedName{Namespace: "fleet", Name: fmt.Sprintf("c%d-%d", k+1, i)}, Wave: k})
		}
	}
	return f
}

func snapshot(id string) render.StackSnapshot {
	return render.StackSnapshot{ID: id, Artifact: id + "@sha256:" + strings.Repeat(id[:1], 64), Digest: "sha256:" + strings.Repeat(id[:1], 64)}
}

// step decides once with target, then lets Flux act, and advances the
// clock by tick.
func (f *fleet) step(target *render.StackSnapshot, tick time.Duration) rolloutDecision {
	f.t.Helper()
	in := rolloutInput{Spec: f.spec, Waves: f.waves, Target: target, Resolving: "not yet", Snapshots: f.snaps,
		Previous: f.status, Clusters: f.clusters, Retry: f.retry, Now: f.now}
	d := decideRollout(in)
	f.status = d.Status
	if target != nil {
		f.snaps[target.ID] = *target
	}
	for i := range f.clusters {
		c := &f.clusters[i]
		pin, ok := d.Pins[c.Cluster]
		if !ok {
			continue
		}
		if pin != c.Revision {
			if f.startedAt[pin] == nil {
				f.startedAt[pin] = map[types.NamespacedName]time.Time{}
			}
			if _, seen := f.startedAt[pin][c.Cluster]; !seen {
				f.startedAt[pin][c.Cluster] = f.now
			}
			c.Revision, c.Unpinned, c.Phase = pin, false, tenancyv1alpha1.ClusterPhaseInstalling
			continue
		}
		if c.Phase == tenancyv1alpha1.ClusterPhaseInstalling {
			c.Phase = tenancyv1alpha1.ClusterPhaseReady
			if f.bad[pin] {
				c.Phase, c.Message = tenancyv1alpha1.ClusterPhaseFailed, "HealthCheckFailed: Deployment stack/broken not ready"
			}
		}
	}
	f.now = f.now.Add(tick)
	return d
}

// run steps until the phase is one of want or steps run out.
func (f *fleet) run(target *render.StackSnapshot, want ...tenancyv1alpha1.RolloutPhase) rolloutDecision {
	f.t.Helper()
	var d rolloutDecision
	for range 200 {
		d = f.step(target, 5*time.Second)
		for _, p := range want {
			if d.Status.Phase == p {
				return d
			}
		}
	}
	f.t.Fatalf("the rollout never reached %v: %s %s", want, d.Status.Phase, d.Message)
	return d
}

func (f *fleet) on(id string) (n int) {
	for _, c := range f.clusters {
		if c.Revision == id {
			n++
		}
	}
	return n
}

func threeWaves() tenancyv1alpha1.RolloutSpec {
	one := intstr.FromInt32(1)
	return tenancyv1alpha1.RolloutSpec{MaxUpdating: &one, BakeTime: &metav1.Duration{Duration: time.Minute}}
}

func TestRolloutGoesWaveByWaveWithBakeTime(t *testing.T) {
	f := newFleet(t, threeWaves(), 2, 2, 2)
	good, next := snapshot("aaaaaaaaaa"), snapshot("bbbbbbbbbb")
	// The first revision also goes wave by wave: there is nothing to
	// keep the later waves on.
	d := f.run(&good, tenancyv1alpha1.RolloutComplete)
	if d.Status.LastGood == nil || d.Status.LastGood.ID != good.ID || f.on(good.ID) != 6 {
		t.Fatalf("after the first rollout: last good %v, %d clusters on it", d.Status.LastGood, f.on(good.ID))
	}
	d = f.step(&next, 5*time.Second)
	if d.Status.Phase != tenancyv1alpha1.RolloutProgressing || f.on(next.ID) != 1 {
		t.Fatalf("first step of the next revision: %s, %d clusters on it (maxUpdating 1)", d.Status.Phase, f.on(next.ID))
	}
	f.run(&next, tenancyv1alpha1.RolloutComplete)
	// Wave k+1 starts no earlier than a bake time after wave k's last
	// cluster started.
	started := f.startedAt[next.ID]
	for k := 1; k < 3; k++ {
		var lastBefore, firstHere time.Time
		for _, c := range f.clusters {
			switch c.Wave {
			case k - 1:
				if s := started[c.Cluster]; s.After(lastBefore) {
					lastBefore = s
				}
			case k:
				if s := started[c.Cluster]; firstHere.IsZero() || s.Before(firstHere) {
					firstHere = s
				}
			}
		}
		if firstHere.Sub(lastBefore) < time.Minute {
			t.Errorf("wave %d started %s after wave %d's last cluster: less than the bake time", k+1, firstHere.Sub(lastBefore), k)
		}
	}
	if f.status.LastGood.ID != next.ID {
		t.Errorf("last good %s, want %s", f.status.LastGood.ID, next.ID)
	}
}

func TestRolloutRollsBackAFailedWaveAndNeverRetriesByItself(t *testing.T) {
	f := newFleet(t, threeWaves(), 2, 2, 2)
	good, bad, fixed := snapshot("aaaaaaaaaa"), snapshot("cccccccccc"), snapshot("dddddddddd")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	f.bad[bad.ID] = true
	d := f.run(&bad, tenancyv1alpha1.RolloutRolledBack, tenancyv1alpha1.RolloutComplete)
	if d.Status.Phase != tenancyv1alpha1.RolloutRolledBack || !d.Stalled || d.Reason != tenancyv1alpha1.RolledBackReason {
		t.Fatalf("a failing revision: %s stalled=%v %s", d.Status.Phase, d.Stalled, d.Reason)
	}
	if len(d.Status.Failed) != 1 || d.Status.Failed[0].ID != bad.ID || d.Status.Failed[0].Wave != "wave-1" ||
		!strings.Contains(d.Message, "HealthCheckFailed") || !strings.Contains(d.Message, good.Artifact) {
		t.Fatalf("failed %+v, message %q", d.Status.Failed, d.Message)
	}
	if started := f.startedAt[bad.ID]; len(started) != 1 {
		t.Errorf("the bad revision reached %d clusters, want 1 (wave 1, one at a time, budget 0)", len(started))
	}
	// The next steps put it back on the last good revision, and keep
	// it there.
	for range 10 {
		d = f.step(&bad, time.Minute)
	}
	if f.on(good.ID) != 6 || d.Status.Phase != tenancyv1alpha1.RolloutRolledBack {
		t.Fatalf("after the rollback: %d clusters on the last good revision, phase %s", f.on(good.ID), d.Status.Phase)
	}
	for _, c := range f.clusters {
		if c.Wave > 0 && f.startedAt[bad.ID][c.Cluster] != (time.Time{}) {
			t.Errorf("cluster %s of wave %d got the bad revision", c.Cluster, c.Wave+1)
		}
	}
	// A fixed revision goes through.
	f.run(&fixed, tenancyv1alpha1.RolloutComplete)
	if f.on(fixed.ID) != 6 {
		t.Errorf("%d clusters on the fixed revision", f.on(fixed.ID))
	}
	// Going back to the failed revision does not retry it by itself...
	d = f.step(&bad, time.Second)
	if d.Status.Phase != tenancyv1alpha1.RolloutPaused || f.on(bad.ID) != 0 || !d.Stalled {
		t.Fatalf("a failed revision came back: %s, %d clusters on it", d.Status.Phase, f.on(bad.ID))
	}
	// ...the annotation does.
	f.retry = "try-again"
	d = f.step(&bad, time.Second)
	if d.Status.Phase != tenancyv1alpha1.RolloutProgressing || f.on(bad.ID) != 1 || d.Status.LastHandledRetry != "try-again" {
		t.Fatalf("retried: %s, %d clusters on it", d.Status.Phase, f.on(bad.ID))
	}
}

func TestRolloutPauseLeavesFailedClusters(t *testing.T) {
	spec := threeWaves()
	spec.OnFailure = tenancyv1alpha1.RolloutPause
	f := newFleet(t, spec, 2, 2)
	good, bad := snapshot("aaaaaaaaaa"), snapshot("cccccccccc")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	f.bad[bad.ID] = true
	d := f.run(&bad, tenancyv1alpha1.RolloutPaused)
	for range 3 {
		d = f.step(&bad, time.Minute)
	}
	if f.on(bad.ID) != 1 || f.on(good.ID) != 3 || d.Status.Phase != tenancyv1alpha1.RolloutPaused || !d.Stalled {
		t.Fatalf("paused: %d on the bad revision, %d on the good one, %s", f.on(bad.ID), f.on(good.ID), d.Status.Phase)
	}
}

func TestRolloutFailureBudget(t *testing.T) {
	spec := threeWaves()
	spec.FailureBudget = 1
	two := intstr.FromInt32(2)
	spec.MaxUpdating = &two
	f := newFleet(t, spec, 3, 3)
	good, bad := snapshot("aaaaaaaaaa"), snapshot("cccccccccc")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	f.bad[bad.ID] = true
	d := f.run(&bad, tenancyv1alpha1.RolloutRolledBack)
	if w := d.Status.Waves[0]; w.Name != "wave-1" || len(d.Status.Failed[0].Clusters) != 2 {
		t.Fatalf("two failures beyond a budget of one: waves %+v failed %+v", d.Status.Waves, d.Status.Failed)
	}
}

func TestRolloutClusterJoiningMidRollout(t *testing.T) {
	f := newFleet(t, threeWaves(), 1, 1, 1)
	good, next := snapshot("aaaaaaaaaa"), snapshot("bbbbbbbbbb")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	f.run(&next, tenancyv1alpha1.RolloutBaking)
	f.clusters = append(f.clusters, rolloutCluster{Cluster: types.NamespacedName{Namespace: "fleet", Name: "late-joiner"}, Wave: 2})
	d := f.step(&next, time.Second)
	if d.Pins[types.NamespacedName{Namespace: "fleet", Name: "late-joiner"}] != good.ID {
		t.Fatalf("a cluster joining mid-rollout got %q, want the last good revision", d.Pins[types.NamespacedName{Namespace: "fleet", Name: "late-joiner"}])
	}
	f.run(&next, tenancyv1alpha1.RolloutComplete)
	if f.on(next.ID) != 4 {
		t.Errorf("%d clusters on the new revision after its wave came, want 4", f.on(next.ID))
	}
}

func TestRolloutSpecChangeMidRolloutTakesOverFromTheCurrentState(t *testing.T) {
	f := newFleet(t, threeWaves(), 1, 1, 1)
	good, first, second := snapshot("aaaaaaaaaa"), snapshot("bbbbbbbbbb"), snapshot("eeeeeeeeee")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	f.run(&first, tenancyv1alpha1.RolloutBaking)
	d := f.step(&second, time.Second)
	// Wave 1 still runs the first; nothing runs a revision nobody asked
	// for, and the second starts in wave 1.
	if f.on(first.ID)+f.on(second.ID) != 1 || f.on(good.ID) != 2 || d.Status.Target.ID != second.ID {
		t.Fatalf("after the spec changed: %d/%d/%d on good/first/second, target %s", f.on(good.ID), f.on(first.ID), f.on(second.ID), d.Status.Target.ID)
	}
	f.run(&second, tenancyv1alpha1.RolloutComplete)
	if f.on(second.ID) != 3 {
		t.Errorf("%d clusters on the second revision", f.on(second.ID))
	}
}

func TestRolloutEnabledOnARunningTenantStartsFromWhatRuns(t *testing.T) {
	f := newFleet(t, threeWaves(), 2, 2)
	for i := range f.clusters {
		f.clusters[i].Unpinned, f.clusters[i].Phase = true, tenancyv1alpha1.ClusterPhaseReady
	}
	now := snapshot("aaaaaaaaaa")
	d := f.step(&now, time.Second)
	if d.Status.Phase != tenancyv1alpha1.RolloutComplete || d.Status.LastGood.ID != now.ID || len(d.Pins) != 4 {
		t.Fatalf("enabling a rollout: %s, last good %v, %d pins", d.Status.Phase, d.Status.LastGood, len(d.Pins))
	}
}

func TestRolloutHoldsWhileResolvingOrSuspended(t *testing.T) {
	f := newFleet(t, threeWaves(), 1, 1)
	good, next := snapshot("aaaaaaaaaa"), snapshot("bbbbbbbbbb")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	d := f.step(nil, time.Second)
	if d.Reason != tenancyv1alpha1.RolloutResolvingReason || f.on(good.ID) != 2 || d.Stalled {
		t.Fatalf("resolving: %s, %d on the last good revision", d.Reason, f.on(good.ID))
	}
	in := rolloutInput{Spec: f.spec, Waves: f.waves, Target: &next, Snapshots: f.snaps, Previous: f.status, Clusters: f.clusters, Now: f.now, Suspended: true}
	if d := decideRollout(in); d.Status.Phase != tenancyv1alpha1.RolloutPaused || d.Pins[f.clusters[0].Cluster] != good.ID {
		t.Fatalf("suspended: %s, pin %s", d.Status.Phase, d.Pins[f.clusters[0].Cluster])
	}
}

func TestAssignWaves(t *testing.T) {
	c := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "fleet", Name: name} }
	clusters := []types.NamespacedName{c("a"), c("b"), c("c"), c("d")}
	labels := map[types.NamespacedName]map[string]string{c("a"): {"ring": "canary"}, c("b"): {"ring": "prod"}, c("c"): {"ring": "prod"}}
	byLabel := tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", Waves: []tenancyv1alpha1.Wave{{Name: "canary"}, {Name: "early"}, {Name: "prod"}}}
	wave, names, invalid := assignWaves(byLabel, clusters, labels)
	if invalid != "" || strings.Join(names, ",") != "canary,early,prod,rest" || wave[c("a")] != 0 || wave[c("b")] != 2 || wave[c("d")] != 3 {
		t.Fatalf("by label: %v %v %q", wave, names, invalid)
	}
	in := rolloutInput{Spec: byLabel, Waves: names}
	for _, cl := range clusters {
		in.Clusters = append(in.Clusters, rolloutCluster{Cluster: cl, Wave: wave[cl]})
	}
	if ws := in.waveStatus(nil, nil, nil); ws[1].Clusters != 0 || !strings.Contains(ws[1].Message, "ring=early") {
		t.Errorf("an empty wave says %+v", ws[1])
	}

	tests := []struct {
		name string
		spec tenancyv1alpha1.RolloutSpec
		want string
	}{
		{"overlapping lists", tenancyv1alpha1.RolloutSpec{Waves: []tenancyv1alpha1.Wave{{Name: "one", Clusters: []string{"a", "b"}}, {Name: "two", Clusters: []string{"b"}}}},
			"cluster fleet/b is in waves one and two"},
		{"a list over a label", tenancyv1alpha1.RolloutSpec{WaveLabel: "ring", Waves: []tenancyv1alpha1.Wave{{Name: "canary"}, {Name: "late", Clusters: []string{"a"}}}},
			"cluster fleet/a is in waves canary and late"},
		{"bake time", tenancyv1alpha1.RolloutSpec{BakeTime: &metav1.Duration{Duration: time.Second}}, "below the minimum of 10s"},
		{"budget", tenancyv1alpha1.RolloutSpec{FailureBudget: 1, Waves: []tenancyv1alpha1.Wave{{Name: "one", Clusters: []string{"a"}}}},
			"failureBudget 1 is not below the size of wave one (1 clusters)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, invalid := assignWaves(tt.spec, clusters, labels)
			if !strings.Contains(invalid, tt.want) {
				t.Errorf("invalid = %q, want it to say %q", invalid, tt.want)
			}
		})
	}
}

func TestInvalidRolloutMovesNothing(t *testing.T) {
	f := newFleet(t, threeWaves(), 1, 1)
	good, next := snapshot("aaaaaaaaaa"), snapshot("bbbbbbbbbb")
	f.run(&good, tenancyv1alpha1.RolloutComplete)
	in := rolloutInput{Spec: f.spec, Waves: f.waves, Invalid: "spec.rollout.bakeTime 1s is below the minimum", Target: &next,
		Snapshots: f.snaps, Previous: f.status, Clusters: f.clusters, Now: f.now}
	d := decideRollout(in)
	if !d.Stalled || d.Reason != tenancyv1alpha1.InvalidRolloutReason || d.Pins[f.clusters[0].Cluster] != good.ID || d.Pins[f.clusters[1].Cluster] != good.ID {
		t.Fatalf("invalid rollout: %+v", d)
	}
}

func TestMaxUpdating(t *testing.T) {
	pct := intstr.FromString("50%")
	for _, tt := range []struct {
		spec tenancyv1alpha1.RolloutSpec
		size int
		want int
	}{{tenancyv1alpha1.RolloutSpec{}, 3, 1}, {tenancyv1alpha1.RolloutSpec{}, 8, 2}, {tenancyv1alpha1.RolloutSpec{MaxUpdating: &pct}, 5, 3}} {
		if got := maxUpdating(tt.spec, tt.size); got != tt.want {
			t.Errorf("maxUpdating(%v, %d) = %d, want %d", tt.spec.MaxUpdating, tt.size, got, tt.want)
		}
	}
}

// The plan of a chart tenant with a rollout, from the facts the controller
// gathers: the source following the spec resolved the chart; wave one
// gets the chart first, pinned by digest, from a source of its revision.
func TestPlanRolloutPinsClustersByDigest(t *testing.T) {
	teamA := map[string]string{"tenant": "team-a"}
	tn := chartTenant()
	tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{Waves: []tenancyv1alpha1.Wave{{Name: "canary", Clusters: []string{"canary-1"}}, {Name: "prod", Clusters: []string{"prod-1"}}},
		BakeTime: &metav1.Duration{Duration: time.Minute}}
	f := facts(tn, []clusterapi.Facts{ready("tenant-team-a", "canary-1", teamA), ready("tenant-team-a", "prod-1", teamA)})
	f.Now = time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	digest := "sha256:" + strings.Repeat("1", 64)
	tracker := owned(tn, sourcev1.OCIRepositoryKind, "tenant-team-a", render.TenantSourceName(tn.Name))
	repo := tracker.Object.(*sourcev1.OCIRepository)
	want, err := render.TenantSource(tn, "tenant-team-a")
	if err != nil {
		t.Fatal(err)
	}
	repo.Spec, repo.Generation = want.Spec, 2
	repo.Status = sourcev1.OCIRepositoryStatus{ObservedGeneration: 2, Artifact: &meta.Artifact{Revision: "1.4.2@" + digest},
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason}}}
	f.Existing = []render.ExistingObject{tracker}

	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	id := render.RevisionID(tn.Spec.Stack, digest)
	byName := map[string]plan.Object{}
	for _, w := range d.Writes {
		byName[plan.KindOf(w.Object)+" "+w.Object.GetName()] = w.Object
	}
	if _, ok := byName["ControllerRevision "+render.RevisionName(tn.Name, id)]; !ok {
		t.Errorf("no ControllerRevision of the target revision among %v", keys(byName))
	}
	pinned, ok := byName[sourcev1.OCIRepositoryKind+" "+render.RevisionName(tn.Name, id)].(*sourcev1.OCIRepository)
	if !ok || pinned.Spec.Reference.Digest != digest || pinned.Spec.Reference.Tag != "" {
		t.Fatalf("pinned source %+v", pinned)
	}
	canary := render.TenantClusterObjectName(tn.Name, types.NamespacedName{Namespace: "tenant-team-a", Name: "canary-1"})
	hr, ok := byName[helmv2.HelmReleaseKind+" "+canary].(*helmv2.HelmRelease)
	if !ok || hr.Spec.ChartRef.Name != pinned.Name || hr.Labels[tenancyv1alpha1.RevisionLabel] != id {
		t.Fatalf("the canary's HelmRelease %+v", hr)
	}
	prod := render.TenantClusterObjectName(tn.Name, types.NamespacedName{Namespace: "tenant-team-a", Name: "prod-1"})
	if _, ok := byName[helmv2.HelmReleaseKind+" "+prod]; ok {
		t.Errorf("wave prod got the stack before wave canary was done")
	}
	if d.Rollout == nil || d.Rollout.Status.Phase != tenancyv1alpha1.RolloutProgressing {
		t.Fatalf("rollout %+v", d.Rollout)
	}

	// The fold: status.rollout, RolledOut and each line's wave and
	// revision.
	if err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Observed: plan.Observed{}}, Now: metav1.Time{Time: f.Now}}); err != nil {
		t.Fatal(err)
	}
	c := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.RolledOutCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.RolloutProgressingReason || !strings.Contains(c.Message, "wave canary (1 of 2)") {
		t.Fatalf("RolledOut %+v", c)
	}
	lines := map[string]tenancyv1alpha1.TenantClusterStatus{}
	for _, l := range tn.Status.Clusters {
		lines[l.Name] = l
	}
	if lines["canary-1"].Revision != id || lines["canary-1"].Wave != "canary" || lines["prod-1"].Revision != "" || lines["prod-1"].Wave != "prod" {
		t.Errorf("lines %+v", tn.Status.Clusters)
	}
	if l := lines["prod-1"]; l.Phase != tenancyv1alpha1.ClusterPhasePending || l.Reason != tenancyv1alpha1.WaitingForWaveReason || !strings.Contains(l.Message, "wave prod") {
		t.Errorf("a cluster no wave reached yet: %+v", l)
	}
	if tn.Status.Rollout == nil || tn.Status.Rollout.Target.ID != id || len(tn.Status.Rollout.Waves) != 2 {
		t.Errorf("status.rollout %+v", tn.Status.Rollout)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A source that cannot fetch the stack is what the rollout, and every
// cluster waiting for it, says.
func TestPlanRolloutSaysWhyNothingRollsOut(t *testing.T) {
	tn := kustomizeTenant()
	tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{}
	f := facts(tn, []clusterapi.Facts{ready("team-b-clusters", "prod-1", nil)})
	f.NoArtifactServer = true
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rollout.Reason != tenancyv1alpha1.RolloutResolvingReason || !strings.Contains(d.Rollout.Message, "is not written yet") {
		t.Fatalf("no source yet: %s %s", d.Rollout.Reason, d.Rollout.Message)
	}
	tracker := owned(tn, sourcev1.OCIRepositoryKind, "team-b-clusters", render.TenantSourceName(tn.Name))
	repo := tracker.Object.(*sourcev1.OCIRepository)
	want, err := render.TenantSource(tn, "team-b-clusters")
	if err != nil {
		t.Fatal(err)
	}
	repo.Spec, repo.Generation = want.Spec, 1
	repo.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "OCIArtifactLayerOperationFailed",
		Message: "failed to extract layer contents from artifact: requires gzip-compressed body", ObservedGeneration: 1}}
	f.Existing = []render.ExistingObject{tracker}
	if d, err = Plan(f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Rollout.Message, "Flux cannot fetch spec.stack: OCIRepository team-b-clusters/team-b-stack: failed to extract layer contents") {
		t.Fatalf("a source that fails: %s", d.Rollout.Message)
	}
	if err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Observed: plan.Observed{}}, Now: metav1.Time{Time: f.Now}}); err != nil {
		t.Fatal(err)
	}
	if l := tn.Status.Clusters[0]; l.Reason != tenancyv1alpha1.WaitingForWaveReason || !strings.Contains(l.Message, "no revision rolls out yet: Flux cannot fetch spec.stack") {
		t.Errorf("the cluster's line: %+v", l)
	}
}
