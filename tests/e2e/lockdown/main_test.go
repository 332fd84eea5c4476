// Package lockdown runs Capwright next to Flux in its multi-tenancy
// lockdown (kustomize-controller and helm-controller impersonate the
// namespace's default ServiceAccount, no cross-namespace references, no
// remote bases) with the roles `flux install` aggregates into admin, edit
// and view, so that what a tenant may do is what it may do on a real
// multi-tenant management cluster.
package lockdown

import (
	"context"
	"os"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var env *plane.Plane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{ExtraArgs: plane.FluxLockdownArgs()}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		if err := p.InstallFluxUserRoles(ctx); err != nil {
			return err
		}
		_, err := p.StartCapwright(ctx, plane.CapwrightOptions{})
		return err
	}, func(p *plane.Plane) { env = p }))
}
