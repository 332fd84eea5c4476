package tenant

import (
	"errors"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Reconciled is what one reconcile of a Tenant came to: the plan, when
// the facts could be gathered, and what the sync did and saw.
type Reconciled struct {
	// Desired is the plan; nil when the facts could not be gathered
	// (Err says why).
	Desired *Desired
	// Refusal is the plan's (a *plan.Refusal), or nil.
	Refusal error
	// Result is the sync's.
	Result plan.Result
	// Err stopped the reconcile: gathering the facts, or the sync.
	Err error
	// Now stamps the clusters' transitions.
	Now metav1.Time
}

// Fold puts what the reconcile came to on the Tenant's status — Paused,
// the management namespace, ManagementReady, ClustersReady and, once the
// sync observed the tenant's Flux objects, a line per selected cluster —
// and returns what the shell is to make of it: the reconcile's error, a
// refusal (put on its condition here), or nil.
func Fold(t *tenancyv1alpha1.Tenant, in Reconciled) error {
	foldPaused(t)
	t.Status.Namespace = t.ManagementNamespace()
	d := in.Desired
	if d == nil {
		return in.Err
	}
	refusal, _ := plan.AsRefusal(in.Refusal)
	managementConflict, conflicting := in.Result.Conflicts[managementGroup]
	switch {
	case d.Management == nil:
		// Not even the tenant's namespace may be written.
		conditions.False(t, tenancyv1alpha1.ManagementReadyCondition, refusal.Reason, refusal.Message)
	case in.Result.Failed != nil && in.Result.Failed.Group == managementGroup:
		conditions.False(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ApplyFailedReason, in.Err.Error())
	case conflicting:
		conditions.False(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ObjectConflictReason, managementConflict)
	default:
		conditions.True(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ProvisionedReason, managementMessage(*d.Management))
	}
	if refusal != nil {
		conditions.Set(t, refusal.Condition, refusal.Status, refusal.Reason, refusal.Message)
		if in.Err != nil {
			return in.Err
		}
		return refusal
	}
	if in.Err != nil && isNoMatch(in.Err) {
		missing := plan.Failing(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.FluxAPIMissingReason,
			"a Flux API the tenant's stack needs is not served; install Flux (source, kustomize and helm controllers): "+noMatchCause(in.Err), time.Minute)
		conditions.Set(t, missing.Condition, missing.Status, missing.Reason, missing.Message)
		return missing
	}
	if in.Result.Observed != nil {
		// The sync wrote what it could and read the tenant's Flux
		// objects back: the status says where each cluster is, also
		// when asking Flux to go on failed after that.
		res := health.FoldTenant(health.TenantInput{
			Generation:   t.Generation,
			Suspended:    t.Spec.Suspend,
			MissingNames: d.Selection.MissingNames,
			Previous:     t.Status.Clusters,
			Now:          in.Now,
			Clusters:     clusterInputs(t, *d.Selection, d.Rendered.NamespaceArtifact != nil, in.Result.Observed, in.Result.Conflicts, d.Sources),
		})
		foldRevisions(res.Clusters, d)
		health.SetTenantClusters(&t.Status, res)
	}
	stall := foldRollout(t, d)
	if in.Err != nil {
		return in.Err
	}
	if stall != nil {
		return stall
	}
	if conflicting {
		// Another owner's object is in the way: nothing changes until
		// it, or the tenant, does.
		return plan.Stalling(tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ObjectConflictReason, managementConflict, 0)
	}
	return nil
}

// foldPaused mirrors spec.suspend into Paused.
func foldPaused(t *tenancyv1alpha1.Tenant) {
	if t.Spec.Suspend {
		conditions.True(t, tenancyv1alpha1.PausedCondition, tenancyv1alpha1.PausedReason,
			"spec.suspend is true: Flux leaves the stack on every cluster as it is, and newly selected clusters get nothing until it is unset")
		return
	}
	conditions.False(t, tenancyv1alpha1.PausedCondition, tenancyv1alpha1.NotPausedReason, "")
}

// managementMessage says what of the tenant's management is in place.
func managementMessage(m render.TenantManagementObjects) string {
	ns := m.Namespace.Name
	msg := fmt.Sprintf("Namespace %s, ServiceAccount %s/%s and RoleBinding %s/%s (to ClusterRole %s) are in place",
		ns, ns, m.ServiceAccount.Name, ns, m.RoleBinding.Name, tenancyv1alpha1.TenantClusterRole)
	if m.ResourceQuota != nil {
		msg += fmt.Sprintf(", with ResourceQuota %s/%s", ns, m.ResourceQuota.Name)
	}
	return msg
}

// isNoMatch tells whether err says a kind is not served.
func isNoMatch(err error) bool {
	return err != nil && (apimeta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind") || IsNotServed(err))
}

// IsNotServed recognises the API server's 404 for a group version it does
// not serve (an uncached list of a kind whose CRD is missing).
func IsNotServed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "the server could not find the requested resource")
}

// noMatchCause is a kind not served as the write found it, without the
// sync's own hint to install Flux, which the condition gives.
func noMatchCause(err error) string {
	if inner := errors.Unwrap(err); inner != nil && apimeta.IsNoMatchError(err) && apimeta.IsNoMatchError(inner) {
		return inner.Error()
	}
	return err.Error()
}

// foldRevisions puts on each cluster's line the revision its object is
// pinned to and its wave (spec.rollout only).
func foldRevisions(lines []tenancyv1alpha1.TenantClusterStatus, d *Desired) {
	if d.Rollout == nil {
		return
	}
	for i := range lines {
		c := types.NamespacedName{Namespace: lines[i].Namespace, Name: lines[i].Name}
		lines[i].Revision = d.Rollout.Revisions[c]
		lines[i].Wave = d.Rollout.Waves[c]
	}
}

// foldRollout puts the rollout step on status.rollout and RolledOut, and
// returns the stall of a rollout that stopped or cannot be followed. A
// tenant without spec.rollout has neither; a plan refused before the
// rollout was decided leaves both as they were.
func foldRollout(t *tenancyv1alpha1.Tenant, d *Desired) *plan.Refusal {
	if t.Spec.Rollout == nil {
		t.Status.Rollout = nil
		apimeta.RemoveStatusCondition(&t.Status.Conditions, tenancyv1alpha1.RolledOutCondition)
		return nil
	}
	r := d.Rollout
	if r == nil {
		return nil
	}
	t.Status.Rollout = r.Status.DeepCopy()
	if r.Reason == tenancyv1alpha1.RolloutCompleteReason {
		conditions.True(t, tenancyv1alpha1.RolledOutCondition, r.Reason, r.Message)
		return nil
	}
	conditions.False(t, tenancyv1alpha1.RolledOutCondition, r.Reason, r.Message)
	if r.Stalled {
		return plan.Stalling(tenancyv1alpha1.RolledOutCondition, r.Reason, r.Message, 0)
	}
	return nil
}
