package shell

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/internal/plan"
)

// refusalOutcome is what the shell does with a refusal: stall, or look
// again after its RetryAfter (resync when it is 0).
func refusalOutcome(r *plan.Refusal, resync time.Duration) Outcome {
	retry := r.RetryAfter
	if retry <= 0 {
		retry = resync
	}
	if r.Stalls {
		return Stalled(r.Reason, r.Message, retry)
	}
	return Outcome{Result: reconcile.Result{RequeueAfter: retry}}
}

// Then is the outcome of a fold's decision of when to look again.
func Then(n plan.Next) Outcome {
	return Outcome{Result: reconcile.Result{RequeueAfter: n.RequeueAfter}, Hold: n.Hold}
}
