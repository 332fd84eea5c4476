// Package lockdown runs Capwright next to Flux in its multi-tenancy
// lockdown (kustomize-controller and helm-controller impersonate the
// namespace's default ServiceAccount, no cross-namespace references, no
// remote bases) with the roles `flux install` aggregates into admin, edit
// and view, so that what a tenant may do is what it may do on a real
// multi-tenant management cluster, and Capwright's own installs run under
// the same rules.
package lockdown

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// clusterNamespace holds the workload Cluster, as in the guide's example
// of the stack identity (docs/examples).
const clusterNamespace = "clusters"

var (
	env      *plane.Plane
	workload *plane.WorkloadCluster
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{AuditLog: true, ExtraArgs: plane.FluxLockdownArgs()}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		if err := p.InstallFluxUserRoles(ctx); err != nil {
			return err
		}
		// The Cluster kind served before the manager starts, which watches
		// Clusters at once then. The workload cluster becomes Cluster
		// clusters/lockdown-1 through Capwright's contract kinds
		// (contract_test.go), as Cluster API reconciles it.
		if err := p.InstallClusterCRD(ctx); err != nil {
			return err
		}
		applier, err := plane.NewApplier(p.Config)
		if err != nil {
			return err
		}
		ns, err := plane.DecodeYAML(strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + clusterNamespace + "\n"))
		if err != nil {
			return err
		}
		if err := applier.Apply(ctx, ns...); err != nil {
			return err
		}
		w, err := p.StartWorkloadCluster(ctx, "lockdown-1", plane.WorkloadOptions{})
		if err != nil {
			return err
		}
		workload = w
		_, err = p.StartCapwright(ctx, plane.CapwrightOptions{})
		return err
	}, func(p *plane.Plane) { env = p }))
}
