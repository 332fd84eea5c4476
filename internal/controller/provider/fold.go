package provider

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// The fold stage: the one place the provider's status is set, at the end
// of every reconcile — suspended, refused, kept or written — from what the
// plan established (or refused) and what the sync read of the Flux
// objects. It writes nothing; the shell writes the status once.

// finishingRetry is how soon a reconcile held while Flux finishes
// (health.Observation.Finishing) looks again if Flux's second write is
// not seen.
const finishingRetry = time.Second

// fold sets the provider's status and tells the shell what comes next.
func (r *Reconciler) fold(ctx context.Context, obj v1alpha1.Provider, d providerplan.Desired, s synced, err error) (shell.Outcome, error) {
	if res := providerplan.Fold(obj, d, s.in, err); res != nil {
		r.Timelines.observe(obj, *s.in, s.now)
		if res.Installed.Status == metav1.ConditionTrue {
			r.Timelines.finish(obj, r.Kind.Name, log.FromContext(ctx), s.now)
		}
		if res.Installed.Reason == v1alpha1.InstallFailedReason {
			// Flux may have failed for want of the installer's
			// permissions: its next attempt should find them restored.
			r.installers.forget(obj.GetUID())
		}
	}
	switch {
	case err != nil:
		// A refusal is the shell's to turn into a stall or a requeue.
		return shell.Outcome{}, err
	case d.Suspend:
		return shell.Outcome{}, nil
	case d.Passed && s.finishing():
		// Flux is between the two writes that end its reconcile: the
		// second, a moment later, wakes the provider, and what would be
		// written now would be out of date by then.
		return shell.Outcome{Hold: true, Result: reconcile.Result{RequeueAfter: finishingRetry}}, nil
	}
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: d.Resync}}, nil
}
