package render

import (
	"strings"
	"testing"
)

func TestMergeArgs(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		flags map[string]string
		want  string
	}{
		{"replace in place, append new in name order",
			[]string{"--leader-elect", "--v=2", "--feature-gates=A=true"}, map[string]string{"v": "5", "zeta": "1", "alpha": "x"},
			"--leader-elect --v=5 --feature-gates=A=true --alpha=x --zeta=1"},
		{"a bare boolean flag gets a value",
			[]string{"--leader-elect", "--v=2"}, map[string]string{"leader-elect": "false"},
			"--leader-elect=false --v=2"},
		{"single dash and repeats: first replaced, repeats dropped",
			[]string{"-v=1", "--metrics=:8080", "--v=3"}, map[string]string{"v": "4"},
			"--v=4 --metrics=:8080"},
		{"non-flag arguments are kept",
			[]string{"run", "--v=1"}, map[string]string{"v": "2"},
			"run --v=2"},
		{"no components args", nil, map[string]string{"v": "2"}, "--v=2"},
		{"nothing to set", []string{"--a=b"}, nil, "--a=b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(mergeArgs(tt.args, tt.flags), " "); got != tt.want {
				t.Errorf("mergeArgs = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMergeFeatureGates(t *testing.T) {
	tests := []struct {
		name    string
		current string
		gates   map[string]bool
		want    string
	}{
		{"no gates in the components: sorted",
			"", map[string]bool{"ClusterTopology": true, "MachinePool": false},
			"ClusterTopology=true,MachinePool=false"},
		{"clusterctl variables of other gates are kept",
			"MachinePool=${EXP_MACHINE_POOL:=true},ClusterTopology=${CLUSTER_TOPOLOGY:=false}", map[string]bool{"ClusterTopology": true},
			"MachinePool=${EXP_MACHINE_POOL:=true},ClusterTopology=true"},
		{"new gates after the components'",
			"B=true", map[string]bool{"C": true, "A": false},
			"B=true,A=false,C=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeFeatureGates(tt.current, tt.gates); got != tt.want {
				t.Errorf("mergeFeatureGates = %q, want %q", got, tt.want)
			}
		})
	}
}
