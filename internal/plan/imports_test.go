package plan_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPlansNeedNoClient: the plan of every kind is what a CLI runs
// offline, so neither it nor anything it imports may reach for
// controller-runtime's client, cache or manager. The one package of
// controller-runtime it may see is the scheme builder the API types
// register themselves with.
func TestPlansNeedNoClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "./provider", "./tenant", "./contract").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "sigs.k8s.io/controller-runtime/") && pkg != "sigs.k8s.io/controller-runtime/pkg/scheme" {
			t.Errorf("a plan package depends on %s; keep I/O in internal/controller and pass what it read in the kind's Facts", pkg)
		}
		if strings.HasPrefix(pkg, "github.com/capwright/capwright/internal/controller") {
			t.Errorf("a plan package depends on %s; the plan's vocabulary is internal/plan", pkg)
		}
	}
}
