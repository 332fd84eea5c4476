package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// secondClusterSection is the heading of docs/gitops.md's walk-through of
// a second management cluster, which tests/e2e/gitops (move_test.go)
// follows.
const secondClusterSection = "A second management cluster, and moving Clusters to it"

// TestSecondManagementClusterKeepsTheSitePatches: the site's
// clusters/management-b installs what clusters/management does, so its
// patches must be clusters/management's, and its resources the same files.
func TestSecondManagementClusterKeepsTheSitePatches(t *testing.T) {
	read := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "examples", "site", "clusters", name, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k map[string]any
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return k
	}
	first, second := read("management"), read("management-b")
	if !reflect.DeepEqual(first["patches"], second["patches"]) {
		t.Errorf("docs/examples/site/clusters/management-b/kustomization.yaml's patches differ from clusters/management's: keep them the same")
	}
	var want []any
	for _, r := range first["resources"].([]any) {
		if r == "flux-system" {
			want = append(want, r)
			continue
		}
		want = append(want, "../management/"+r.(string))
	}
	if !reflect.DeepEqual(second["resources"], want) {
		t.Errorf("clusters/management-b lists %v, want %v (clusters/management's files, its own flux-system)", second["resources"], want)
	}
}

// TestSecondManagementClusterCommandsAreTheSuites: every clusterctl and
// flux command of the guide's section runs in the gitops suite with the
// same subcommand and flags (tests/e2e/gitops/move_test.go for clusterctl,
// framework.Bootstrap for flux bootstrap).
func TestSecondManagementClusterCommandsAreTheSuites(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := splitSections(string(guide))[secondClusterSection]
	if !ok {
		t.Fatalf("docs/gitops.md has no section %q", secondClusterSection)
	}
	var suite strings.Builder
	for _, f := range []string{"tests/e2e/gitops/move_test.go", "tests/e2e/framework/gitops.go"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		suite.Write(data)
	}
	code := suite.String()
	var commands []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		text := strings.ReplaceAll(block[1], "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			line, _, _ = strings.Cut(line, "#")
			fields := strings.Fields(line)
			if len(fields) < 2 || (fields[0] != "clusterctl" && fields[0] != "flux") {
				continue
			}
			commands = append(commands, line)
			if !strings.Contains(code, `"`+fields[1]+`"`) {
				t.Errorf("docs/gitops.md runs %s %s, which the gitops suite does not", fields[0], fields[1])
			}
			for _, f := range fields[2:] {
				if !strings.HasPrefix(f, "-") {
					continue
				}
				flag, _, _ := strings.Cut(f, "=")
				if !strings.Contains(code, `"`+flag) {
					t.Errorf("docs/gitops.md gives %s %s the flag %s, which the gitops suite does not", fields[0], fields[1], flag)
				}
			}
		}
	}
	if len(commands) < 4 {
		t.Fatalf("docs/gitops.md's section %q shows %d clusterctl and flux commands, want flux bootstrap, clusterctl describe (both sides) and clusterctl move: %q", secondClusterSection, len(commands), commands)
	}
	for _, want := range []string{"--path=clusters/management-b", "clusterctl move -n tenant-team-a"} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/gitops.md's section %q no longer shows %q", secondClusterSection, want)
		}
	}
}
