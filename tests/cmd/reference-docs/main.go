// Command reference-docs writes the generated reference pages in
// docs/reference (make docs). tests/docs fails when they are out of date.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/capwright/capwright/tests/refdocs"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	pages, err := refdocs.Generate(*root)
	if err == nil {
		err = refdocs.Write(*root, pages)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reference-docs:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d pages in %s\n", len(pages), refdocs.Dir)
}
