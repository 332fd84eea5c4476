package health

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets c in conds, like meta.SetStatusCondition, and reports
// whether anything changed, so that a resync that found nothing new writes
// nothing. A condition equal in status, reason, message and
// observedGeneration is left untouched; lastTransitionTime moves only
// when the status changes (c's own, or now when c has none).
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	existing := apimeta.FindStatusCondition(*conds, c.Type)
	if existing == nil {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.Now()
		}
		*conds = append(*conds, c)
		return true
	}
	if existing.Status == c.Status && existing.Reason == c.Reason && existing.Message == c.Message &&
		existing.ObservedGeneration == c.ObservedGeneration {
		return false
	}
	if existing.Status != c.Status {
		existing.LastTransitionTime = c.LastTransitionTime
		if existing.LastTransitionTime.IsZero() {
			existing.LastTransitionTime = metav1.Now()
		}
	}
	existing.Status, existing.Reason, existing.Message, existing.ObservedGeneration = c.Status, c.Reason, c.Message, c.ObservedGeneration
	return true
}
