package tenant

import (
	"fmt"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Rollout is the plan's share of a tenant with spec.rollout.
type Rollout struct {
	rolloutDecision
	// Waves are each selected, eligible cluster's wave name, and
	// Revisions each selected cluster's revision (its object's, for a
	// pending cluster).
	Waves, Revisions map[types.NamespacedName]string
	// Artifacts are the artifacts of the revisions in use, by ID.
	Artifacts map[string]string
}

// planRollout decides the rollout step of a tenant with spec.rollout and
// what rendering it needs. sources are the source each selected cluster's
// object uses (its revision's pinned source), for observing and folding.
func planRollout(f Facts, sel render.ClusterSelection) (*Rollout, *render.TenantRollout, map[types.NamespacedName]string) {
	t := f.Tenant
	existing := existingObjects(f.Existing)
	labels := map[types.NamespacedName]map[string]string{}
	for _, c := range f.Clusters {
		labels[c.Ref()] = c.Labels
	}
	var eligible []types.NamespacedName
	for _, d := range sel.Selected() {
		if d.Eligible {
			eligible = append(eligible, d.Cluster)
		}
	}
	wave, names, invalid := assignWaves(*t.Spec.Rollout, eligible, labels)
	in := rolloutInput{
		Spec: *t.Spec.Rollout, Suspended: t.Spec.Suspend, Waves: names, Invalid: invalid,
		Snapshots: f.Snapshots, Retry: t.Annotations[tenancyv1alpha1.RetryRolloutAnnotation], Now: f.Now,
	}
	if t.Status.Rollout != nil {
		in.Previous = *t.Status.Rollout
	}
	in.Target, in.Resolving = resolveTarget(t, sel, existing, f.Snapshots)

	// Each cluster's health on the revision its object runs now, folded
	// as the status would be from what was read before this reconcile.
	current := map[types.NamespacedName]string{}
	unpinned := map[types.NamespacedName]bool{}
	for _, c := range eligible {
		if o := applier(t, existing, c); o != nil {
			current[c] = render.ClusterRevision(o)
			unpinned[c] = current[c] == ""
		}
	}
	before := health.FoldTenant(health.TenantInput{
		Generation: t.Generation, Suspended: t.Spec.Suspend, Previous: t.Status.Clusters, Now: metav1.Time{Time: f.Now},
		Clusters: clusterInputs(t, sel, WantsStacks(f), existing, nil, sourceNames(t, current)),
	})
	phase := map[types.NamespacedName]tenancyv1alpha1.TenantClusterStatus{}
	for _, l := range before.Clusters {
		phase[types.NamespacedName{Namespace: l.Namespace, Name: l.Name}] = l
	}
	for _, c := range eligible {
		rc := rolloutCluster{Cluster: c, Wave: wave[c], Revision: current[c], Unpinned: unpinned[c], Phase: phase[c].Phase, Message: phase[c].Message}
		if rc.Phase == tenancyv1alpha1.ClusterPhaseFailed && !failedOnRevision(t, existing, c, current[c], in) {
			// Flux's passing states (a source not fetched yet) are no
			// failure of the revision.
			rc.Phase = tenancyv1alpha1.ClusterPhaseInstalling
		}
		in.Clusters = append(in.Clusters, rc)
	}
	in.Clusters = sortedClusters(in.Clusters)
	d := decideRollout(in)

	out := &Rollout{rolloutDecision: d, Waves: map[types.NamespacedName]string{}, Revisions: map[types.NamespacedName]string{}, Artifacts: map[string]string{}}
	for _, c := range eligible {
		out.Waves[c] = names[wave[c]]
	}
	r := &render.TenantRollout{Pins: map[types.NamespacedName]render.StackSnapshot{}, Sources: map[string][]render.StackSnapshot{}}
	keep := map[string]render.StackSnapshot{}
	inNamespace := map[string]map[string]bool{}
	use := func(ns, id string) {
		s, ok := in.snapshot(id)
		if !ok {
			return
		}
		keep[id] = s
		if inNamespace[ns] == nil {
			inNamespace[ns] = map[string]bool{}
		}
		if !inNamespace[ns][id] {
			inNamespace[ns][id] = true
			r.Sources[ns] = append(r.Sources[ns], s)
		}
	}
	sources := map[types.NamespacedName]string{}
	for _, c := range sel.Selected() {
		id := d.Pins[c.Cluster]
		if !c.Eligible {
			// A pending cluster keeps its object, and the object its
			// source.
			if o := applier(t, existing, c.Cluster); o != nil {
				id = render.ClusterRevision(o)
			}
		}
		if id == "" {
			continue
		}
		if s, ok := in.snapshot(id); ok {
			if c.Eligible {
				r.Pins[c.Cluster] = s
			}
			use(c.Cluster.Namespace, id)
			sources[c.Cluster] = render.RevisionName(t.Name, id)
			out.Revisions[c.Cluster] = id
			out.Artifacts[id] = s.Artifact
		}
	}
	for _, rev := range []*tenancyv1alpha1.StackRevision{d.Status.LastGood, d.Status.Target} {
		if rev != nil {
			if s, ok := in.snapshot(rev.ID); ok {
				keep[rev.ID] = s
			}
		}
	}
	for _, s := range keep {
		r.Snapshots = append(r.Snapshots, s)
	}
	for ns := range r.Sources {
		slices.SortFunc(r.Sources[ns], func(a, b render.StackSnapshot) int { return int(a.Number - b.Number) })
	}
	return out, r, sources
}

// sourceNames is the source each cluster's object uses: its revision's
// pinned source, or the one following the spec for an object without a
// revision.
func sourceNames(t *tenancyv1alpha1.Tenant, revisions map[types.NamespacedName]string) map[types.NamespacedName]string {
	out := map[types.NamespacedName]string{}
	for c, id := range revisions {
		if id != "" {
			out[c] = render.RevisionName(t.Name, id)
		}
	}
	return out
}

// existingObjects indexes what exists of the tenant's objects as Observed
// does the sync's reads.
func existingObjects(existing []render.ExistingObject) plan.Observed {
	out := plan.Observed{}
	for _, e := range existing {
		if o, ok := e.Object.(plan.Object); ok {
			out[plan.ObservedKey(e.Kind, e.Object.GetNamespace(), e.Object.GetName())] = o
		}
	}
	return out
}

// applier is the cluster's HelmRelease or Kustomization as it exists, or
// nil.
func applier(t *tenancyv1alpha1.Tenant, existing plan.Observed, c types.NamespacedName) metav1.Object {
	name := render.TenantClusterObjectName(t.Name, c)
	kind := kustomizev1.KustomizationKind
	if t.Spec.Stack.Chart != nil {
		kind = helmv2.HelmReleaseKind
	}
	if o := existing.Get(kind, c.Namespace, name); o != nil {
		return o
	}
	return nil
}

// resolveTarget is the revision spec.stack resolves to now: the artifact
// the tenant's sources that follow the spec hold, in every namespace
// with selected clusters, once each has fetched for its current spec
// (and they agree), with the rest of spec.stack. Otherwise nil, and why.
func resolveTarget(t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, existing plan.Observed, snapshots map[string]render.StackSnapshot) (*render.StackSnapshot, string) {
	s, why := resolve(t, sel, existing, snapshots)
	if s == nil && !strings.HasPrefix(why, "Flux cannot fetch") {
		why = "waiting for Flux to resolve spec.stack to an artifact: " + why
	}
	return s, why
}

func resolve(t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, existing plan.Observed, snapshots map[string]render.StackSnapshot) (*render.StackSnapshot, string) {
	var namespaces []string
	for _, d := range sel.Selected() {
		if !slices.Contains(namespaces, d.Cluster.Namespace) {
			namespaces = append(namespaces, d.Cluster.Namespace)
		}
	}
	if len(namespaces) == 0 {
		return nil, "no cluster is selected"
	}
	artifact := ""
	for _, ns := range namespaces {
		name := render.TenantSourceName(t.Name)
		want, err := render.TenantSource(t, ns)
		if err != nil {
			return nil, err.Error()
		}
		o, _ := existing.Get(sourcev1.OCIRepositoryKind, ns, name).(*sourcev1.OCIRepository)
		ref := fmt.Sprintf("OCIRepository %s/%s", ns, name)
		if o == nil {
			return nil, ref + " is not written yet"
		}
		ready := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		switch {
		case !sameSourceSpec(o.Spec, want.Spec):
			return nil, ref + " is being updated to the current spec.stack"
		case ready != nil && ready.Status == metav1.ConditionFalse && ready.ObservedGeneration == o.Generation:
			// Flux says why it cannot fetch: that is what to fix.
			return nil, fmt.Sprintf("Flux cannot fetch spec.stack: %s: %s (%s)", ref, ready.Message, ready.Reason)
		case o.Status.ObservedGeneration != o.Generation || o.Status.Artifact == nil:
			return nil, ref + " has not fetched the current spec.stack yet"
		case ready == nil || ready.Status != metav1.ConditionTrue:
			return nil, ref + " is not Ready yet"
		}
		switch rev := o.Status.Artifact.Revision; {
		case render.ArtifactDigest(rev) == "":
			return nil, fmt.Sprintf("%s holds %q, which names no sha256 digest", ref, rev)
		case artifact != "" && render.ArtifactDigest(artifact) != render.ArtifactDigest(rev):
			return nil, fmt.Sprintf("the tenant's sources do not agree yet (%s and %s); waiting for every namespace's source to fetch the same artifact", artifact, rev)
		default:
			artifact = rev
		}
	}
	digest := render.ArtifactDigest(artifact)
	s := render.StackSnapshot{ID: render.RevisionID(t.Spec.Stack, digest), Artifact: artifact, Digest: digest, Stack: *t.Spec.Stack.DeepCopy()}
	if known, ok := snapshots[s.ID]; ok {
		s.Number = known.Number
	} else {
		for _, k := range snapshots {
			s.Number = max(s.Number, k.Number)
		}
		s.Number++
	}
	return &s, ""
}

// sameSourceSpec compares what of a source's spec chooses its artifact.
func sameSourceSpec(a, b sourcev1.OCIRepositorySpec) bool {
	return a.URL == b.URL && apiequality.Semantic.DeepEqual(a.Reference, b.Reference) &&
		apiequality.Semantic.DeepEqual(a.LayerSelector, b.LayerSelector) && apiequality.Semantic.DeepEqual(a.Verify, b.Verify)
}

// failedOnRevision tells whether Flux tried the cluster's revision and
// failed (health.FailedAttempt); a cluster without a known revision has
// not.
func failedOnRevision(t *tenancyv1alpha1.Tenant, existing plan.Observed, c types.NamespacedName, id string, in rolloutInput) bool {
	s, ok := in.snapshot(id)
	if !ok {
		return false
	}
	kind := kustomizev1.KustomizationKind
	if t.Spec.Stack.Chart != nil {
		kind = helmv2.HelmReleaseKind
	}
	apply := observation(existing, kind, c.Namespace, render.TenantClusterObjectName(t.Name, c))
	source := observation(existing, sourcev1.OCIRepositoryKind, c.Namespace, render.RevisionName(t.Name, id))
	return health.FailedAttempt(apply, source, s.Digest)
}

// waiting is the selection as the fold reads it: an eligible cluster a
// rollout gave no revision yet (no wave has reached it, and there is no
// last good revision) is Pending, waiting for its wave.
func (r *Rollout) waiting(sel render.ClusterSelection) render.ClusterSelection {
	if r == nil {
		return sel
	}
	out := sel
	out.Clusters = slices.Clone(sel.Clusters)
	for i, c := range out.Clusters {
		if !c.Selected || !c.Eligible || r.Revisions[c.Cluster] != "" {
			continue
		}
		out.Clusters[i].Reason = tenancyv1alpha1.WaitingForWaveReason
		out.Clusters[i].Message = fmt.Sprintf("the rollout has not reached wave %s yet, and there is no last good revision to run until then", r.Waves[c.Cluster])
		if r.Reason == tenancyv1alpha1.RolloutResolvingReason || r.Reason == tenancyv1alpha1.InvalidRolloutReason {
			// Nothing rolls out: say why, where the user looks first.
			out.Clusters[i].Message = "no revision rolls out yet: " + r.Message
		}
	}
	return out
}
