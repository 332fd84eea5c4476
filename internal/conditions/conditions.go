// Package conditions is the one way Capwright's controllers set the
// conditions of their own objects: every condition carries the
// generation it describes (observedGeneration), and its transition time
// moves only when its status changes (apimeta.SetStatusCondition's rule,
// which Cluster API's and Flux's helpers share).
//
// Flux's runtime/conditions also sorts the list and trims messages; the
// conditions here keep the order they were first set in, so a status
// written by an earlier Capwright is not rewritten only to reorder it.
package conditions

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is an object whose status holds conditions.
type Object interface {
	GetGeneration() int64
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// Set sets condition typ on obj for obj's generation.
func Set(obj Object, typ string, status metav1.ConditionStatus, reason, message string) {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: obj.GetGeneration()})
	obj.SetConditions(conds)
}

// True sets condition typ True.
func True(obj Object, typ, reason, message string) {
	Set(obj, typ, metav1.ConditionTrue, reason, message)
}

// False sets condition typ False.
func False(obj Object, typ, reason, message string) {
	Set(obj, typ, metav1.ConditionFalse, reason, message)
}

// Unknown sets condition typ Unknown.
func Unknown(obj Object, typ, reason, message string) {
	Set(obj, typ, metav1.ConditionUnknown, reason, message)
}

// Put sets c as it is (a condition a fold computed whole), for obj's
// generation.
func Put(obj Object, c metav1.Condition) {
	c.ObservedGeneration = obj.GetGeneration()
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, c)
	obj.SetConditions(conds)
}

// Get is condition typ of obj, nil when it is not set.
func Get(obj Object, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.GetConditions(), typ)
}

// IsTrue tells whether condition typ is True.
func IsTrue(obj Object, typ string) bool {
	return apimeta.IsStatusConditionTrue(obj.GetConditions(), typ)
}

// Init sets each of types that obj does not have yet to Unknown with
// reason and "not observed yet", so nothing claims Ready before it is.
// On an object that is not being deleted it also sets deleting (when
// not empty) False with notDeleting, for the current generation.
func Init(obj Object, types []string, reason string, beingDeleted bool, deleting, notDeleting string) {
	for _, t := range types {
		if Get(obj, t) == nil {
			Unknown(obj, t, reason, "not observed yet")
		}
	}
	if deleting != "" && !beingDeleted {
		False(obj, deleting, notDeleting, "")
	}
}
