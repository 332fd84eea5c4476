// Package docs checks the user documentation against the code: every
// condition reason the API defines is explained in docs/troubleshooting.md,
// and every example a guide tells users to commit decodes strictly into the
// real API types (the install e2e suite applies the install examples on
// the plane; this catches the rest).
package docs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	notificationv1 "github.com/fluxcd/notification-controller/api/v1"
	notificationv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kustypes "sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/refdocs"
)

const repoRoot = "../.."

// TestTroubleshootingNamesEveryReason: each reason constant of a kind's
// API appears, as `Reason`, in that kind's troubleshooting section.
func TestTroubleshootingNamesEveryReason(t *testing.T) {
	for _, api := range []struct{ file, guide, section string }{
		{"api/providers/v1alpha1/conditions.go", "docs/troubleshooting.md", "Providers"},
		{"api/tenancy/v1alpha1/conditions.go", "docs/troubleshooting.md", "Tenants"},
		{"api/clusters/v1alpha1/conditions.go", "docs/clusters.md", "Troubleshooting"},
	} {
		guide, err := os.ReadFile(filepath.Join(repoRoot, api.guide))
		if err != nil {
			t.Fatal(err)
		}
		reasons := reasonConstants(t, filepath.Join(repoRoot, api.file))
		if len(reasons) < 10 {
			t.Fatalf("found only %d reasons in %s: the parser no longer finds them", len(reasons), api.file)
		}
		text, ok := splitSections(string(guide))[api.section]
		if !ok {
			t.Fatalf("%s has no section %q", api.guide, api.section)
		}
		for name, value := range reasons {
			if !strings.Contains(text, "`"+value+"`") {
				t.Errorf("%s, section %s, does not explain reason %q (%s in %s)", api.guide, api.section, value, name, api.file)
			}
		}
	}
}

// splitSections maps each level-2 heading to its text (with its
// subsections).
func splitSections(md string) map[string]string {
	out := map[string]string{}
	heading := regexp.MustCompile(`(?m)^## (.+)$`)
	idx := heading.FindAllStringSubmatchIndex(md, -1)
	for i, m := range idx {
		end := len(md)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[md[m[2]:m[3]]] = md[m[1]:end]
	}
	return out
}

// reasonConstants returns the string constants named *Reason in file.
func reasonConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	out, err := refdocs.ReasonConstants(file)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExamplesDecodeStrictly decodes every YAML document under
// docs/examples into its Go type, refusing unknown fields, so a renamed or
// misspelt field in an example fails here.
func TestExamplesDecodeStrictly(t *testing.T) {
	decoder := strictDecoder(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs", "examples"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d example files under docs/examples", len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs := yamlDocuments(t, data)
		if len(docs) == 0 {
			t.Errorf("%s holds no object", file)
		}
		for i, doc := range docs {
			// Every example is of a kind the decoder knows, or a
			// kustomize kustomization.yaml (checked against kustomize's
			// own type).
			if kustomizationFile(doc) {
				if err := decodeStrictly(decoder, doc); err != nil {
					t.Errorf("%s, document %d: %v", file, i+1, err)
				}
				continue
			}
			_, _, err := decoder.Decode(doc, nil, nil)
			if runtime.IsNotRegisteredError(err) && checkedOnThePlane[filepath.Base(file)] == apiGroup(doc) {
				continue
			}
			if err != nil {
				t.Errorf("%s, document %d: %v", file, i+1, err)
			}
		}
	}
}

// apiGroup is the API group of a YAML document's apiVersion.
func apiGroup(doc []byte) string {
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if sigsyaml.Unmarshal(doc, &head) != nil || !strings.Contains(head.APIVersion, "/") {
		return ""
	}
	return strings.Split(head.APIVersion, "/")[0]
}

// checkedOnThePlane are examples with objects of an API group this
// module has no Go types for, by file name: an e2e suite creates them
// (dry run) against the real CRDs and webhooks instead.
var checkedOnThePlane = map[string]string{
	// tests/e2e/lockdown, against Cluster API's CRDs and manager.
	"lockdown-stack-identity.yaml": "addons.cluster.x-k8s.io",
}

// TestInstallGuideNamesExistingExamples: every docs/examples path the
// guides link exists.
func TestInstallGuideNamesExistingExamples(t *testing.T) {
	link := regexp.MustCompile(`examples/[A-Za-z0-9_./-]+\.yaml`)
	for _, guide := range []string{"docs/install.md", "docs/airgap.md", "docs/alerts.md", "docs/quickstart.md", "README.md"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, guide))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range link.FindAllString(string(data), -1) {
			if _, err := os.Stat(filepath.Join(repoRoot, "docs", path)); err != nil {
				t.Errorf("%s names %s, which does not exist", guide, path)
			}
		}
	}
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// TestGuideYAMLBlocks decodes every ```yaml block of the guides strictly,
// like the examples: a block users copy cannot name a field that does not
// exist. Blocks of kinds this test does not know are only parsed as YAML.
func TestGuideYAMLBlocks(t *testing.T) {
	decoder := strictDecoder(t)
	guides, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	guides = append(guides, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "charts", "capwright", "README.md"))
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	blocks := 0
	for _, guide := range guides {
		data, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllSubmatch(data, -1) {
			blocks++
			for j, doc := range yamlDocuments(t, m[1]) {
				if err := decodeStrictly(decoder, doc); err != nil {
					t.Errorf("%s, YAML block %d, document %d: %v", guide, i+1, j+1, err)
				}
			}
		}
	}
	if blocks < 5 {
		t.Fatalf("found %d YAML blocks in the guides", blocks)
	}
}

// TestChartReadmeInstallMatchesTheExample: the chart's README (shipped in
// the chart, where docs/ links do not reach) shows the same objects as
// docs/examples/capwright-helm.yaml, which the install e2e applies.
func TestChartReadmeInstallMatchesTheExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "charts", "capwright", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("charts/capwright/README.md shows no install YAML")
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "docs", "examples", "capwright-helm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := objects(t, m[1]), objects(t, example)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("charts/capwright/README.md installs\n%v\nbut docs/examples/capwright-helm.yaml (tested on the plane)\n%v", got, want)
	}
}

func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme,
		providersv1alpha1.AddToScheme, tenancyv1alpha1.AddToScheme, clustersv1alpha1.AddToScheme, notificationv1.AddToScheme, notificationv1beta3.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// kustomizationFile tells whether doc is a kustomize kustomization.yaml.
func kustomizationFile(doc []byte) bool {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	return sigsyaml.Unmarshal(doc, &head) == nil && head.APIVersion == kustypes.KustomizationVersion && head.Kind == kustypes.KustomizationKind
}

// decodeStrictly decodes doc into its Go type, refusing unknown fields; a
// kustomize kustomization.yaml is checked against kustomize's own type, and
// a kind neither knows only has to be YAML.
func decodeStrictly(decoder runtime.Decoder, doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsyaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	if head.APIVersion == kustypes.KustomizationVersion && head.Kind == kustypes.KustomizationKind {
		return sigsyaml.UnmarshalStrict(doc, &kustypes.Kustomization{})
	}
	_, _, err := decoder.Decode(doc, nil, nil)
	if runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) {
		return nil
	}
	return err
}

// yamlDocuments splits a multi-document YAML stream, dropping documents
// that hold only comments.
func yamlDocuments(t *testing.T, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufioReader(data))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			out = append(out, doc)
		}
	}
}

// objects decodes a YAML stream into generic objects, for comparing.
func objects(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range yamlDocuments(t, data) {
		var o map[string]any
		if err := sigsyaml.Unmarshal(doc, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// TestGitOpsGuideShowsTheExamples: every YAML block of docs/gitops.md is
// part of an example file, word for word (comments aside), and the gitops
// e2e suite commits those files: what the guide shows is what was run.
func TestGitOpsGuideShowsTheExamples(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	err = filepath.WalkDir(filepath.Join(repoRoot, "docs", "examples"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples = append(examples, string(stripComments(data)))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(guide, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/gitops.md has no YAML block")
	}
	for i, m := range blocks {
		block := strings.TrimSpace(string(stripComments(m[1])))
		if !slices.ContainsFunc(examples, func(e string) bool { return strings.Contains(e, block) }) {
			t.Errorf("docs/gitops.md, YAML block %d is in no file of docs/examples (which tests/e2e/gitops commits):\n%s", i+1, block)
		}
	}
}
