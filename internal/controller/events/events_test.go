package events

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransitions(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	before := []metav1.Condition{
		cond("Ready", metav1.ConditionFalse, "Installing", "applying"),
		cond("Installed", metav1.ConditionTrue, "Installed", "v1"),
	}
	after := []metav1.Condition{
		cond("Ready", metav1.ConditionTrue, "Ready", "all good"),         // status changed
		cond("Installed", metav1.ConditionTrue, "Installed", "v1 again"), // same status and reason: no event
		cond("Available", metav1.ConditionFalse, "Unavailable", "0/1"),   // new, a warning
		cond("Paused", metav1.ConditionUnknown, "Unknown", ""),           // unknown: no event
	}
	got := Transitions(before, after, func(c metav1.Condition) bool { return c.Status == metav1.ConditionFalse })
	want := []Event{
		{Type: corev1.EventTypeNormal, Reason: "Ready", Message: "Ready=True: all good"},
		{Type: corev1.EventTypeWarning, Reason: "Unavailable", Message: "Available=False: 0/1"},
	}
	if len(got) != len(want) {
		t.Fatalf("Transitions = %+v, want %+v", got, want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
