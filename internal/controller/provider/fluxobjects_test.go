package provider

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestSubset(t *testing.T) {
	have := map[string]any{
		"spec": map[string]any{
			"interval": "10m0s", "prune": true, "provider": "generic", // provider: a server default
			"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}},
		},
		"status": map[string]any{"observedGeneration": int64(3)},
	}
	tests := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"fields the server defaulted are ignored", map[string]any{"spec": map[string]any{"interval": "10m0s", "prune": true}}, true},
		{"a changed field is seen", map[string]any{"spec": map[string]any{"interval": "5m0s"}}, false},
		{"a missing field is seen", map[string]any{"spec": map[string]any{"suspend": true}}, false},
		{"lists compare whole", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}}}}, false},
		{"equal lists", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := subset(tt.want, have); got != tt.ok {
				t.Fatalf("subset = %v, want %v", got, tt.ok)
			}
		})
	}
}

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
	name, managerArgs := managerDeployment(clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml"))
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
