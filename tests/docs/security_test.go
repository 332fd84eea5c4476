package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestSecurityGuideRBACTable checks the manager's permissions table of
// docs/security.md against manifests/rbac/role.yaml, which controller-gen
// writes from the RBAC markers: every rule is in the table with the same
// groups, resources, verbs and resource names, and the table lists no
// rule the role does not have.
func TestSecurityGuideRBACTable(t *testing.T) {
	checkRBACTable(t, "role.yaml", "capwright-manager", "## The manager's permissions")
}

// TestSecurityGuideInstallerTable checks the provider installer's table
// against the ClusterRole Capwright aggregates into
// capwright-provider-installer, the same way.
func TestSecurityGuideInstallerTable(t *testing.T) {
	checkRBACTable(t, "provider_installer.yaml", "capwright-provider-installer-components", "## The provider installer")
}

// TestSecurityGuideReleaseCopiesTable checks the table of what the manager
// may write in its own namespace against the Role of
// manifests/rbac/release_copies.yaml, the same way.
func TestSecurityGuideReleaseCopiesTable(t *testing.T) {
	checkRBACTable(t, "release_copies.yaml", "capwright-manager-release-copies", "### In its own namespace")
}

// checkRBACTable compares the rules of the ClusterRole or Role role in
// manifests/rbac/file with the first table under heading in
// docs/security.md (up to the next ### or ## heading).
func checkRBACTable(t *testing.T, file, role, heading string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	found := false
	for _, doc := range yamlDocuments(t, data) {
		var kind metav1.TypeMeta
		if err := sigsyaml.Unmarshal(doc, &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Kind != "ClusterRole" && kind.Kind != "Role" {
			continue
		}
		var cr rbacv1.ClusterRole // a Role's fields are a subset
		if err := sigsyaml.UnmarshalStrict(doc, &cr); err != nil {
			t.Fatal(err)
		}
		if cr.Name != role {
			continue
		}
		found = true
		for _, r := range cr.Rules {
			want[ruleKey(r.APIGroups, r.Resources, r.Verbs, r.ResourceNames)] = true
		}
	}
	if !found {
		t.Fatalf("manifests/rbac/%s has no ClusterRole or Role %s", file, role)
	}

	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(guide)
	start := strings.Index(section, heading+"\n")
	if start < 0 {
		t.Fatalf("docs/security.md has no %q section", heading)
	}
	section = section[start+len(heading):]
	if end := strings.Index(section, "\n#"); end > 0 {
		section = section[:end]
	}
	names := regexp.MustCompile(`^(bind|impersonate) \(` + "`" + `([^` + "`" + `]+)` + "`" + ` only\)$`)
	got := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "| ") || len(cells) != 4 || strings.TrimSpace(cells[0]) == "API groups" {
			continue
		}
		verbs := strings.TrimSpace(cells[2])
		var resourceNames []string
		if m := names.FindStringSubmatch(verbs); m != nil {
			verbs, resourceNames = m[1], []string{m[2]}
		}
		groups := list(strings.ReplaceAll(cells[0], "`", ""))
		for i, g := range groups {
			if g == `""` {
				groups[i] = ""
			}
		}
		got[ruleKey(groups, list(cells[1]), list(verbs), resourceNames)] = true
	}
	if len(got) == 0 {
		t.Fatalf("found no rows in the %q table of docs/security.md", heading)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("role %s grants %s; docs/security.md's %q table does not list it", role, k, heading)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("docs/security.md's %q table lists %s; role %s does not grant it", heading, k, role)
		}
	}
}

// list splits a table cell of comma-separated names.
func list(cell string) []string {
	var out []string
	for _, s := range strings.Split(cell, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ruleKey is a rule in a comparable form, each list sorted.
func ruleKey(groups, resources, verbs, names []string) string {
	parts := make([]string, 0, 4)
	for _, l := range [][]string{groups, resources, verbs, names} {
		l = slices.Clone(l)
		slices.Sort(l)
		parts = append(parts, "["+strings.Join(l, " ")+"]")
	}
	return strings.Join(parts, " ")
}
