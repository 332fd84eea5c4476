// Package install is the end-to-end suite of installing Capwright the way
// its users do: `make release` to a registry, then Flux applies the YAML
// the install guide (docs/install.md) tells users to commit, from
// docs/examples: each file as written, under a kustomize site overlay that
// gives the plane's registry and tag and the release's cosign.pub
// (siteOverlay). The manager that then runs is the one from the released
// image, started with the Deployment's own command, args and env and
// authenticated as the Deployment's ServiceAccount.
package install

import (
	"os"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var env *plane.Plane

// releasesDir receives the SBOMs and provenance of the suite's releases.
var releasesDir string

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "capwright-install-releases-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	releasesDir = dir
	return framework.RunSuite(m, plane.Options{AuditLog: true}, publishCAPIProviders, func(p *plane.Plane) { env = p })
}
