package health

import (
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
)

// BackendResult is the fold of a contract object's backend Flux objects.
type BackendResult struct {
	// Condition is BackendReady (without type, generation and time).
	Status          metav1.ConditionStatus
	Reason, Message string
	// Objects is the state of each Flux object, source first.
	Objects []clustersv1alpha1.BackendStatus
}

// FoldBackend folds the source and the applier (HelmRelease or
// Kustomization) of a backend: True when both are Ready for their current
// generation, False with Flux's reason and message when either failed,
// else Unknown with what Flux is doing. A source that failed explains a
// failed applier (the applier only says it has no artifact). Flux's
// routine reconcile of what it already applied keeps counting as Ready
// (settledReadiness), and so do the health checks a Kustomization runs
// again on the revision it applied while previous, the fold before,
// records it Ready at that revision: otherwise every interval would
// turn the backend Unknown and back, status writes and events that carry
// no news.
func FoldBackend(source, applier Observation, previous []clustersv1alpha1.BackendStatus) BackendResult {
	var res BackendResult
	src, app := source.settledReadiness(), heldBackend(applier, previous)
	for _, o := range []struct {
		Observation
		r readiness
	}{{source, src}, {applier, app}} {
		st := clustersv1alpha1.BackendStatus{Kind: o.Kind, Name: o.Name, Ready: o.r.status, Revision: o.Revision}
		if !o.r.current {
			st.Ready = metav1.ConditionUnknown
		}
		res.Objects = append(res.Objects, st)
	}
	if app.status == metav1.ConditionFalse && waitsForSource(app) && src.status != metav1.ConditionFalse {
		// Capwright writes the source and its applier together, and Flux
		// says the applier fails until the source's first artifact:
		// progress, not a failure, unless the source itself failed.
		app.status = metav1.ConditionUnknown
	}
	switch {
	case src.status == metav1.ConditionFalse:
		res.Status, res.Reason, res.Message = metav1.ConditionFalse, src.reason, src.message
	case app.status == metav1.ConditionFalse:
		res.Status, res.Reason, res.Message = metav1.ConditionFalse, app.reason, withHints(app.message, backendIdentityHint(app.message))
	case src.status != metav1.ConditionTrue:
		res.Status, res.Reason, res.Message = metav1.ConditionUnknown, src.reason, src.message
	case app.status != metav1.ConditionTrue:
		res.Status, res.Reason, res.Message = metav1.ConditionUnknown, app.reason, app.message
	case source.Revision != "" && !sameRevision(source.Revision, applier.Revision):
		// The source holds a new artifact (a tag that moved) the applier
		// has not applied yet: its Ready describes the previous one.
		res.Status, res.Reason = metav1.ConditionUnknown, clustersv1alpha1.InstallingReason
		res.Message = fmt.Sprintf("%s %s/%s has not applied %s yet (it applied %s)", applier.Kind, applier.Namespace, applier.Name, source.Revision, orNothing(applier.Revision))
	default:
		res.Status, res.Reason, res.Message = metav1.ConditionTrue, clustersv1alpha1.SucceededReason,
			"Flux installed "+applier.Kind+" "+applier.Name+" at "+orNothing(applier.Revision)
	}
	if res.Reason == "" {
		res.Reason = clustersv1alpha1.InstallingReason
	}
	return res
}

// heldBackend is the applier's readiness, held through the health checks
// kustomize-controller runs again while previous records it Ready at the
// revision it applied (heldThroughRecheck).
func heldBackend(o Observation, previous []clustersv1alpha1.BackendStatus) readiness {
	for _, p := range previous {
		if p.Kind == o.Kind && p.Name == o.Name && p.Ready == metav1.ConditionTrue && sameRevision(p.Revision, o.Revision) {
			return o.heldThroughRecheck(true)
		}
	}
	return o.heldThroughRecheck(false)
}

// backendIdentityHint explains a backend refused because the
// ServiceAccount Flux impersonated may not create what the backend holds:
// backend.serviceAccountName, or under Flux's multi-tenancy lockdown
// (--default-service-account) the namespace's default, which a namespace
// grants nothing.
func backendIdentityHint(message string) string {
	if !strings.Contains(message, `is forbidden: User "system:serviceaccount:`) {
		return ""
	}
	return "; Flux installs the backend as that ServiceAccount (spec.backend.serviceAccountName, or the namespace's default one under Flux's multi-tenancy lockdown): grant it what the backend creates in this namespace, and for a chart Helm's release Secrets, e.g. with a Role and RoleBinding (docs/clusters.md, \"Flux's lockdown\")"
}

// sourceNotReadyReason is helm-controller's Ready reason while a
// HelmRelease's chart source has no artifact yet (not in its API package).
const sourceNotReadyReason = "SourceNotReady"

// waitsForSource tells whether an applier's failure only says its source
// has no (current) artifact yet: kustomize-controller's ArtifactFailed,
// helm-controller's ArtifactFailed or SourceNotReady.
func waitsForSource(r readiness) bool {
	return r.reason == meta.ArtifactFailedReason || r.reason == sourceNotReadyReason
}

// ControlPlaneSummary is a CapwrightControlPlane's Ready over
// BackendReady, KubeconfigReady and Available (which must be True) and
// Paused and Deleting (which must not be), by the rules of Summary.
func ControlPlaneSummary(generation int64, conds []metav1.Condition, now metav1.Time) metav1.Condition {
	return summarize([]summaryTerm{
		{clustersv1alpha1.BackendReadyCondition, true},
		{clustersv1alpha1.KubeconfigReadyCondition, true},
		{clustersv1alpha1.AvailableCondition, true},
		{clustersv1alpha1.PausedCondition, false},
		{clustersv1alpha1.DeletingCondition, false},
	}, generation, conds, now, "Flux installed the backend, it is ready at the desired version and the kubeconfig is published")
}

// ClusterSummary is a CapwrightCluster's Ready over BackendReady (which
// must be True) and Paused and Deleting (which must not be).
func ClusterSummary(generation int64, conds []metav1.Condition, now metav1.Time) metav1.Condition {
	return summarize([]summaryTerm{
		{clustersv1alpha1.BackendReadyCondition, true},
		{clustersv1alpha1.PausedCondition, false},
		{clustersv1alpha1.DeletingCondition, false},
	}, generation, conds, now, "the infrastructure is provisioned")
}
