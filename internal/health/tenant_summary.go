package health

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// tenantSummaryTerms are the inputs of a tenant's Ready, in the order in
// which the first blocking one explains Ready.
func tenantSummaryTerms(rollout bool) []summaryTerm {
	terms := []summaryTerm{
		{tenancyv1alpha1.ManagementReadyCondition, true},
		{tenancyv1alpha1.ClustersReadyCondition, true},
	}
	if rollout {
		terms = append(terms, summaryTerm{tenancyv1alpha1.RolledOutCondition, true})
	}
	return append(terms,
		summaryTerm{tenancyv1alpha1.PausedCondition, false},
		summaryTerm{tenancyv1alpha1.DeletingCondition, false})
}

// TenantSummary is a tenant's Ready condition over ManagementReady,
// ClustersReady and, for a tenant with spec.rollout, RolledOut (which
// must be True) and Paused and Deleting (which must not be), with the
// rules of Summary: False with the reason and message of the first
// blocking condition, else Unknown with those of the first one that is
// Unknown, missing or of another generation, else True.
func TenantSummary(generation int64, conds []metav1.Condition, rollout bool, now metav1.Time) metav1.Condition {
	return summarize(tenantSummaryTerms(rollout), generation, conds, now,
		"the tenant's namespace is provisioned and the stack is Ready on every selected cluster")
}
