package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// measuredFigure matches what the docs quote from a measurement: a
// decimal duration, size or ratio (5.42 s, 417.5 MiB, 0.86×), a range
// with a unit (24–39 s, 0.19–0.22 s) or a duration with seconds (6m47s).
// Settings (2 s, 750 ms, 10m, 1m0s) are whole numbers and do not match.
var measuredFigure = regexp.MustCompile(`(?:^|[^\w.v-])(\d+(?:\.\d+)?–\d+(?:\.\d+)? ?(?:ms|s|MiB|MB|×)|\d+\.\d+ ?(?:ms|s|MiB|MB|GiB)|\d+\.\d+×|\d+m[1-9]\d*s)(?:$|[^\w])`)

// settings are decimal values the docs quote that are not measurements.
var settings = map[string]string{
	"0.01 s": "the lowest bucket of capwright_reconcile_duration_seconds",
	"0.1 s":  "the lowest bucket of capwright_provider_install_step_seconds",
}

// TestFiguresComeFromTheFiguresPage: every measured figure a page quotes
// is on docs/figures.md, the one page of benchmark and suite figures, so
// two pages cannot quote two figures for one measurement.
func TestFiguresComeFromTheFiguresPage(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(repoRoot, "docs", "figures.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, page := range docPages(t) {
		if page == "docs/figures.md" || strings.HasPrefix(page, "docs/reference/") {
			continue
		}
		for i, line := range strings.Split(readRepoFile(t, page), "\n") {
			for _, m := range measuredFigure.FindAllStringSubmatch(line, -1) {
				found++
				if _, ok := settings[m[1]]; !ok && !strings.Contains(string(source), m[1]) {
					t.Errorf("%s:%d quotes %q, which docs/figures.md does not have: quote figures from there (link figures.md), or add the measurement there first", page, i+1, m[1])
				}
			}
		}
	}
	if !measuredFigure.MatchString("took 5.42 s") || !measuredFigure.MatchString("in 6m47s") || measuredFigure.MatchString("Flux v2.9 serves") {
		t.Fatal("measuredFigure no longer tells figures from versions")
	}
	t.Logf("%d figures quoted outside figures.md", found)
}

// canonicalVersions are the versions of the components the docs name, as
// the tools' pins (tests/tools) and the fixtures say; docs/support.md
// states the same (TestSupportMatrix).
func canonicalVersions(t *testing.T) map[string][]string {
	capi := quoted(submatch(t, "tests/tools/capi.go", `capiFixtureVersions = \[\]string\{([^}]*)\}`))
	return map[string][]string{
		"Cluster API":              append(capi, submatch(t, "tests/tools/capitest.go", `capiTestVersion\s*=\s*"(v[^"]+)"`)),
		"Cluster API Provider AWS": {submatch(t, "tests/tools/capa.go", `capaVersion\s*=\s*"(v[^"]+)"`)},
		"cluster-api-operator":     {modVersion(t, "tests/tools/capioperator/go.mod", "sigs.k8s.io/cluster-api-operator")},
		"cert-manager":             {modVersion(t, "tests/tools/certmanager/go.mod", "github.com/cert-manager/cert-manager")},
		"Flux":                     {modVersion(t, "tests/tools/fluxcli/go.mod", "github.com/fluxcd/flux2/v2")},
	}
}

const semver = `(v\d+\.\d+\.\d+)`

// neverReleased is the Cluster API version the docs' examples of a
// refused version name.
const neverReleased = "v1.14.99"

// logicalLines are a page's lines with shell continuation lines joined
// onto the line they continue (and left empty), so a command's flags are
// on one line and each line keeps its index.
func logicalLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i := range lines {
		for j := i + 1; strings.HasSuffix(lines[i], "\\") && j < len(lines); j++ {
			lines[i] = strings.TrimRight(strings.TrimSuffix(lines[i], "\\"), " ") + " " + strings.TrimSpace(lines[j])
			lines[j] = ""
		}
	}
	return lines
}

// versionMentions find a component's version where a page names it: in
// prose, in clusterctl's TYPE/NAME:VERSION, in artifact repositories and
// release URLs, and in publish's flags.
var versionMentions = map[string][]*regexp.Regexp{
	"Cluster API": {
		regexp.MustCompile(`(?:Cluster API|CAPI|clusterctl|CAPD) ` + semver),
		regexp.MustCompile(`(?:core/cluster-api|bootstrap/kubeadm|control-plane/kubeadm|infrastructure/docker|runtime-extension/test)(?::| --version )` + semver),
		regexp.MustCompile(`(?:core-cluster-api|bootstrap-kubeadm|control-plane-kubeadm|infrastructure-docker):` + semver),
		regexp.MustCompile(`kubernetes-sigs/cluster-api/releases/(?:download/)?` + semver),
		regexp.MustCompile(`--name (?:cluster-api|kubeadm|docker) --version ` + semver),
	},
	"Cluster API Provider AWS": {
		regexp.MustCompile(`(?:CAPA|Provider AWS|cluster-api-provider-aws) ` + semver),
		regexp.MustCompile(`infrastructure/aws(?::| --version )` + semver),
		regexp.MustCompile(`infrastructure-aws:` + semver),
		regexp.MustCompile(`cluster-api-provider-aws/releases/(?:download/)?` + semver),
		regexp.MustCompile(`--name aws --version ` + semver),
	},
	"cluster-api-operator": {regexp.MustCompile(`cluster-api-operator ` + semver)},
	"cert-manager":         {regexp.MustCompile(`cert-manager ` + semver)},
	"Flux":                 {regexp.MustCompile(`(?:Flux|flux CLI|flux2) ` + semver)},
}

// providerVersionYAML: a provider CR's name and spec.version in a YAML
// block, for the providers of canonicalVersions.
var (
	providerKind = regexp.MustCompile(`(?m)^kind: \w*Provider$`)
	metaName     = regexp.MustCompile(`(?m)^  name: (\S+)$`)
	specVersion  = regexp.MustCompile(`(?m)^  version: "?` + semver)
	yamlProvider = map[string]string{"cluster-api": "Cluster API", "kubeadm": "Cluster API", "docker": "Cluster API", "aws": "Cluster API Provider AWS"}
)

// TestDocsQuoteTheCanonicalVersions: a page that names Cluster API, CAPA,
// cluster-api-operator, cert-manager or Flux with a version names one the
// tools pin (tests/tools), so no page says CAPA v2.10.0 while the others
// say v2.13.0.
func TestDocsQuoteTheCanonicalVersions(t *testing.T) {
	canonical := canonicalVersions(t)
	check := func(page string, line int, component, version string) {
		if !slices.Contains(canonical[component], version) && (component != "Cluster API" || version != neverReleased) {
			t.Errorf("%s:%d names %s %s; the pinned versions are %s (tests/tools, docs/support.md)", page, line, component, version, strings.Join(canonical[component], ", "))
		}
	}
	for _, page := range append(docPages(t), "charts/capwright/README.md") {
		text := readRepoFile(t, page)
		for i, line := range logicalLines(text) {
			for component, res := range versionMentions {
				for _, re := range res {
					for _, m := range re.FindAllStringSubmatch(line, -1) {
						check(page, i+1, component, m[1])
					}
				}
			}
		}
		for _, block := range yamlBlocks(text) {
			for _, doc := range strings.Split(block.text, "\n---") {
				name, version := metaName.FindStringSubmatch(doc), specVersion.FindStringSubmatch(doc)
				if !providerKind.MatchString(doc) || name == nil || version == nil {
					continue
				}
				if component, ok := yamlProvider[name[1]]; ok {
					check(page, block.line, component, version[1])
				}
			}
		}
	}
}

type fencedBlock struct {
	line int
	text string
}

// yamlBlocks are a page's ```yaml blocks with the line each starts on.
func yamlBlocks(page string) []fencedBlock {
	var out []fencedBlock
	var cur *fencedBlock
	for i, line := range strings.Split(page, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```yaml"):
			cur = &fencedBlock{line: i + 1}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// docPages are README.md and every Markdown page under docs/.
func docPages(t *testing.T) []string {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		pages = append(pages, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}
