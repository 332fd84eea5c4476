package clusterctl

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// migrateGuideSection is the heading of docs/migrate.md's clusterctl part.
const migrateGuideSection = "## Adopting providers clusterctl installed"

// migrateGuideShows checks that the first YAML block of docs/migrate.md's
// clusterctl part is what convert wrote for the core here (comments
// aside), so the guide shows what users will see.
func migrateGuideShows(t *testing.T, converted []byte) {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "migrate.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(guide), migrateGuideSection)
	if !ok {
		t.Fatalf("docs/migrate.md has no section %q", migrateGuideSection)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		t.Fatalf("docs/migrate.md's %q shows no YAML", migrateGuideSection)
	}
	var want, got map[string]any
	if err := yaml.Unmarshal([]byte(block[1]), &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(converted, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("docs/migrate.md shows\n%s\nbut convert wrote\n%s", block[1], converted)
	}
}
