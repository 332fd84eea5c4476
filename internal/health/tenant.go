package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// TenantClusterInput is one selected cluster of a tenant, as the controller
// found it.
type TenantClusterInput struct {
	Cluster types.NamespacedName
	// PendingReason and PendingMessage say why the stack cannot be
	// installed on the cluster now (render.SelectClusters); empty for an
	// eligible cluster.
	PendingReason, PendingMessage string
	// Conflict is set when the controller refused to write the cluster's
	// Flux object because an object it did not create has its name (the
	// message of render.ConflictError).
	Conflict string
	// Source is the tenant's OCIRepository in the Cluster's namespace,
	// Apply the cluster's HelmRelease or Kustomization.
	Source, Apply Observation
	// Namespace is the Kustomization that creates a kustomize stack's
	// target namespace on the cluster, which Apply depends on; Kind is
	// empty when there is none (a chart stack, or a manager that serves
	// no artifacts).
	Namespace Observation
}

// TenantInput is what the fold of one tenant's clusters needs.
type TenantInput struct {
	// Generation of the tenant; ClustersReady carries it.
	Generation int64
	// Suspended is spec.suspend: Flux applies nothing meanwhile.
	Suspended bool
	// Clusters are the selected clusters.
	Clusters []TenantClusterInput
	// MissingNames are entries of spec.clusters.names that match no
	// Cluster (render.ClusterSelection.MissingNames).
	MissingNames []string
	// Previous is status.clusters before this fold: a cluster whose phase
	// does not change keeps its lastTransitionTime, and a Ready cluster
	// stays Ready while Flux re-checks its health (recheckingInstalled).
	Previous []tenancyv1alpha1.TenantClusterStatus
	// Now stamps transitions.
	Now metav1.Time
}

// TenantResult is the fold's share of the tenant status.
type TenantResult struct {
	// Clusters is the status line of every selected cluster, sorted by
	// namespace and name.
	Clusters                                  []tenancyv1alpha1.TenantClusterStatus
	Total, Ready, Installing, Pending, Failed int32
	ClustersReady                             metav1.Condition
}

// FoldTenant folds the observations of a tenant's clusters into one
// status line per cluster, the counts and ClustersReady.
//
// A cluster is Ready only when its HelmRelease or Kustomization is Ready
// for its current generation (health checks passed) at the revision the
// tenant's source in that namespace holds for its current generation — a
// new chart version or tag is Installing until it reaches the cluster —
// and stays Ready while Flux's routine reconcile re-applies and re-checks
// that revision, so a tenant nothing happens to is never written. A
// failure is Failed on that cluster's line only; a source that cannot
// fetch the stack fails the clusters of its namespace, and a Kustomization
// that cannot create a kustomize stack's target namespace fails its
// cluster even while the stack is still Ready there. A selected cluster
// that cannot take the stack yet is Pending, never Failed.
func FoldTenant(in TenantInput) TenantResult {
	previous := make(map[types.NamespacedName]*tenancyv1alpha1.TenantClusterStatus, len(in.Previous))
	for i := range in.Previous {
		p := &in.Previous[i]
		previous[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	res := TenantResult{Clusters: make([]tenancyv1alpha1.TenantClusterStatus, 0, len(in.Clusters))}
	for _, c := range in.Clusters {
		p := previous[c.Cluster]
		line := foldCluster(c, in.Suspended, p)
		// ClustersReady lists the lines, "; " after each: without the
		// newline Flux's message may end with.
		line.Message = truncate(strings.TrimRightFunc(line.Message, unicode.IsSpace), tenancyv1alpha1.MaxClusterMessageLength)
		line.LastTransitionTime = in.Now
		if p != nil && p.Phase == line.Phase {
			line.LastTransitionTime = p.LastTransitionTime
		}
		res.Clusters = append(res.Clusters, line)
		switch line.Phase {
		case tenancyv1alpha1.ClusterPhaseReady:
			res.Ready++
		case tenancyv1alpha1.ClusterPhaseInstalling:
			res.Installing++
		case tenancyv1alpha1.ClusterPhasePending:
			res.Pending++
		case tenancyv1alpha1.ClusterPhaseFailed:
			res.Failed++
		}
	}
	slices.SortFunc(res.Clusters, func(a, b tenancyv1alpha1.TenantClusterStatus) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	res.Total = int32(len(res.Clusters))
	res.ClustersReady = clustersReady(in, res)
	return res
}

// foldCluster is one cluster's status line, without its transition time.
// previous is the cluster's line before this fold, or nil.
func foldCluster(c TenantClusterInput, suspended bool, previous *tenancyv1alpha1.TenantClusterStatus) tenancyv1alpha1.TenantClusterStatus {
	line := tenancyv1alpha1.TenantClusterStatus{Namespace: c.Cluster.Namespace, Name: c.Cluster.Name, AppliedRevision: c.Apply.Revision}
	if c.Apply.Kind != "" {
		line.FluxObject = &tenancyv1alpha1.FluxObjectReference{Kind: c.Apply.Kind, Name: c.Apply.Name}
	}
	set := func(phase tenancyv1alpha1.ClusterPhase, reason, message string) tenancyv1alpha1.TenantClusterStatus {
		// Suspended Flux objects report on nothing new: what would read
		// as installing waits for the user instead.
		if suspended && phase == tenancyv1alpha1.ClusterPhaseInstalling {
			phase, reason = tenancyv1alpha1.ClusterPhasePending, tenancyv1alpha1.SuspendedReason
			message = "spec.suspend is true, so Flux installs nothing until it is unset; " + message
		}
		line.Phase, line.Reason, line.Message = phase, reason, message
		return line
	}
	switch {
	case c.Conflict != "":
		return set(tenancyv1alpha1.ClusterPhaseFailed, tenancyv1alpha1.NameConflictReason, c.Conflict)
	case c.PendingReason != "":
		return set(tenancyv1alpha1.ClusterPhasePending, c.PendingReason, c.PendingMessage)
	case c.Apply.Kind == "":
		return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason, "the cluster's Flux object is not written yet")
	}

	namespace := namespaceReadiness(c.Namespace)
	namespaceFailed := func() tenancyv1alpha1.TenantClusterStatus {
		return set(tenancyv1alpha1.ClusterPhaseFailed, namespace.reason, "Flux failed to create the target namespace: "+
			withHints(namespace.message, identityHint(namespace), externalArtifactHint(namespace)))
	}
	if c.Apply.Missing {
		switch {
		case namespace.status == metav1.ConditionFalse:
			return namespaceFailed()
		case c.Namespace.Kind != "" && !TenantNamespaceCreated(c.Namespace):
			return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason,
				fmt.Sprintf("%s is written once the target namespace exists: %s", c.Apply.ref(), namespace.message))
		}
		return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason, c.Apply.ref()+" is not written yet")
	}

	apply := c.Apply.settledReadiness()
	if apply.status == metav1.ConditionUnknown && recheckingInstalled(c.Apply, previous) {
		apply.status = metav1.ConditionTrue
	}
	source := sourceReadiness(c.Source)
	atSource := sameRevision(c.Apply.Revision, c.Source.Revision)
	if atSource {
		line.AppliedRevision = c.Source.Revision // tag@digest reads better than the digest
	}
	switch {
	case apply.status == metav1.ConditionFalse:
		return set(tenancyv1alpha1.ClusterPhaseFailed, apply.reason, "Flux failed to install the stack: "+withHints(apply.message, namespaceHint(c, apply), identityHint(apply)))
	case namespace.status == metav1.ConditionFalse:
		return namespaceFailed()
	case source.status == metav1.ConditionFalse:
		return set(tenancyv1alpha1.ClusterPhaseFailed, source.reason, "Flux cannot fetch the stack: "+source.message)
	case apply.status == metav1.ConditionTrue && source.status == metav1.ConditionTrue && atSource:
		return set(tenancyv1alpha1.ClusterPhaseReady, tenancyv1alpha1.InstalledReason,
			fmt.Sprintf("Flux installed %s and its health checks passed (%s)", c.Source.Revision, c.Apply.ref()))
	case apply.status == metav1.ConditionTrue && source.status == metav1.ConditionTrue:
		return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason,
			fmt.Sprintf("%s has applied %s, not yet %s", c.Apply.ref(), cmp.Or(c.Apply.Revision, "nothing"), c.Source.Revision))
	case apply.status == metav1.ConditionTrue:
		return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason, source.message)
	}
	return set(tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason, apply.message)
}

// sourceReadiness is the readiness of the tenant's source, except that a
// source only re-checking the registry (refetching) keeps counting as
// Ready.
func sourceReadiness(o Observation) readiness {
	if o.Kind == "" {
		return readiness{status: metav1.ConditionUnknown, reason: notFoundReason, message: "the tenant's OCIRepository in this namespace is not written yet"}
	}
	r := o.readiness()
	if o.refetching() {
		r.status = metav1.ConditionTrue
	}
	return r
}

// identityHint explains a stack refused because the ServiceAccount Flux
// impersonated on the workload cluster may not do it: under Flux's
// multi-tenancy lockdown (--default-service-account) that is the Cluster
// namespace's ServiceAccount, which a new workload cluster grants nothing.
func identityHint(r readiness) string {
	if !strings.Contains(r.message, "is forbidden: User \"system:serviceaccount:") {
		return ""
	}
	return "; Flux applies the stack on the workload cluster as that ServiceAccount (Flux's multi-tenancy lockdown): grant that ServiceAccount what the stack installs on the workload cluster, its target namespace included, e.g. with a ClusterResourceSet (docs/security.md, Flux settings for a multi-tenant site)"
}

// maxListed bounds how many clusters ClustersReady names.
const maxListed = 5

// clustersReady is ClustersReady: True when the stack is Ready on every
// selected cluster (or none is selected), else False with the reason of
// the worst phase present — Failed, then Installing, then Pending, then
// named clusters that do not exist — and a message that counts the phases
// and names the first clusters not Ready, failures first.
func clustersReady(in TenantInput, res TenantResult) metav1.Condition {
	// The message stays far below the API's 32768 bytes: at most
	// maxListed cluster messages of MaxClusterMessageLength, and names of
	// at most 63 characters.
	cond := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: tenancyv1alpha1.ClustersReadyCondition, Status: status, Reason: reason,
			Message: message, ObservedGeneration: in.Generation, LastTransitionTime: in.Now}
	}
	missing := ""
	if len(in.MissingNames) > 0 {
		missing = fmt.Sprintf("; spec.clusters.names lists %s, which exist in none of the tenant's namespaces", strings.Join(in.MissingNames, ", "))
	}
	if res.Total == 0 {
		if missing != "" {
			return cond(metav1.ConditionFalse, tenancyv1alpha1.ClustersNotFoundReason, "no cluster is selected"+missing)
		}
		return cond(metav1.ConditionTrue, tenancyv1alpha1.NoClustersSelectedReason,
			"no Cluster in the tenant's namespaces matches spec.clusters; the stack is installed on Clusters as they appear")
	}
	counts := fmt.Sprintf("%d of %d clusters Ready", res.Ready, res.Total)
	for _, n := range []struct {
		count int32
		phase tenancyv1alpha1.ClusterPhase
	}{{res.Installing, tenancyv1alpha1.ClusterPhaseInstalling}, {res.Pending, tenancyv1alpha1.ClusterPhasePending}, {res.Failed, tenancyv1alpha1.ClusterPhaseFailed}} {
		if n.count > 0 {
			counts += fmt.Sprintf(", %d %s", n.count, n.phase)
		}
	}
	var reason string
	switch {
	case res.Failed > 0:
		reason = tenancyv1alpha1.ClustersFailedReason
	case res.Installing > 0:
		reason = tenancyv1alpha1.ClustersInstallingReason
	case res.Pending > 0:
		reason = tenancyv1alpha1.ClustersPendingReason
	case missing != "":
		return cond(metav1.ConditionFalse, tenancyv1alpha1.ClustersNotFoundReason, counts+missing)
	default:
		return cond(metav1.ConditionTrue, tenancyv1alpha1.AllClustersReadyReason, fmt.Sprintf("the stack is Ready on all %d clusters", res.Total))
	}
	var listed []string
	for _, phase := range []tenancyv1alpha1.ClusterPhase{tenancyv1alpha1.ClusterPhaseFailed, tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.ClusterPhasePending} {
		for _, c := range res.Clusters {
			if c.Phase == phase && len(listed) < maxListed {
				listed = append(listed, fmt.Sprintf("%s/%s %s (%s): %s", c.Namespace, c.Name, c.Phase, c.Reason, c.Message))
			}
		}
	}
	more := ""
	if notReady := int(res.Total - res.Ready); notReady > len(listed) {
		more = fmt.Sprintf("; and %d more", notReady-len(listed))
	}
	return cond(metav1.ConditionFalse, reason, counts+missing+". "+strings.Join(listed, "; ")+more)
}

// SetTenantClusters writes the fold's result into a tenant's status and
// reports whether anything changed, so that a resync that found nothing
// new writes nothing.
func SetTenantClusters(status *tenancyv1alpha1.TenantStatus, res TenantResult) bool {
	changed := !slices.EqualFunc(status.Clusters, res.Clusters, sameClusterStatus) ||
		status.TotalClusters != res.Total || status.ReadyClusters != res.Ready || status.InstallingClusters != res.Installing ||
		status.PendingClusters != res.Pending || status.FailedClusters != res.Failed
	if changed {
		status.Clusters = res.Clusters
		status.TotalClusters, status.ReadyClusters, status.InstallingClusters = res.Total, res.Ready, res.Installing
		status.PendingClusters, status.FailedClusters = res.Pending, res.Failed
	}
	return apimeta.SetStatusCondition(&status.Conditions, res.ClustersReady) || changed
}

// sameClusterStatus compares two status lines; times compare as instants
// (a status read back from the API server has lost its monotonic clock
// and sub-second part).
func sameClusterStatus(a, b tenancyv1alpha1.TenantClusterStatus) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Phase == b.Phase && a.Reason == b.Reason &&
		a.Message == b.Message && a.AppliedRevision == b.AppliedRevision && a.Revision == b.Revision && a.Wave == b.Wave &&
		a.LastTransitionTime.Equal(&b.LastTransitionTime) && equalRef(a.FluxObject, b.FluxObject)
}

func equalRef(a, b *tenancyv1alpha1.FluxObjectReference) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// truncate cuts s to at most limit bytes, on a rune boundary, marking the
// cut with "…".
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FailedAttempt tells whether Flux tried the artifact of digest on a
// cluster and failed, as a rollout counts a failure: the cluster's
// HelmRelease ran a Helm action for its current generation with that
// artifact and is not Ready, or its Kustomization attempted that artifact
// and is not Ready for its current generation for a reason of its own
// (not its source's or a dependency's); or the source pinned to the
// artifact failed for its current generation (a digest that cannot be
// pulled or verified). Flux reports passing states — an applier waiting
// for its new source, a source whose registry cannot be reached for now
// (registryUnreachable) — as Ready False too; those are no failure of the
// revision, which waits for them. (Flux moves status.observedGeneration
// only on success; the Ready condition carries the generation it is
// about.)
func FailedAttempt(apply, source Observation, digest string) bool {
	if failedAtGeneration(source) && !registryUnreachable(source) {
		return true
	}
	if revisionDigest(apply.LastAttemptedRevision) != digest || !failedAtGeneration(apply) {
		return false
	}
	switch apply.Kind {
	case helmv2.HelmReleaseKind:
		return apply.AttemptedGeneration == apply.Generation
	default:
		r := apply.condition(meta.ReadyCondition)
		return r == nil || (r.Reason != meta.ArtifactFailedReason && r.Reason != meta.DependencyNotReadyReason)
	}
}

// failedAtGeneration: the object's Ready (or Stalled) says it failed, for
// its current generation.
func failedAtGeneration(o Observation) bool {
	if o.Missing || o.Kind == "" {
		return false
	}
	if stalled := o.condition(meta.StalledCondition); stalled != nil && stalled.Status == metav1.ConditionTrue {
		return stalled.ObservedGeneration == o.Generation
	}
	c := o.condition(meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == o.Generation
}
