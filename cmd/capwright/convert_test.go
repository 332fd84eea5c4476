package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/convert"
	"github.com/capwright/capwright/internal/convert/converttest"
)

// operatorDocs reads a Markdown file of cluster-api-operator's book, from
// the module tests/tools/capioperator requires, and returns its YAML
// blocks as one multi-document stream.
func operatorDocs(t *testing.T, page string) []byte {
	t.Helper()
	out, err := exec.Command("go", "-C", filepath.Join("..", "..", "tests", "tools", "capioperator"),
		"list", "-mod=mod", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api-operator").Output()
	if err != nil {
		t.Fatalf("finding cluster-api-operator's source: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if !strings.HasSuffix(dir, "@"+convert.OperatorVersion) {
		t.Fatalf("cluster-api-operator source %s is not %s", dir, convert.OperatorVersion)
	}
	data, err := os.ReadFile(filepath.Join(dir, "docs", "book", "src", "03_topics", "02_configuration", page))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("%s holds no YAML block", page)
	}
	return []byte(strings.Join(blocks, "\n---\n"))
}

func loadCRDs(t *testing.T) *converttest.CRDs {
	t.Helper()
	crds, err := converttest.LoadCRDs(filepath.Join("..", "..", "manifests", "crd", "bases", "providers.capwright.io_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return crds
}

// TestConvertOperatorExamplesToDirectory converts the operator's "Examples
// of API usage" page into one file per provider, each accepted by
// Capwright's CRDs, and exits 7 because one example needs attention.
func TestConvertOperatorExamplesToDirectory(t *testing.T) {
	in := filepath.Join(t.TempDir(), "examples.yaml")
	if err := os.WriteFile(in, operatorDocs(t, "03_examples-of-api-usage.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, report := t.TempDir(), filepath.Join(t.TempDir(), "report.txt")
	stdout, stderr, code := cliRun(t, "convert", "-f", in, "--output", out, "--report", report)
	if code != exitAttention {
		t.Fatalf("exit code %d, want %d (metrics.bindAddress needs attention)\n%s", code, exitAttention, stderr)
	}
	if !strings.Contains(stderr, "need attention") {
		t.Errorf("stderr does not say why it exits %d: %s", code, stderr)
	}
	crds := loadCRDs(t)
	want := map[string]string{
		"capa-system/infrastructure-aws.yaml":                          "metrics-bind-addr: :8181",
		"capa-system/infrastructure-aws.2.yaml":                        "imageUrl: gcr.io/myregistry/capa-controller:v2.1.4-foo",
		"capi-kubeadm-control-plane-system/control-plane-kubeadm.yaml": "memory: 30Mi",
		"capz-system/infrastructure-myazure.yaml":                      "url: https://github.com/myorg/awesome-azure-provider/releases",
		"capv-system/infrastructure-vsphere.yaml":                      "name: vsphere-variables",
	}
	for file, text := range want {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Errorf("%s not written: %v (stdout: %s)", file, err, stdout)
			continue
		}
		if !strings.Contains(string(data), text) {
			t.Errorf("%s lacks %q:\n%s", file, text, data)
		}
		if errs := crds.Validate(data); len(errs) > 0 {
			t.Errorf("%s is refused by Capwright's CRDs: %v", file, errs)
		}
		if !strings.Contains(stdout, filepath.Join(out, file)) {
			t.Errorf("stdout does not list %s: %s", file, stdout)
		}
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"attention spec.manager.metrics.bindAddress",
		"attention metadata.name: aws is also converted from",
		"Converted 5 provider CR(s); 2 field(s) need attention",
	} {
		if !strings.Contains(string(text), s) {
			t.Errorf("report lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(string(text), "AWS_B64ENCODED_CREDENTIALS") {
		t.Errorf("the report quotes the Secret's data:\n%s", text)
	}
}

// TestConvertAirGappedFromStdin: the operator's air-gapped page (selector,
// OCI and URL sources) through stdin, with a JSON report.
func TestConvertAirGappedFromStdin(t *testing.T) {
	cmd := newRootCommand()
	var stdout, stderr strings.Builder
	cmd.SetIn(strings.NewReader(string(operatorDocs(t, "01_air-gapped-environtment.md"))))
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"convert", "-f", "-", "--report-format", "json"})
	err := cmd.ExecuteContext(context.Background())
	if code := exitCode(err); code != exitAttention {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitAttention)
	}
	var report struct {
		Converted int               `json:"converted"`
		Findings  []convert.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stderr.String()), &report); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, stderr.String())
	}
	if report.Converted != 5 {
		t.Errorf("converted %d, want the page's 5 InfrastructureProviders", report.Converted)
	}
	fields := map[string]int{}
	for _, f := range report.Findings {
		if f.Severity == convert.Attention {
			fields[f.Field]++
		}
	}
	if fields["spec.fetchConfig.selector"] != 1 || fields["spec.fetchConfig.oci"] != 3 || fields["spec.fetchConfig.url"] != 1 {
		t.Errorf("attention findings by field: %v", fields)
	}
	docs := strings.Split(stdout.String(), "\n---\n")
	if len(docs) != 5 {
		t.Fatalf("want 5 YAML documents on stdout, got %d:\n%s", len(docs), stdout.String())
	}
	var third map[string]any
	if err := yaml.Unmarshal([]byte(docs[2]), &third); err != nil {
		t.Fatal(err)
	}
	oci := third["spec"].(map[string]any)["source"].(map[string]any)["oci"].(map[string]any)
	if oci["url"] != "oci://my-oci-registry.example.com/my-provider" || oci["insecure"] != true {
		t.Errorf("http:// OCI source: got %v", oci)
	}
}

func TestConvertExitCodes(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "core.yaml")
	if err := os.WriteFile(clean, []byte("apiVersion: operator.cluster.x-k8s.io/v1alpha2\nkind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\nspec:\n  version: v1.14.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := cliRun(t, "convert", "-f", dir)
	if code != exitOK {
		t.Fatalf("a CR that converts cleanly: exit %d\n%s", code, stderr)
	}
	if errs := loadCRDs(t).Validate([]byte(stdout)); len(errs) > 0 || !strings.Contains(stdout, "kind: CoreProvider") {
		t.Errorf("output %q refused: %v", stdout, errs)
	}
	notOperator := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(notOperator, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		text string
	}{
		{[]string{"convert", "-f", notOperator}, "no cluster-api-operator provider CR"},
		{[]string{"convert", "-f", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"convert"}, "no input"},
		{[]string{"convert", "-f", clean, "--from-cluster"}, "not both"},
		{[]string{"convert", "-f", clean, "--report-format", "xml"}, "choose text or json"},
	} {
		_, stderr, code := cliRun(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.text) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", tc.args, code, stderr, exitUsage, tc.text)
		}
	}
}
