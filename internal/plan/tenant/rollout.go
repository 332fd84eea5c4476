package tenant

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
)

// The rollout of a tenant with spec.rollout, decided from what is (each
// cluster's revision and health, the revisions kept, status.rollout as
// the last reconcile left it) and the time, with no client: which
// revision each cluster is to run now, and the new status.rollout.
//
// One reconcile moves the rollout by at most one step: it starts at most
// maxUpdating clusters of the current wave, or starts a wave's bake, or
// ends it, or stops the rollout. Flux's status changes of the clusters'
// objects wake the controller for the next step; a bake wakes it when it
// ends.

// Rollout defaults and bounds.
const (
	DefaultBakeTime = 5 * time.Minute
	// MinBakeTime is the shortest bake time that still means something:
	// a Kustomization's health checks and Flux's status updates take
	// seconds.
	MinBakeTime = 10 * time.Second
	// restWave names the wave of the selected clusters no wave takes, and
	// allWave the one wave without spec.rollout.waves.
	restWave = "rest"
	allWave  = "all"
	// maxFailedRevisions bounds status.rollout.failed, maxFailedClusters
	// the clusters each names.
	maxFailedRevisions = 10
	maxFailedClusters  = 20
)

// defaultMaxUpdating is rollout.maxUpdating's default.
var defaultMaxUpdating = intstr.FromString("25%")

// rolloutCluster is one eligible cluster as the rollout sees it.
type rolloutCluster struct {
	Cluster types.NamespacedName
	Wave    int
	// Revision is the revision its object is pinned to ("" when it has
	// none); Unpinned is set when it has an object without a revision
	// (written before spec.rollout was set).
	Revision string
	Unpinned bool
	// Phase and Message are its health on that revision.
	Phase   tenancyv1alpha1.ClusterPhase
	Message string
}

// rolloutInput is what the decision needs.
type rolloutInput struct {
	Spec      tenancyv1alpha1.RolloutSpec
	Suspended bool
	// Waves are the wave names in order (the rest wave last when used);
	// Invalid says why the waves cannot be followed.
	Waves   []string
	Invalid string
	// Target is the revision the spec resolves to, nil while Flux has
	// not resolved it (Resolving says why, as RolledOut's message).
	Target    *render.StackSnapshot
	Resolving string
	// Snapshots are the revisions kept, by ID.
	Snapshots map[string]render.StackSnapshot
	Previous  tenancyv1alpha1.RolloutStatus
	Clusters  []rolloutCluster
	// Retry is the tenant's retry-rollout annotation ("" without).
	Retry string
	Now   time.Time
}

// rolloutDecision is what the rollout comes to.
type rolloutDecision struct {
	// Pins are the revisions the eligible clusters run; a cluster absent
	// gets no objects yet.
	Pins   map[types.NamespacedName]string
	Status tenancyv1alpha1.RolloutStatus
	// Reason and Message are RolledOut's (False unless Complete).
	Reason, Message string
	// Stalled: the rollout cannot go on until the stack, the rollout or
	// the retry annotation changes.
	Stalled bool
	// After is when to look again (a bake ending), or 0.
	After time.Duration
	// Stopped: this step stopped the rollout (status.rollout.failed[0]
	// says where and why).
	Stopped bool
}

// decideRollout is the next step of the rollout.
func decideRollout(in rolloutInput) rolloutDecision {
	d := rolloutDecision{Pins: map[types.NamespacedName]string{}, Status: *in.Previous.DeepCopy()}
	d.Status.Waves = nil
	lastGood := in.Previous.LastGood
	// What runs stays as it is unless a step below moves it; a cluster
	// without a revision gets the last good one.
	for _, c := range in.Clusters {
		switch {
		case c.Revision != "" && in.has(c.Revision):
			d.Pins[c.Cluster] = c.Revision
		case lastGood != nil && in.has(lastGood.ID):
			d.Pins[c.Cluster] = lastGood.ID
		}
	}
	switch {
	case in.Invalid != "":
		return d.hold(tenancyv1alpha1.InvalidRolloutReason, in.Invalid+"; no cluster changes revision until spec.rollout is fixed", true, in)
	case in.Target == nil:
		return d.hold(tenancyv1alpha1.RolloutResolvingReason, in.Resolving, false, in)
	}
	t := *in.Target
	d.Status.Target = ptr(t.Revision())
	if lastGood == nil && in.anyUnpinned() {
		// spec.rollout was just set on a tenant whose clusters run the
		// stack: what the spec resolves to now is the last good
		// revision, and rollouts start with the next one.
		return d.complete(t, in)
	}
	if lastGood != nil && lastGood.ID == t.ID {
		return d.complete(t, in)
	}
	retried := false
	if failed := failedRecord(in.Previous, t.ID); failed != nil {
		if in.Retry == "" || in.Retry == in.Previous.LastHandledRetry {
			return d.stopped(*failed, in)
		}
		retried = true
		d.Status.Failed = slices.DeleteFunc(d.Status.Failed, func(f tenancyv1alpha1.FailedRevision) bool { return f.ID == t.ID })
	}
	if in.Retry != "" {
		d.Status.LastHandledRetry = in.Retry
	}
	fresh := in.Previous.Target == nil || in.Previous.Target.ID != t.ID || retried
	if in.Suspended {
		return d.hold(tenancyv1alpha1.RolloutPausedReason, "spec.suspend is true: the rollout of "+t.Artifact+" stands still until it is unset", false, in)
	}
	return d.advance(t, fresh, in)
}

// snapshot is a revision that can be rendered: the target, or one kept.
func (in rolloutInput) snapshot(id string) (render.StackSnapshot, bool) {
	if in.Target != nil && in.Target.ID == id {
		return *in.Target, true
	}
	s, ok := in.Snapshots[id]
	return s, ok
}

// has tells whether a revision can be rendered (snapshot).
func (in rolloutInput) has(id string) bool {
	_, ok := in.snapshot(id)
	return ok
}

func (in rolloutInput) anyUnpinned() bool {
	return slices.ContainsFunc(in.Clusters, func(c rolloutCluster) bool { return c.Unpinned })
}

// failedRecord is the record of a failed revision in status.rollout, or
// nil.
func failedRecord(s tenancyv1alpha1.RolloutStatus, id string) *tenancyv1alpha1.FailedRevision {
	for i := range s.Failed {
		if s.Failed[i].ID == id {
			return &s.Failed[i]
		}
	}
	return nil
}

// hold keeps every cluster where it is, with RolledOut False for reason.
func (d rolloutDecision) hold(reason, message string, stalled bool, in rolloutInput) rolloutDecision {
	d.Reason, d.Message, d.Stalled = reason, message, stalled
	if reason == tenancyv1alpha1.RolloutPausedReason {
		d.Status.Phase = tenancyv1alpha1.RolloutPaused
	}
	d.Status.Waves = in.waveStatus(d.Pins, d.Status.Target, in.Previous.Waves)
	return d
}

// complete puts every cluster on t, the last good revision.
func (d rolloutDecision) complete(t render.StackSnapshot, in rolloutInput) rolloutDecision {
	for _, c := range in.Clusters {
		d.Pins[c.Cluster] = t.ID
	}
	d.Status.Phase, d.Status.LastGood = tenancyv1alpha1.RolloutComplete, ptr(t.Revision())
	d.Reason = tenancyv1alpha1.RolloutCompleteReason
	d.Message = fmt.Sprintf("%s (revision %s) is the last good revision; every cluster runs it", t.Artifact, t.ID)
	d.Status.Waves = in.waveStatus(d.Pins, d.Status.Target, in.Previous.Waves)
	return d
}

// stopped is a rollout that failed before: nothing moves.
func (d rolloutDecision) stopped(f tenancyv1alpha1.FailedRevision, in rolloutInput) rolloutDecision {
	phase := in.Previous.Phase
	if phase != tenancyv1alpha1.RolloutRolledBack {
		phase = tenancyv1alpha1.RolloutPaused
	}
	d.Status.Phase, d.Stalled, d.Reason = phase, true, string(phase)
	d.Message = failureMessage(f, phase, in.Previous.LastGood)
	d.Status.Waves = in.waveStatus(d.Pins, d.Status.Target, in.Previous.Waves)
	return d
}

// failureMessage says which revision failed where, what happened to the
// clusters, and how to go on.
func failureMessage(f tenancyv1alpha1.FailedRevision, phase tenancyv1alpha1.RolloutPhase, lastGood *tenancyv1alpha1.StackRevision) string {
	what := "the clusters on it were left as they are (onFailure: Pause)"
	switch {
	case phase == tenancyv1alpha1.RolloutRolledBack && lastGood != nil:
		what = fmt.Sprintf("every cluster on it went back to %s (revision %s)", lastGood.Artifact, lastGood.ID)
	case lastGood == nil:
		what = "there is no last good revision to go back to, so the clusters on it were left as they are"
	}
	return fmt.Sprintf("revision %s (%s) failed in wave %s on %s: %s; %s. It is not tried again: fix the stack and publish a new revision, "+
		"or annotate the Tenant with %s=<a new value> to try this one again",
		f.ID, f.Artifact, f.Wave, strings.Join(f.Clusters, ", "), f.Message, what, tenancyv1alpha1.RetryRolloutAnnotation)
}

// advance moves the rollout of t by one step, wave by wave.
func (d rolloutDecision) advance(t render.StackSnapshot, fresh bool, in rolloutInput) rolloutDecision {
	previous := in.Previous.Waves
	if fresh {
		previous = nil
	}
	waves := in.waveStatus(d.Pins, &tenancyv1alpha1.StackRevision{ID: t.ID}, previous)
	d.Status.Waves = waves
	bake := bakeTime(in.Spec)
	for k := range waves {
		members := in.members(k)
		var failed []rolloutCluster
		updating := 0
		for _, c := range members {
			if d.Pins[c.Cluster] != t.ID || c.Revision != t.ID {
				continue
			}
			switch c.Phase {
			case tenancyv1alpha1.ClusterPhaseFailed:
				failed = append(failed, c)
			case tenancyv1alpha1.ClusterPhaseReady:
			default:
				updating++
			}
		}
		if int32(len(failed)) > in.Spec.FailureBudget {
			return d.fail(t, k, failed, in)
		}
		var waiting []rolloutCluster
		for _, c := range members {
			if d.Pins[c.Cluster] != t.ID {
				waiting = append(waiting, c)
			}
		}
		w := &d.Status.Waves[k]
		if len(waiting) == 0 && (updating == 0 || w.CompletedAt != nil) {
			if w.CompletedAt == nil {
				w.CompletedAt = &metav1.Time{Time: in.Now}
			}
			if len(members) == 0 {
				continue
			}
			if left := w.CompletedAt.Add(bake).Sub(in.Now); left > 0 {
				d.Status.Phase, d.Reason, d.After = tenancyv1alpha1.RolloutBaking, tenancyv1alpha1.RolloutBakingReason, left
				d.Message = fmt.Sprintf("rolling out %s (revision %s): wave %s (%d of %d) runs it; baking until %s (bake time %s)%s",
					t.Artifact, t.ID, w.Name, k+1, len(waves), w.CompletedAt.Add(bake).UTC().Format(time.RFC3339), bake, in.behind(d.Status.LastGood, k, len(waves)))
				return d
			}
			continue
		}
		// The wave goes on: start clusters up to maxUpdating.
		slots := maxUpdating(in.Spec, len(members)) - updating
		for _, c := range waiting {
			if slots <= 0 {
				break
			}
			d.Pins[c.Cluster] = t.ID
			slots--
		}
		d.Status.Waves = in.waveStatus(d.Pins, &tenancyv1alpha1.StackRevision{ID: t.ID}, d.Status.Waves)
		w = &d.Status.Waves[k]
		d.Status.Phase, d.Reason = tenancyv1alpha1.RolloutProgressing, tenancyv1alpha1.RolloutProgressingReason
		d.Message = fmt.Sprintf("rolling out %s (revision %s): wave %s (%d of %d): %d of %d clusters updated, %d failed%s",
			t.Artifact, t.ID, w.Name, k+1, len(waves), w.Updated, w.Clusters, w.Failed, in.behind(d.Status.LastGood, k, len(waves)))
		return d
	}
	return d.complete(t, in)
}

// behind says what the waves after wave k run.
func (in rolloutInput) behind(lastGood *tenancyv1alpha1.StackRevision, k, waves int) string {
	switch {
	case k == waves-1:
		return ""
	case lastGood == nil:
		return "; the later waves get the stack when their turn comes"
	}
	return fmt.Sprintf("; the later waves run %s (revision %s) until their turn", lastGood.Artifact, lastGood.ID)
}

// fail stops the rollout of t: wave k failed beyond its budget.
func (d rolloutDecision) fail(t render.StackSnapshot, k int, failed []rolloutCluster, in rolloutInput) rolloutDecision {
	rec := tenancyv1alpha1.FailedRevision{StackRevision: t.Revision(), Wave: in.Waves[k], FailedAt: metav1.Time{Time: in.Now}}
	for _, c := range failed {
		if len(rec.Clusters) < maxFailedClusters {
			rec.Clusters = append(rec.Clusters, c.Cluster.String())
		}
	}
	rec.Message = truncate(failed[0].Cluster.String()+": "+failed[0].Message, 900)
	d.Status.Failed = append([]tenancyv1alpha1.FailedRevision{rec}, d.Status.Failed...)
	if len(d.Status.Failed) > maxFailedRevisions {
		d.Status.Failed = d.Status.Failed[:maxFailedRevisions]
	}
	lastGood := d.Status.LastGood
	d.Status.Phase = tenancyv1alpha1.RolloutPaused
	if in.Spec.OnFailure != tenancyv1alpha1.RolloutPause && lastGood != nil && in.has(lastGood.ID) {
		d.Status.Phase = tenancyv1alpha1.RolloutRolledBack
		for c, id := range d.Pins {
			if id == t.ID {
				d.Pins[c] = lastGood.ID
			}
		}
	}
	d.Stalled, d.Stopped, d.Reason = true, true, string(d.Status.Phase)
	d.Message = failureMessage(rec, d.Status.Phase, lastGood)
	d.Status.Waves = in.waveStatus(d.Pins, &tenancyv1alpha1.StackRevision{ID: t.ID}, d.Status.Waves)
	return d
}

// members are the eligible clusters of wave k.
func (in rolloutInput) members(k int) []rolloutCluster {
	var out []rolloutCluster
	for _, c := range in.Clusters {
		if c.Wave == k {
			out = append(out, c)
		}
	}
	return out
}

// waveStatus counts each wave's clusters on target (healthy, failed),
// keeping the completion times of previous.
func (in rolloutInput) waveStatus(pins map[types.NamespacedName]string, target *tenancyv1alpha1.StackRevision, previous []tenancyv1alpha1.WaveStatus) []tenancyv1alpha1.WaveStatus {
	out := make([]tenancyv1alpha1.WaveStatus, len(in.Waves))
	for k, name := range in.Waves {
		w := tenancyv1alpha1.WaveStatus{Name: name}
		if k < len(previous) && previous[k].Name == name {
			w.CompletedAt = previous[k].CompletedAt.DeepCopy()
		}
		for _, c := range in.members(k) {
			w.Clusters++
			if target == nil || pins[c.Cluster] != target.ID || c.Revision != target.ID {
				continue
			}
			switch c.Phase {
			case tenancyv1alpha1.ClusterPhaseReady:
				w.Updated++
			case tenancyv1alpha1.ClusterPhaseFailed:
				w.Failed++
			}
		}
		if w.Clusters == 0 {
			w.Message = in.emptyWave(name)
		}
		out[k] = w
	}
	return out
}

// emptyWave says why a wave has no cluster.
func (in rolloutInput) emptyWave(name string) string {
	if name == restWave || name == allWave {
		return "no eligible cluster is in this wave"
	}
	for _, w := range in.Spec.Waves {
		if w.Name == name && len(w.Clusters) > 0 {
			return "none of the clusters this wave lists is selected and eligible (" + strings.Join(w.Clusters, ", ") + ")"
		}
	}
	return fmt.Sprintf("no selected, eligible cluster has the label %s=%s; the wave is skipped", in.Spec.WaveLabel, name)
}

// bakeTime is rollout.bakeTime or its default.
func bakeTime(r tenancyv1alpha1.RolloutSpec) time.Duration {
	if r.BakeTime != nil {
		return r.BakeTime.Duration
	}
	return DefaultBakeTime
}

// maxUpdating is how many clusters of a wave of size may update at once:
// at least one.
func maxUpdating(r tenancyv1alpha1.RolloutSpec, size int) int {
	v := defaultMaxUpdating
	if r.MaxUpdating != nil {
		v = *r.MaxUpdating
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, size, true)
	if err != nil {
		n = 1
	}
	return max(n, 1)
}

// assignWaves puts each eligible cluster in its wave: the wave listing
// it, else the wave named by its waveLabel label, else the rest wave.
// The names are the waves in order (the rest wave last, when a cluster is
// in it); invalid says why the waves cannot be followed (a cluster in two
// waves, a failure budget not below a wave's size, a bake time below the
// minimum), or is "".
func assignWaves(r tenancyv1alpha1.RolloutSpec, clusters []types.NamespacedName, labels map[types.NamespacedName]map[string]string) (wave map[types.NamespacedName]int, names []string, invalid string) {
	wave = map[types.NamespacedName]int{}
	if len(r.Waves) == 0 {
		for _, c := range clusters {
			wave[c] = 0
		}
		names = []string{allWave}
	} else {
		for _, w := range r.Waves {
			names = append(names, w.Name)
		}
		rest := false
		var problems []string
		for _, c := range clusters {
			var in []int
			for k, w := range r.Waves {
				if slices.Contains(w.Clusters, c.Name) || (len(w.Clusters) == 0 && r.WaveLabel != "" && labels[c][r.WaveLabel] == w.Name) {
					in = append(in, k)
				}
			}
			switch len(in) {
			case 0:
				wave[c], rest = len(r.Waves), true
			case 1:
				wave[c] = in[0]
			default:
				var ws []string
				for _, k := range in {
					ws = append(ws, r.Waves[k].Name)
				}
				problems = append(problems, fmt.Sprintf("cluster %s is in waves %s", c, strings.Join(ws, " and ")))
				wave[c] = in[0]
			}
		}
		if rest {
			names = append(names, restWave)
		}
		if len(problems) > 0 {
			return wave, names, "spec.rollout.waves: " + strings.Join(problems, "; ") + "; a cluster may be in one wave only: list it in one wave, or change its label"
		}
	}
	if r.BakeTime != nil && r.BakeTime.Duration < MinBakeTime {
		return wave, names, fmt.Sprintf("spec.rollout.bakeTime %s is below the minimum of %s: Flux needs seconds to apply and health-check a cluster, so a shorter bake proves nothing; set at least %s",
			r.BakeTime.Duration, MinBakeTime, MinBakeTime)
	}
	sizes := make([]int32, len(names))
	for _, k := range wave {
		sizes[k]++
	}
	for k, n := range sizes {
		if n > 0 && r.FailureBudget >= n {
			return wave, names, fmt.Sprintf("spec.rollout.failureBudget %d is not below the size of wave %s (%d clusters): the wave could never fail; set a budget below the smallest wave's size",
				r.FailureBudget, names[k], n)
		}
	}
	return wave, names, ""
}

func ptr[T any](v T) *T { return &v }

// truncate cuts s to at most limit bytes, marking the cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit-len("…")], "") + "…"
}

// sortedClusters are clusters in namespace/name order.
func sortedClusters(cs []rolloutCluster) []rolloutCluster {
	slices.SortFunc(cs, func(a, b rolloutCluster) int {
		return cmp.Or(cmp.Compare(a.Cluster.Namespace, b.Cluster.Namespace), cmp.Compare(a.Cluster.Name, b.Cluster.Name))
	})
	return cs
}
