package provider

import (
	"context"
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// The dry run of an upgrade (internal/plan/provider/upgrade.go decides
// when one is due): before the first object of a new version is written,
// the API server is asked whether it would take them all; the fold
// (fold.go) records what it found in status.upgrade.

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
		return providerplan.DryRunRefused(p, report.Refused, f.Resync)
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
