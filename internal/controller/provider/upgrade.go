package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	p := f.Provider
	if err := r.DryRuns.enter(ctx, p.ProviderType() == v1alpha1.CoreProviderType); err != nil {
		return err
	}
	report, err := r.DryRun(ctx, ks, map[string][]byte{file: a.Components})
	r.DryRuns.leave()
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

// DryRuns lets one upgrade's dry run ask the API server at a time, a core
// provider's first; nil lets them all ask at once. Providers upgraded
// together (a pull request that bumps them all) wait for the core, which
// Flux applies before them (their Kustomizations depend on its), so the
// core's dry run is the one on the upgrade's path: alone it takes about
// half as long as with the others asking beside it on a small control
// plane, and theirs run while Flux applies the core.
type DryRuns struct {
	mu    sync.Mutex
	busy  bool
	cores int
	// changed is closed, and replaced, when busy or cores drop.
	changed chan struct{}
}

// NewDryRuns is an idle DryRuns.
func NewDryRuns() *DryRuns { return &DryRuns{changed: make(chan struct{})} }

// enter waits for the dry run's turn: when none runs and, for a provider
// of another type than core, no core provider waits.
func (g *DryRuns) enter(ctx context.Context, core bool) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	if core {
		g.cores++
	}
	for g.busy || (!core && g.cores > 0) {
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			g.mu.Lock()
			if core {
				g.cores--
				g.signal()
			}
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Lock()
	}
	g.busy = true
	if core {
		g.cores--
	}
	g.mu.Unlock()
	return nil
}

// leave ends the dry run's turn.
func (g *DryRuns) leave() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.busy = false
	g.signal()
	g.mu.Unlock()
}

// signal wakes every waiter; g.mu is held.
func (g *DryRuns) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}
