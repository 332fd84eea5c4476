// Package operator proves the way from cluster-api-operator to Capwright
// that docs/migrate.md describes, on one plane: cluster-api-operator
// v0.29.0 installs the real Cluster API core, kubeadm bootstrap and kubeadm
// control plane providers, a Cluster exists, and the guide's steps — stop
// the operator, convert its CRs with the capwright CLI, release what it
// owns, apply the Capwright CRs — hand the running providers to Flux
// without recreating any of their objects.
package operator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	// cli is the capwright CLI built from the working tree.
	cli string
	// releases stands in for github.com, serving the real Cluster API
	// releases; the manager reaches it through its mirror rule, as a site
	// without access to github.com reaches its own mirror.
	releases *plane.ReleaseServer
)

// operatorFieldManagers are the field managers cluster-api-operator
// v0.29.0 writes the providers' objects as: capi-operator for its
// server-side applies, and its binary's name for clusterctl's creates and
// patches (cluster-api-operator here, manager in the operator's image).
// kustomize-controller runs with --override-manager for both, as
// docs/migrate.md says, so it removes their fields' ownership on its
// first apply and owns the fields alone.
var operatorFieldManagers = []string{"capi-operator", "cluster-api-operator"}

func TestMain(m *testing.M) {
	var overrides []string
	for _, m := range operatorFieldManagers {
		overrides = append(overrides, "--override-manager="+m)
	}
	opts := plane.Options{ExtraArgs: map[string][]string{"kustomize-controller": overrides}}
	os.Exit(framework.RunSuite(m, opts, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		var err error
		if cli, err = p.BuildCLI(ctx); err != nil {
			return err
		}
		releases, err = plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin"))
		return err
	}, func(p *plane.Plane) { env = p }))
}
