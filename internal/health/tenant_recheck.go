package health

import (
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
//   - kustomize-controller runs the health checks of that revision again
//     for the object's current generation (rerunningHealthChecks) — a new
//     revision or generation is Installing, and a failure the re-check
//     finds shows at once.
func recheckingInstalled(o Observation, previous *tenancyv1alpha1.TenantClusterStatus) bool {
	if previous == nil || previous.Phase != tenancyv1alpha1.ClusterPhaseReady || previous.FluxObject == nil ||
		previous.FluxObject.Kind != o.Kind || previous.FluxObject.Name != o.Name {
		return false
	}
	return sameRevision(o.Revision, previous.AppliedRevision) && o.rerunningHealthChecks()
}
