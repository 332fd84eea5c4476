package health

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// summaryTerm is a condition Ready depends on: positive ones must be True,
// negative ones must not be.
type summaryTerm struct {
	condType string
	positive bool
}

// summaryTerms are Ready's inputs, in the order in which the first
// blocking one explains Ready.
func summaryTerms() []summaryTerm {
	return []summaryTerm{
		{v1alpha1.ArtifactResolvedCondition, true},
		{v1alpha1.CompatibleCondition, true},
		{v1alpha1.InstalledCondition, true},
		{v1alpha1.AvailableCondition, true},
		{v1alpha1.PausedCondition, false},
		{v1alpha1.DeletingCondition, false},
	}
}

// Summary is the Ready condition over ArtifactResolved, Compatible,
// Installed and Available (which must be True) and Paused and Deleting
// (which must not be): False with the reason and message of the first
// blocking condition, else Unknown with those of the first one that is
// Unknown or missing, else True.
//
// Ready never claims a generation the others have not observed: a
// positive condition of another generation counts as Unknown. Paused and
// Deleting describe the provider's lifecycle rather than its spec, so one
// that is False for an earlier generation still holds (the controller
// sets Deleting once), while True always blocks.
func Summary(generation int64, conds []metav1.Condition, now metav1.Time) metav1.Condition {
	return summarize(summaryTerms(), generation, conds, now,
		"the artifact is resolved and compatible, Flux installed it and it is available")
}

// summarize is Ready over terms, by the rules of Summary; succeeded is the
// message when nothing blocks. Providers and tenants share the condition
// type and reasons (Ready, Reconciling, Succeeded).
func summarize(terms []summaryTerm, generation int64, conds []metav1.Condition, now metav1.Time, succeeded string) metav1.Condition {
	var unknown *metav1.Condition
	setUnknown := func(reason, message string) {
		if unknown == nil {
			unknown = &metav1.Condition{Reason: reason, Message: message}
		}
	}
	for _, term := range terms {
		c := apimeta.FindStatusCondition(conds, term.condType)
		switch {
		case c == nil:
			setUnknown(v1alpha1.ReconcilingReason, term.condType+" is not reported yet")
		case !term.positive && c.Status == metav1.ConditionTrue,
			term.positive && c.Status == metav1.ConditionFalse && c.ObservedGeneration == generation:
			return ready(generation, now, metav1.ConditionFalse, c.Reason, term.condType+": "+c.Message)
		case term.positive && c.ObservedGeneration != generation:
			setUnknown(v1alpha1.ReconcilingReason, fmt.Sprintf("%s describes generation %d, not %d yet", term.condType, c.ObservedGeneration, generation))
		case c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse:
			setUnknown(c.Reason, term.condType+": "+c.Message)
		}
	}
	if unknown != nil {
		return ready(generation, now, metav1.ConditionUnknown, unknown.Reason, unknown.Message)
	}
	return ready(generation, now, metav1.ConditionTrue, v1alpha1.SucceededReason, succeeded)
}

func ready(generation int64, now metav1.Time, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ReadyCondition, Status: status, Reason: reason, Message: message,
		ObservedGeneration: generation, LastTransitionTime: now}
}
