package provider

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
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

// nudgeRetry is how soon a provider looks again while its additional
// manifests' Kustomization still waits for the components' one, which is
// Ready (nudgeMissed).
const nudgeRetry = 3 * time.Second

// nudgeMissed tells whether the additional manifests' Kustomization still
// says its dependency, the components' Kustomization, is not Ready while
// that one is. The nudge (a reconcile request) can reach it while
// kustomize-controller runs the components' Kustomization once more right
// after it turned Ready (a second request queued meanwhile, say); it then
// waits out --requeue-dependency (30 s), and that second run, the same
// revision applied again, wakes no provider. Looking again soon nudges it
// again, for the components' new Ready transition.
func (s synced) nudgeMissed() bool {
	if s.in == nil || s.in.AdditionalApply.Kind == "" {
		return false
	}
	waiting := apimeta.FindStatusCondition(s.in.AdditionalApply.Conditions, meta.ReadyCondition)
	ready := apimeta.FindStatusCondition(s.in.Apply.Conditions, meta.ReadyCondition)
	return waiting != nil && waiting.Reason == meta.DependencyNotReadyReason && waiting.ObservedGeneration == s.in.AdditionalApply.Generation &&
		ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == s.in.Apply.Generation
}

// fold sets the provider's status and tells the shell what comes next.
func (r *Reconciler) fold(ctx context.Context, obj v1alpha1.Provider, up *providerplan.Upgrade, d providerplan.Desired, s synced, err error) (shell.Outcome, error) {
	res := providerplan.Fold(obj, d, s.in, err)
	out, err := r.outcome(ctx, obj, d, s, res, err)
	return r.foldUpgrade(obj, up, d, s, res, out), err
}

// outcome tells the shell what comes next.
func (r *Reconciler) outcome(ctx context.Context, obj v1alpha1.Provider, d providerplan.Desired, s synced, res *health.ProviderResult, err error) (shell.Outcome, error) {
	r.Timelines.record(obj, r.Kind.Name, s, res, log.FromContext(ctx))
	if res != nil {
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
	case d.Passed && s.nudgeMissed():
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: nudgeRetry}}, nil
	}
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: d.Resync}}, nil
}

// rollbackRetry is how soon a provider whose upgrade just failed is
// planned again, at its last good version.
const rollbackRetry = 100 * time.Millisecond

// foldUpgrade sets status.upgrade and turns the upgrade's state into the
// shell's outcome: a failure just found is planned again at once (the
// rollback), a rolled-back provider stalls, and the timeout of an upgrade
// under way is looked at when it runs out.
func (r *Reconciler) foldUpgrade(obj v1alpha1.Provider, up *providerplan.Upgrade, d providerplan.Desired, s synced, res *health.ProviderResult, out shell.Outcome) shell.Outcome {
	u := providerplan.FoldUpgrade(obj, up, d, s.in, res, time.Now())
	switch {
	case u.Failed:
		f := obj.GetStatus().Upgrade.Failed
		// The shell's Warning event of Installed's transition says it
		// (RollingBack, then RolledBack).
		r.Metrics.ProviderRolledBack(r.Kind.Name, obj.GetNamespace(), obj.GetName(), f.Version)
		out.Hold = false
		out.Result = reconcile.Result{RequeueAfter: rollbackRetry}
	case u.RolledBack:
		out.Stalled = &shell.Stall{Reason: u.Stall, Message: u.StallMessage}
	case u.Recheck > 0 && (out.Result.RequeueAfter == 0 || u.Recheck < out.Result.RequeueAfter):
		out.Result.RequeueAfter = u.Recheck
	}
	return out
}
