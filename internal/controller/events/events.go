// Package events says which condition changes Capwright's controllers
// record as Kubernetes events (in the Flux event shape, so that
// notification-controller can forward them).
package events

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is one event to record: type (Normal or Warning), reason,
// message, and metadata (annotations in the Flux event shape) when it
// carries its own rather than its object's.
type Event struct {
	Type, Reason, Message string
	Metadata              map[string]string
}

// Condition types whose news Transitions knows by name: Ready, which sums
// up the others, and Cluster API's negative-polarity conditions, which
// every Capwright kind has (True is the state worth telling).
const (
	ready    = "Ready"
	paused   = "Paused"
	deleting = "Deleting"
)

// Transitions are the events for the conditions of after that changed
// status or reason since before and bring news, as Flux's controllers
// record them: what needs attention, and what a person would want told.
//
//   - Ready: every change, except its first progress on a new object
//     (Installing, waiting): nothing has happened yet.
//   - Paused and Deleting: becoming True, and leaving True; not their
//     first False on a new object.
//   - Any other condition: becoming a Warning. Its progress and its
//     recovery are Ready's news, told once there.
//
// Unknown conditions (nothing known yet) make none. warning tells which
// conditions are Warnings.
func Transitions(before, after []metav1.Condition, warning func(metav1.Condition) bool) []Event {
	var out []Event
	for _, c := range after {
		old := apimeta.FindStatusCondition(before, c.Type)
		if (old != nil && old.Status == c.Status && old.Reason == c.Reason) || c.Status == metav1.ConditionUnknown {
			continue
		}
		isWarning := warning(c)
		var news bool
		switch c.Type {
		case ready:
			known := old != nil && old.Status != metav1.ConditionUnknown
			news = known || isWarning || c.Status == metav1.ConditionTrue
		case paused, deleting:
			wasTrue := old != nil && old.Status == metav1.ConditionTrue
			news = isWarning || c.Status == metav1.ConditionTrue || wasTrue
		default:
			news = isWarning
		}
		if !news {
			continue
		}
		eventType := corev1.EventTypeNormal
		if isWarning {
			eventType = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		out = append(out, Event{Type: eventType, Reason: c.Reason, Message: strings.TrimSpace(msg)})
	}
	return out
}
