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
	warning := func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason != "Installing" && c.Reason != "Upgrading" && c.Type != "Paused" && c.Type != "Deleting"
	}
	for _, tt := range []struct {
		name          string
		before, after []metav1.Condition
		want          []Event
	}{{
		name: "a new object: progress and negative-polarity False are no news",
		after: []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "Installing", "applying"),
			cond("Installed", metav1.ConditionFalse, "Installing", "applying"),
			cond("Compatible", metav1.ConditionTrue, "Compatible", "v1beta2"),
			cond("Paused", metav1.ConditionFalse, "NotPaused", ""),
			cond("Deleting", metav1.ConditionFalse, "NotDeleting", ""),
			cond("Available", metav1.ConditionUnknown, "Unknown", ""),
		},
	}, {
		name: "Ready, and a condition going bad, are news; a sub-condition's recovery is Ready's",
		before: []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "Installing", "applying"),
			cond("Installed", metav1.ConditionFalse, "Installing", "applying"),
			cond("Compatible", metav1.ConditionFalse, "IncompatibleContract", "v1beta1"),
		},
		after: []metav1.Condition{
			cond("Ready", metav1.ConditionTrue, "Succeeded", "all good"),
			cond("Installed", metav1.ConditionTrue, "Installed", "v1"),
			cond("Compatible", metav1.ConditionTrue, "Compatible", "v1beta2"),
			cond("Available", metav1.ConditionFalse, "Unavailable", "0/1"),
			cond("Paused", metav1.ConditionUnknown, "Unknown", ""),
		},
		want: []Event{
			{Type: corev1.EventTypeNormal, Reason: "Succeeded", Message: "Ready=True: all good"},
			{Type: corev1.EventTypeWarning, Reason: "Unavailable", Message: "Available=False: 0/1"},
		},
	}, {
		name:   "an upgrade starting is news on Ready only",
		before: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "Succeeded", "v1"), cond("Installed", metav1.ConditionTrue, "Installed", "v1")},
		after:  []metav1.Condition{cond("Ready", metav1.ConditionFalse, "Upgrading", "to v2"), cond("Installed", metav1.ConditionFalse, "Installing", "to v2")},
		want:   []Event{{Type: corev1.EventTypeNormal, Reason: "Upgrading", Message: "Ready=False: to v2"}},
	}, {
		name:  "a first refusal is news on a new object",
		after: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "IncompatibleContract", "no"), cond("Compatible", metav1.ConditionFalse, "IncompatibleContract", "no")},
		want:  []Event{{Type: corev1.EventTypeWarning, Reason: "IncompatibleContract", Message: "Ready=False: no"}, {Type: corev1.EventTypeWarning, Reason: "IncompatibleContract", Message: "Compatible=False: no"}},
	}, {
		name:   "pausing and resuming, deletion starting",
		before: []metav1.Condition{cond("Paused", metav1.ConditionFalse, "NotPaused", ""), cond("Deleting", metav1.ConditionFalse, "NotDeleting", "")},
		after:  []metav1.Condition{cond("Paused", metav1.ConditionTrue, "Paused", "spec.suspend"), cond("Deleting", metav1.ConditionTrue, "Deleting", "pruning")},
		want: []Event{
			{Type: corev1.EventTypeNormal, Reason: "Paused", Message: "Paused=True: spec.suspend"},
			{Type: corev1.EventTypeNormal, Reason: "Deleting", Message: "Deleting=True: pruning"},
		},
	}, {
		name:   "resuming",
		before: []metav1.Condition{cond("Paused", metav1.ConditionTrue, "Paused", "spec.suspend")},
		after:  []metav1.Condition{cond("Paused", metav1.ConditionFalse, "NotPaused", "")},
		want:   []Event{{Type: corev1.EventTypeNormal, Reason: "NotPaused", Message: "Paused=False"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got := Transitions(tt.before, tt.after, warning)
			if len(got) != len(tt.want) {
				t.Fatalf("Transitions = %+v, want %+v", got, tt.want)
			}
			for i := range tt.want {
				if !reflect.DeepEqual(got[i], tt.want[i]) {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
