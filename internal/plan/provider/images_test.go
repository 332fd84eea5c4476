package provider

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestImageName(t *testing.T) {
	for in, want := range map[string]string{
		"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2": "registry.k8s.io/cluster-api/cluster-api-controller",
		"localhost:5000/capi/manager@sha256:abc":                     "localhost:5000/capi/manager",
		"localhost:5000/capi/manager":                                "localhost:5000/capi/manager",
	} {
		if got := imageName(in); got != want {
			t.Errorf("imageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestManagerArgsOfRealComponents(t *testing.T) {
	c, err := clusterctl.Decode(clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name, managerArgs := c.ManagerDeployment()
	if name != "capi-controller-manager" {
		t.Errorf("manager Deployment = %q, want capi-controller-manager", name)
	}
	args := strings.Join(managerArgs, " ")
	for _, want := range []string{"--leader-elect", "--feature-gates="} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %q lack %s", args, want)
		}
	}
}
