package hcpsim

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func TestInstanceNameIsAUniqueDNSLabel(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	long := strings.Repeat("n", 253)
	names := map[string]bool{}
	for _, c := range []struct {
		namespace, name string
		uid             types.UID
	}{
		{"default", "alpha", "1"},
		{"default", "alpha", "2"}, // the same object recreated
		{"default-alpha", "x", "1"},
		{"team.a", "Cluster.One", "1"},
		{long, long, "1"},
		{long, long + "x", "1"},
	} {
		got := InstanceName(c.namespace, c.name, c.uid)
		if len(got) > 63 || !label.MatchString(got) || !strings.HasPrefix(got, "hcp-") {
			t.Errorf("InstanceName(%q, %q) = %q, not a DNS label starting hcp-", c.namespace, c.name, got)
		}
		if names[got] {
			t.Errorf("InstanceName(%q, %q, %q) = %q, given to another object too", c.namespace, c.name, c.uid, got)
		}
		names[got] = true
	}
	if got := InstanceName("default", "alpha", "1"); !strings.HasPrefix(got, "hcp-default-alpha-") {
		t.Errorf("InstanceName names default/alpha %q", got)
	}
}

// TestChartFiles checks the chart as PushChart takes it: paths relative to
// the chart root, the chart named and versioned as the constants say, and a
// values schema that requires version and refuses unknown keys.
func TestChartFiles(t *testing.T) {
	files := ChartFiles()
	var paths []string
	for path := range files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	want := []string{"Chart.yaml", "templates/simulatedcontrolplane.yaml", "values.schema.json", "values.yaml"}
	if !slices.Equal(paths, want) {
		t.Fatalf("chart files %v, want %v", paths, want)
	}
	var meta struct{ APIVersion, Name, Version string }
	if err := yaml.Unmarshal(files["Chart.yaml"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.APIVersion != "v2" || meta.Name != ChartName || meta.Version != ChartVersion {
		t.Errorf("Chart.yaml: %+v", meta)
	}
	var schema struct {
		AdditionalProperties *bool                     `json:"additionalProperties"`
		Required             []string                  `json:"required"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(files["values.schema.json"], &schema); err != nil {
		t.Fatal(err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties || !slices.Equal(schema.Required, []string{"version"}) {
		t.Errorf("values schema must require version and refuse unknown keys: %s", files["values.schema.json"])
	}
	for _, key := range []string{"version", "failure", "clusterName", "clusterNamespace"} {
		if schema.Properties[key] == nil {
			t.Errorf("values schema lacks %s", key)
		}
	}
	template := string(files["templates/simulatedcontrolplane.yaml"])
	for _, want := range []string{"kind: " + Kind, "apiVersion: " + APIVersion, `"%s-admin-kubeconfig" .Release.Name`} {
		if !strings.Contains(template, want) {
			t.Errorf("template lacks %q", want)
		}
	}
}

func TestCRDManifestNamesTheKind(t *testing.T) {
	var crd struct {
		Metadata struct{ Name string }
		Spec     struct {
			Group string
			Names struct{ Kind, Plural string }
			Scope string
		}
	}
	if err := yaml.Unmarshal([]byte(CRDManifest), &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Metadata.Name != CRDName || crd.Spec.Group != Group || crd.Spec.Names.Kind != Kind ||
		crd.Spec.Names.Plural != Resource || crd.Spec.Scope != "Namespaced" {
		t.Errorf("CRD manifest disagrees with the constants: %+v", crd)
	}
}
