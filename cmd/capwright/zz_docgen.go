//go:build docgen

package main

import (
	"os"

	"github.com/capwright/capwright/tests/refdocs"
)

// Built with -tags docgen (make docs), the CLI prints its command tree for
// the generated reference instead of running; released binaries hold none
// of this.
func init() {
	if os.Getenv("CAPWRIGHT_DOCGEN") == "1" {
		refdocs.Dump(refdocs.FromCobra(newRootCommand()))
		os.Exit(0)
	}
}
