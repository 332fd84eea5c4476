package convert

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestOperatorTypesMirrorTheOperatorCRDs: every field the operator's CRDs
// (at OperatorVersion) declare for v1alpha2 is a field of OperatorProvider,
// and the other way round, so strict decoding reports exactly the fields
// the operator does not have. Kubernetes' own types (affinity, env…) are
// compared by their top-level name only.
func TestOperatorTypesMirrorTheOperatorCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(operatorModuleDir(t), "config", "crd", "bases", "operator.cluster.x-k8s.io_*providers.yaml"))
	if err != nil || len(files) != len(operatorKinds) {
		t.Fatalf("want the CRDs of the %d operator kinds, found %v (%v)", len(operatorKinds), files, err)
	}
	want := fieldPaths(reflect.TypeFor[OperatorProvider](), "")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		if operatorKinds[crd.Spec.Names.Kind] == "" {
			t.Errorf("%s: kind %s is not one the converter knows", f, crd.Spec.Names.Kind)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != "v1alpha2" {
				continue
			}
			got := schemaPaths(v.Schema.OpenAPIV3Schema, "")
			for _, p := range got {
				if !slices.Contains(want, p) {
					t.Errorf("%s: the CRD has %s, OperatorProvider does not", crd.Spec.Names.Kind, p)
				}
			}
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("%s: OperatorProvider has %s, the CRD does not", crd.Spec.Names.Kind, p)
				}
			}
		}
	}
	if len(want) < 80 {
		t.Fatalf("only %d field paths in OperatorProvider: the walk is broken", len(want))
	}
}

// opaque are Kubernetes types the mirror takes from k8s.io/api: compared
// by name, not walked.
var opaque = []reflect.Type{
	reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.Duration](), reflect.TypeFor[metav1.LabelSelector](), reflect.TypeFor[metav1.Condition](),
}

func fieldPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || slices.Contains(opaque, t) || strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Anonymous { // inlined TypeMeta
			out = append(out, fieldPaths(f.Type, prefix)...)
			continue
		}
		path := prefix + "." + name
		out = append(out, path)
		out = append(out, fieldPaths(f.Type, path)...)
	}
	return out
}

func schemaPaths(s *apiextensionsv1.JSONSchemaProps, prefix string) []string {
	var out []string
	for name, child := range s.Properties {
		path := prefix + "." + name
		out = append(out, path)
		if prefix == ".metadata" || isKubernetesType(path) {
			continue
		}
		c := child
		for c.Items != nil && c.Items.Schema != nil {
			c = *c.Items.Schema
		}
		if c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil {
			c = *c.AdditionalProperties.Schema
		}
		out = append(out, schemaPaths(&c, path)...)
	}
	return out
}

// isKubernetesType: fields whose schema is a Kubernetes type.
func isKubernetesType(path string) bool {
	for _, suffix := range []string{".affinity", ".tolerations", ".env", ".resources", ".imagePullSecrets", ".selector", ".conditions", ".syncPeriod", ".gracefulShutDown", ".leaseDuration", ".renewDeadline", ".retryPeriod"} {
		if strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}
