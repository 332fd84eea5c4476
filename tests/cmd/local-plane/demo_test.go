package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestREADMECoreProviderIsWhatTheDemoApplies checks that the README's
// first YAML block decodes, strictly, into the CoreProvider the demo
// applies, and that a README without one is refused by name.
func TestREADMECoreProviderIsWhatTheDemoApplies(t *testing.T) {
	core, err := readmeCoreProvider(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if core.Name != "cluster-api" || core.Namespace != "capi-system" || core.Spec.Version == "" {
		t.Errorf("README's CoreProvider = %s/%s %q, want capi-system/cluster-api with a version", core.Namespace, core.Name, core.Spec.Version)
	}
	bad := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(bad, []byte("# no YAML\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readmeCoreProvider(bad); err == nil {
		t.Error("a README without a YAML block was accepted")
	}
}
