package shell

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Refusal is why a reconcile stops before it writes anything new: the
// one way every kind refuses (as source-controller's internal/error
// Stalling, Waiting and Generic errors). It names the condition it sets,
// with what status, reason and message, and when to look again. A kind
// returns it from its facts or its plan; its fold puts it on the
// condition, and the shell turns it into the outcome (Stalled or a
// requeue) without logging it as an error.
type Refusal struct {
	// Condition is the kind's condition the refusal is about.
	Condition string
	// Status is False for a problem, Unknown while waiting.
	Status          metav1.ConditionStatus
	Reason, Message string
	// RetryAfter is when to look again; 0 leaves it to the kind's resync.
	RetryAfter time.Duration
	// Stalls: the refusal cannot lift itself (only a change of the spec,
	// or of what it references, can): kstatus calls the object Failed.
	Stalls bool
}

func (r *Refusal) Error() string { return r.Message }

// Stalling is a refusal only a change of the spec, or of what it
// references, lifts: the condition False, the object Stalled.
func Stalling(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionFalse, Reason: reason, Message: message, RetryAfter: retry, Stalls: true}
}

// Failing is a problem that may pass by itself (a registry down,
// credentials refused): the condition False, the object Reconciling, and
// looked at again after retry.
func Failing(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionFalse, Reason: reason, Message: message, RetryAfter: retry}
}

// Waiting is nothing wrong yet: the object waits for another one. The
// condition Unknown, the object Reconciling.
func Waiting(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionUnknown, Reason: reason, Message: message, RetryAfter: retry}
}

// Waits tells whether the refusal only waits.
func (r *Refusal) Waits() bool { return r.Status == metav1.ConditionUnknown }

// AsRefusal is the refusal err is or wraps.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}

// Outcome is what the shell does with the refusal: stall, or look again
// after RetryAfter (resync when it is 0).
func (r *Refusal) Outcome(resync time.Duration) Outcome {
	retry := r.RetryAfter
	if retry <= 0 {
		retry = resync
	}
	if r.Stalls {
		return Stalled(r.Reason, r.Message, retry)
	}
	return Outcome{Result: reconcile.Result{RequeueAfter: retry}}
}
