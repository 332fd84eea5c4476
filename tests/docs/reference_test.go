package docs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capwright/capwright/tests/refdocs"
)

// TestReferenceIsGenerated: the pages in docs/reference are what `make
// docs` generates from the CRDs, the condition constants, the metrics,
// the CLI's commands and the manager's flags, so a field, reason, metric,
// command or flag added without regenerating fails here.
func TestReferenceIsGenerated(t *testing.T) {
	pages, err := refdocs.Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v: run make docs", name, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s is out of date: run make docs (%s)", name, firstDifference(string(got), want))
		}
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, refdocs.Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := pages[refdocs.Dir+"/"+e.Name()]; !ok {
			t.Errorf("%s/%s is not generated: every page of %s is; run make docs, which removes it", refdocs.Dir, e.Name(), refdocs.Dir)
		}
	}
}

// firstDifference names the first line where the committed page and the
// generated one differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ": committed " + strconv.Quote(gl) + ", generated " + strconv.Quote(wl)
		}
	}
	return "they differ"
}
