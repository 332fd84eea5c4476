package health

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetCondition(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC))
	installing := metav1.Condition{Type: "Installed", Status: "False", Reason: "Installing", Message: "Flux is applying v1.14.2", ObservedGeneration: 1, LastTransitionTime: t1}

	var conds []metav1.Condition
	if !SetCondition(&conds, installing) || len(conds) != 1 || !conds[0].LastTransitionTime.Equal(&t1) {
		t.Fatalf("adding: %+v", conds)
	}

	again := installing
	again.LastTransitionTime = t2
	if SetCondition(&conds, again) || !conds[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("a resync with nothing new changed the condition: %+v", conds[0])
	}

	// Same status, new message: updated, transition time kept.
	progressed := again
	progressed.Message = "Flux is applying v1.14.2: health checks"
	if !SetCondition(&conds, progressed) || conds[0].Message != progressed.Message || !conds[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("same status: %+v", conds[0])
	}

	// New generation, same status: updated, transition time kept.
	newGen := progressed
	newGen.ObservedGeneration = 2
	if !SetCondition(&conds, newGen) || conds[0].ObservedGeneration != 2 || !conds[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("new generation: %+v", conds[0])
	}

	// Status changes: transition time moves.
	done := metav1.Condition{Type: "Installed", Status: "True", Reason: "Installed", Message: "applied", ObservedGeneration: 2, LastTransitionTime: t2}
	if !SetCondition(&conds, done) || conds[0].Status != "True" || !conds[0].LastTransitionTime.Equal(&t2) {
		t.Errorf("status change: %+v", conds[0])
	}

	// Without a time, now.
	other := metav1.Condition{Type: "Available", Status: "True", Reason: "Available", ObservedGeneration: 2}
	if !SetCondition(&conds, other) || len(conds) != 2 || conds[1].LastTransitionTime.IsZero() {
		t.Errorf("no time given: %+v", conds)
	}
}
