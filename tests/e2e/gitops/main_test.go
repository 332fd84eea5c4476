// Package gitops is the end-to-end suite of Capwright used the way its
// users use it: a Git repository that `flux bootstrap git` (the real flux
// CLI) made a management cluster sync from, and commits. The example
// repository of the install guide (docs/examples/repository) is pushed as
// written, with the site overlay the guide shows
// (docs/examples/site) for the plane's registry and release mirror; from
// then on every change is a commit and a push, and what the suite checks
// is what Flux, Capwright and Cluster API make of it.
//
// The plane runs no Flux controller of its own here (plane.Options
// RunDeployments): the controllers are the Deployments bootstrap applies
// from the repository, run with the arguments the repository gives them
// (so a repository without the ExternalArtifact gate fails as it would
// fail a user), and so are Capwright's manager, from the image `make
// release` pushed, and Cluster API's core manager, from the release Flux
// installed.
package gitops

import (
	"context"
	"os"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	// releases stands in for github.com, serving Cluster API's real
	// releases; the site overlay makes it the manager's mirror of GitHub.
	releases *plane.ReleaseServer
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{RunDeployments: true}, setup, func(p *plane.Plane) { env = p }))
}

// setup starts the stand-in for GitHub and makes the plane's pods trust
// its CA, as a site's nodes trust the CA of its release mirror.
func setup(_ context.Context, p *plane.Plane) error {
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return err
	}
	if releases, err = plane.StartFixtureReleases(bin); err != nil {
		return err
	}
	return p.TrustCA(releases.CACertPEM)
}
