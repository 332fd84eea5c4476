package health

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// recheckingInstalled tells whether a cluster whose line was Ready is
// only having its health re-checked by Flux's routine reconcile.
//
// On every interval kustomize-controller re-applies the revision it
// applied and, for a Kustomization with wait, runs the health checks
// again: Ready Unknown, Reconciling True and Healthy Unknown until they
// pass (settledReadiness holds the steps before, while Healthy is still
// the last check's True). The previous line is the only record left that
// the last check passed; without it every interval would turn each
// cluster Installing and back, two status writes and two events that
// carry no news. Held only while:
//   - the line was Ready at the revision the object applied, under the
//     same Flux object;
//   - the object is reconciling its current generation (observedGeneration)
//     and attempting exactly that revision — a new one is Installing;
//   - Ready is not False, Healthy not False and it is not Stalled — a
//     failure the re-check finds shows at once.
func recheckingInstalled(o Observation, previous *tenancyv1alpha1.TenantClusterStatus) bool {
	if previous == nil || previous.Phase != tenancyv1alpha1.ClusterPhaseReady || previous.FluxObject == nil ||
		previous.FluxObject.Kind != o.Kind || previous.FluxObject.Name != o.Name {
		return false
	}
	if o.Missing || o.ObservedGeneration != o.Generation ||
		!sameRevision(o.Revision, o.LastAttemptedRevision) || !sameRevision(o.Revision, previous.AppliedRevision) {
		return false
	}
	ready, reconciling, healthy := o.condition(meta.ReadyCondition), o.condition(meta.ReconcilingCondition), o.condition(meta.HealthyCondition)
	if ready == nil || ready.Status == metav1.ConditionFalse || reconciling == nil || reconciling.Status != metav1.ConditionTrue ||
		healthy == nil || healthy.Status == metav1.ConditionFalse {
		return false
	}
	stalled := o.condition(meta.StalledCondition)
	return stalled == nil || stalled.Status != metav1.ConditionTrue
}
