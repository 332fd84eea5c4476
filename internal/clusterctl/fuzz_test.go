package clusterctl_test

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
)

// FuzzParseVariables feeds arbitrary components to the variable parser
// preflight runs on every artifact. It never panics; every variable it
// finds has a name that occurs in the input, and asking for the missing
// ones agrees with HasDefault.
func FuzzParseVariables(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: ${A}\n  y: ${B:=b}\n  z: ${C:-c}\n  w: ${D:+d}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: ${A:=${B}}\n  y: ${#C}\n  z: ${E/a/b}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  x: ${A}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: ${A-d}\n  y: ${\n",
		"---\n---\n",
		"[",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, components []byte) {
		vars, err := clusterctl.ParseVariables(components)
		if err != nil {
			return
		}
		required := map[string]bool{}
		for _, v := range vars {
			if v.Name == "" || !strings.Contains(string(components), v.Name) {
				t.Errorf("variable %q does not occur in the components", v.Name)
			}
			if !v.HasDefault {
				required[v.Name] = true
			}
		}
		missing := clusterctl.MissingVariables(vars, func(string) bool { return false })
		if len(missing) != len(required) {
			t.Errorf("with nothing provided %v are missing; the variables without a default are %v", missing, required)
		}
		for _, name := range missing {
			if !required[name] {
				t.Errorf("%s is missing although it has a default", name)
			}
		}
	})
}

// FuzzParseMetadata feeds arbitrary bytes to the metadata.yaml parser.
// It never panics, and what it accepts has a contract for every release
// series it lists.
func FuzzParseMetadata(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: 1\n  minor: 14\n  contract: v1beta2\n",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries: []\n",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: -1\n  minor: 99999999999\n",
		"kind: Metadata\n",
		"{",
	} {
		f.Add([]byte(seed), "v1.14.2")
	}
	f.Fuzz(func(t *testing.T, data []byte, version string) {
		m, err := clusterctl.ParseMetadata(data)
		if err != nil {
			return
		}
		if len(m.ReleaseSeries) == 0 {
			t.Fatal("accepted a metadata.yaml without release series")
		}
		for _, s := range m.ReleaseSeries {
			if s.Contract == "" {
				t.Errorf("accepted release series v%d.%d without a contract", s.Major, s.Minor)
			}
		}
		if contract, err := m.ContractFor(version); err == nil && contract == "" {
			t.Errorf("ContractFor(%q) found an empty contract", version)
		}
	})
}
