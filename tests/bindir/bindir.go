// Package bindir finds bin/, where `make tools` builds the local plane's
// components and renders the test fixtures.
package bindir

import (
	"errors"
	"os"
	"path/filepath"
)

// Default is $CAPWRIGHT_BIN_DIR, or bin/ in the repository root found from
// the working directory (tests run in their package directory).
func Default() (string, error) {
	if dir := os.Getenv("CAPWRIGHT_BIN_DIR"); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", errors.New(err.Error() + "; set CAPWRIGHT_BIN_DIR to the bin directory `make tools` fills")
	}
	return filepath.Join(root, "bin"), nil
}

// RepoRoot is the repository root (the directory holding the Makefile and
// tests/tools/main.go) found from the working directory upwards.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "tests", "tools", "main.go")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no repository root (a directory with tests/tools/main.go) above the working directory " + wd)
		}
	}
}
