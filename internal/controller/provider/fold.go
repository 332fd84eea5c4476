package provider

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// The fold stage: the one place the provider's status is set, at the end
// of every reconcile — suspended, refused, kept or written — from what the
// plan established (or refused) and what the sync read of the Flux
// objects. It writes nothing; the shell writes the status once.

// ownedConditions are the conditions this controller sets; each starts
// Unknown so nothing claims Ready before it is.
var ownedConditions = []string{
	v1alpha1.ArtifactResolvedCondition,
	v1alpha1.CompatibleCondition,
	v1alpha1.InstalledCondition,
	v1alpha1.AvailableCondition,
}

// finishingRetry is how soon a reconcile held while Flux finishes
// (health.Observation.Finishing) looks again if Flux's second write is
// not seen.
const finishingRetry = time.Second

// fold sets the provider's status and tells the shell what comes next.
func (r *Reconciler) fold(ctx context.Context, obj v1alpha1.Provider, d providerplan.Desired, s synced, err error) (shell.Outcome, error) {
	status := obj.GetStatus()
	if obj.GetSpec().Suspend {
		conditions.True(obj, v1alpha1.PausedCondition, v1alpha1.PausedReason, "spec.suspend is true: Capwright and Flux leave the installed provider as it is")
	} else {
		conditions.False(obj, v1alpha1.PausedCondition, v1alpha1.NotPausedReason, "")
	}
	if d.Status.LastAttemptedRevision != "" {
		status.LastAttemptedRevision = d.Status.LastAttemptedRevision
	}
	for _, c := range []*metav1.Condition{d.Status.ArtifactResolved, d.Status.Compatible} {
		if c != nil {
			conditions.Put(obj, *c)
		}
	}
	if d.Status.Artifact != nil {
		status.Contract, status.Artifact = d.Status.Contract, d.Status.Artifact
	}
	if refusal, refused := plan.AsRefusal(err); refused {
		conditions.Set(obj, refusal.Condition, refusal.Status, refusal.Reason, refusal.Message)
		if !refusal.Waits() && refusal.Condition == v1alpha1.ArtifactResolvedCondition {
			// For an artifact problem the compatibility is unknown.
			conditions.Unknown(obj, v1alpha1.CompatibleCondition, v1alpha1.ReconcilingReason, "waiting for the artifact to resolve")
		}
	} else if err != nil && !d.Suspend {
		// A write failed: nothing after it was written.
		conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason, err.Error())
	}
	if s.in != nil {
		r.foldHealth(ctx, obj, *s.in, s)
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

// foldHealth folds the Flux objects' conditions into Installed, Available,
// installedVersion and fluxObjects, and marks the install's timeline.
func (r *Reconciler) foldHealth(ctx context.Context, obj v1alpha1.Provider, in health.ProviderInput, s synced) {
	status := obj.GetStatus()
	res := health.FoldProvider(in)
	r.Timelines.observe(obj, in, s.now)
	if res.Installed.Status == metav1.ConditionTrue {
		r.Timelines.finish(obj, r.Kind.Name, log.FromContext(ctx), s.now)
	}
	conditions.Put(obj, res.Installed)
	conditions.Put(obj, res.Available)
	status.InstalledVersion = res.InstalledVersion
	status.FluxObjects = res.FluxObjects
	if res.Installed.Reason == v1alpha1.InstallFailedReason {
		// Flux may have failed for want of the installer's permissions:
		// its next attempt should find them restored.
		r.installers.forget(obj.GetUID())
	}
}

// setSummary computes Ready from the other conditions.
func setSummary(obj v1alpha1.Provider) {
	conditions.Put(obj, health.Summary(obj.GetGeneration(), obj.GetConditions(), metav1.Now()))
}
