package convert

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMigrateGuideExample: docs/migrate.md's example converts, as the
// guide says, with no field needing attention and exactly two notes, into
// the Capwright CR it shows.
func TestMigrateGuideExample(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "migrate.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(guide, -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/migrate.md shows %d YAML blocks, want the operator CR and its conversion", len(blocks))
	}
	docs, err := Decode("docs/migrate.md", blocks[0][1])
	if err != nil {
		t.Fatal(err)
	}
	out := Convert(docs)
	if len(out) != 1 || out[0].Object == nil {
		t.Fatalf("the guide's first block does not convert: %+v", out)
	}
	if NeedAttention(out[0].Findings) || len(out[0].Findings) != 2 {
		t.Errorf("the guide promises no attention and two notes, got:\n%s", findingsText(out[0]))
	}
	got, err := Encode(out[0])
	if err != nil {
		t.Fatal(err)
	}
	var gotObj, wantObj map[string]any
	if err := yaml.Unmarshal(got, &gotObj); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(blocks[1][1], &wantObj); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotObj, wantObj) {
		t.Errorf("docs/migrate.md shows\n%s\nbut the converter writes\n%s", blocks[1][1], got)
	}
}

// TestMigrateGuideTableNamesEverySpecField: each field of the operator's
// spec has a row in docs/migrate.md's table.
func TestMigrateGuideTableNamesEverySpecField(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "migrate.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(guide), "## Field by field")
	if !ok {
		t.Fatal("docs/migrate.md has no section Field by field")
	}
	paths := fieldPaths(reflect.TypeFor[OperatorSpec](), ".spec")
	for _, p := range paths {
		if strings.Count(p, ".") > 3 || strings.HasPrefix(p, ".spec.additionalDeployments.") {
			continue // nested fields are named under their parent's row
		}
		name := p[strings.LastIndex(p, ".")+1:]
		if !strings.Contains(table, name) {
			t.Errorf("docs/migrate.md's table does not name %s", strings.TrimPrefix(p, "."))
		}
	}
	if len(paths) < 40 {
		t.Fatalf("only %d spec fields found: the walk is broken", len(paths))
	}
}
