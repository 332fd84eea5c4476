package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/client-go/rest"
	ctrlruntime "sigs.k8s.io/controller-runtime"

	"github.com/capwright/capwright/internal/controller/provider"
	"github.com/capwright/capwright/internal/dryrun"
)

// upgradeDryRun dry-runs an upgrade's objects as internal/dryrun's user,
// whom the manager may impersonate and who may only ask (manifests/rbac:
// the installer's role, and an admission policy that refuses every
// request of that user that is not a dry run). The Secrets substituted
// into the objects are read uncached, as the manager reads every Secret.
func upgradeDryRun(cfg *rest.Config, mgr ctrlruntime.Manager) (provider.DryRunFunc, error) {
	runner, err := dryrun.NewRunner(cfg, mgr.GetRESTMapper())
	if err != nil {
		return nil, err
	}
	reader := mgr.GetAPIReader()
	return func(ctx context.Context, ks *kustomizev1.Kustomization, files map[string][]byte) (provider.DryRunReport, error) {
		start := time.Now()
		built, err := dryrun.Build(ctx, reader, ks, files)
		buildTook := time.Since(start)
		if err != nil {
			return provider.DryRunReport{Refused: fmt.Sprintf("Flux could not build the new version: %v", err)}, nil
		}
		res, err := runner.Run(ctx, built)
		var refusal *dryrun.Refusal
		switch {
		case errors.As(err, &refusal):
			return provider.DryRunReport{Refused: refusal.Message}, nil
		case err != nil:
			return provider.DryRunReport{}, err
		}
		summary := fmt.Sprintf("built in %s, %d objects accepted (%d CRDs validated as the API server does) in %s",
			buildTook.Round(time.Millisecond), res.Checked, res.Validated, res.Took.Round(time.Millisecond))
		if n := len(res.Skipped); n > 0 {
			named := res.Skipped[:min(n, 3)]
			more := ""
			if n > len(named) {
				more = fmt.Sprintf("; and %d more", n-len(named))
			}
			summary += fmt.Sprintf("; %d skipped (%s%s)", n, strings.Join(named, "; "), more)
		}
		return provider.DryRunReport{Summary: summary, RollbackBlocked: res.RollbackBlocked}, nil
	}, nil
}
