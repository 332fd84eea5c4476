// Package clusterctltest gives tests the real Cluster API release manifests
// that `make tools` renders into bin/fixtures/capi/<version>/ (core,
// bootstrap and control-plane components plus metadata.yaml; Current also
// the Docker provider's infrastructure-components-development.yaml).
package clusterctltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capwright/capwright/tests/bindir"
)

// Versions with fixtures.
const (
	// Current is the Cluster API release Capwright is built against.
	Current = "v1.14.2"
	// Previous is the older release used for upgrade tests.
	Previous = "v1.13.6"
)

// Dir returns bin/fixtures/capi/<version>: under $CAPWRIGHT_BIN_DIR when
// set, else under bin/ of the repository root found from the working
// directory (the directory holding tests/tools/main.go). It fails the test
// when the fixtures are missing: they are built, never skipped.
func Dir(t testing.TB, version string) string {
	t.Helper()
	bin, err := bindir.Default()
	if err != nil {
		t.Fatalf("locating the fixtures: %v", err)
	}
	dir := filepath.Join(bin, "fixtures", "capi", version)
	if _, err := os.Stat(filepath.Join(dir, "metadata.yaml")); err != nil {
		t.Fatalf("Cluster API %s fixtures are missing in %s: run `make tools` at the repository root (%v)", version, dir, err)
	}
	return dir
}

// Read returns one fixture file, e.g. Read(t, Current, "core-components.yaml").
func Read(t testing.TB, version, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(t, version), file))
	if err != nil {
		t.Fatalf("reading fixture %s of Cluster API %s: %v; run `make tools` at the repository root", file, version, err)
	}
	return data
}
