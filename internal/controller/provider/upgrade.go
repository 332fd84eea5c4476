package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// The upgrade gate and its watch (internal/plan/provider/upgrade.go
// decides; this file asks the API server and turns the decision into the
// shell's outcome): an upgrade's objects are dry-run before the first of
// them is written, and a failed upgrade is rolled back by planning the
// provider at its last good version.

// DryRunFunc dry-runs on the API server what Flux would apply from the
// Kustomization ks over the source files (paths from the source's root),
// as the provider's installer would apply it (internal/dryrun).
type DryRunFunc func(ctx context.Context, ks *kustomizev1.Kustomization, files map[string][]byte) (DryRunReport, error)

// DryRunReport is what a dry run found. Its error is only for an API
// server that could not be asked.
type DryRunReport struct {
	// Summary says what was accepted and skipped, and how long it took.
	Summary string
	// Refused names the first object the API server (or a webhook)
	// refused, with its message; "" when all were accepted.
	Refused string
	// RollbackBlocked says, per CRD, why going back to the version
	// installed now would not be safe.
	RollbackBlocked []string
}

// rollbackRetry is how soon a provider whose upgrade just failed is
// planned again, at its last good version.
const rollbackRetry = 100 * time.Millisecond

// dryRun runs the dry run of an upgrade about to start, and records what
// it found in up; a refusal stops the upgrade before anything is written.
func (r *Reconciler) dryRun(ctx context.Context, up *providerplan.Upgrade, f providerplan.Facts, d providerplan.Desired) error {
	if r.DryRun == nil || !up.NeedsDryRun(d) || f.Artifact.Checked == nil {
		return nil
	}
	ks := componentsKustomization(d)
	if ks == nil {
		return nil // a chart: Helm dry-runs its own upgrade
	}
	a := f.Artifact.Checked
	file := a.ComponentsFile
	if f.Artifact.Release != nil {
		file = render.ReleaseComponentsDir + "/" + file
	}
	report, err := r.DryRun(ctx, ks, map[string][]byte{file: a.Components})
	p := f.Provider
	switch {
	case err != nil:
		return plan.Failing(v1alpha1.CompatibleCondition, v1alpha1.DryRunFailedReason, fmt.Sprintf(
			"cannot dry-run %s %s on the API server before upgrading, so nothing of it is applied yet: %v", p.GetName(), p.GetSpec().Version, err), f.Resync)
	case report.Refused != "":
		return up.DryRunRefused(p, report.Refused, f.Resync)
	}
	up.DryRan, up.DryRun = true, report.Summary
	up.RollbackBlocked = strings.Join(report.RollbackBlocked, "; ")
	log.FromContext(ctx).Info("dry run of the upgrade passed", "version", p.GetSpec().Version, "result", report.Summary, "rollbackBlocked", up.RollbackBlocked)
	return nil
}

// componentsKustomization is the Kustomization of the components among
// the plan's writes; nil for a chart.
func componentsKustomization(d providerplan.Desired) *kustomizev1.Kustomization {
	for _, w := range d.Sync.Writes {
		if ks, ok := w.Object.(*kustomizev1.Kustomization); ok && ks.Name == d.Owner.ObjectName() {
			return ks
		}
	}
	return nil
}

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
