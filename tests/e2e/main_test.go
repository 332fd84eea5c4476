// Package e2e holds end-to-end suites that run against the local management
// plane: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok, and the real Flux controllers.
package e2e

import (
	"os"
	"testing"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// env is the plane every test in this package shares.
var env *plane.Plane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{}, nil, func(p *plane.Plane) { env = p }))
}
