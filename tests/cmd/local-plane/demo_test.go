package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMECoreProviderIsWhatTheDemoCommits checks that the README's
// first YAML block decodes, strictly, into a CoreProvider, that it is the
// CoreProvider of the example repository's providers file (which the demo
// commits), and that a README without one, or with another, is refused by
// name.
func TestREADMECoreProviderIsWhatTheDemoCommits(t *testing.T) {
	readme := filepath.Join("..", "..", "..", "README.md")
	example := filepath.Join("..", "..", "..", "docs", "examples", "repository", filepath.FromSlash(providersFile))
	core, err := readmeCoreProvider(readme)
	if err != nil {
		t.Fatal(err)
	}
	if core.Name != "cluster-api" || core.Namespace != "capi-system" || core.Spec.Version == "" {
		t.Errorf("README's CoreProvider = %s/%s %q, want capi-system/cluster-api with a version", core.Namespace, core.Name, core.Spec.Version)
	}
	if _, err := committedCoreProvider(readme, example); err != nil {
		t.Error(err)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "README.md")
	if err := os.WriteFile(bad, []byte("# no YAML\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readmeCoreProvider(bad); err == nil {
		t.Error("a README without a YAML block was accepted")
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "README-other.md")
	if err := os.WriteFile(other, []byte(strings.Replace(string(data), "  version: "+core.Spec.Version, "  version: v1.14.3", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = committedCoreProvider(other, example)
	if err == nil || !strings.Contains(err.Error(), "v1.14.3") || !strings.Contains(err.Error(), "is not the CoreProvider the demo commits") {
		t.Errorf("a README whose CoreProvider is not the example's: %v", err)
	}
	noCore := filepath.Join(dir, "providers.yaml")
	if err := os.WriteFile(noCore, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: capi-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := committedCoreProvider(readme, noCore); err == nil {
		t.Error("a providers file without a CoreProvider was accepted")
	}
}
