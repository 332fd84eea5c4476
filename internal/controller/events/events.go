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

// Transitions are the events for every condition of after whose status or
// reason differs from before; Unknown conditions (nothing known yet) make
// none. warning tells which conditions are Warnings.
func Transitions(before, after []metav1.Condition, warning func(metav1.Condition) bool) []Event {
	var out []Event
	for _, c := range after {
		old := apimeta.FindStatusCondition(before, c.Type)
		if (old != nil && old.Status == c.Status && old.Reason == c.Reason) || c.Status == metav1.ConditionUnknown {
			continue
		}
		eventType := corev1.EventTypeNormal
		if warning(c) {
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
