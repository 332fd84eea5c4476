package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestPrinterColumns: every Capwright kind with a status shows its Ready
// status and Ready's message by default, as `flux get` and kubectl show
// Flux's kinds, so the READY column means the same on every kind (the
// contract kinds' Templates have no status); and the chart ships the same
// CRDs as manifests/.
func TestPrinterColumns(t *testing.T) {
	files, err := filepath.Glob("../../manifests/crd/bases/*.capwright.io_*.yaml")
	if err != nil || len(files) < 8 {
		t.Fatalf("CRDs: %v (%v)", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		columns := map[string]apiextensionsv1.CustomResourceColumnDefinition{}
		hasStatus := false
		for _, v := range crd.Spec.Versions {
			for _, c := range v.AdditionalPrinterColumns {
				columns[c.Name] = c
			}
			hasStatus = hasStatus || (v.Subresources != nil && v.Subresources.Status != nil)
		}
		kind := crd.Spec.Names.Kind
		for name, path := range map[string]string{
			"Ready":  `.status.conditions[?(@.type=="Ready")].status`,
			"Status": `.status.conditions[?(@.type=="Ready")].message`,
		} {
			c, ok := columns[name]
			if hasStatus && (!ok || c.JSONPath != path || c.Priority != 0) {
				t.Errorf("%s: column %s is %+v, want %s in the default view", kind, name, c, path)
			}
		}
		chart, err := os.ReadFile(filepath.Join("../../charts/capwright/crds", filepath.Base(f)))
		if err != nil || !bytes.Equal(chart, data) {
			t.Errorf("charts/capwright/crds/%s differs from %s (run make manifests): %v", filepath.Base(f), f, err)
		}
	}
}
