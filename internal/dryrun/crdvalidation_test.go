package dryrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capwright/capwright/tests/bindir"
)

// coreCRDs are the CRDs of Cluster API's core components at version, as
// built, by name.
func coreCRDs(t testing.TB, version string) map[string]*unstructured.Unstructured {
	t.Helper()
	bin, err := bindir.Default()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(bin, "fixtures", "capi", version, "core-components.yaml"))
	if err != nil {
		t.Fatalf("reading the Cluster API %s fixture: %v; run `make tools` at the repository root", version, err)
	}
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
	built, err := Build(context.Background(), secrets, coreKustomization("./"), map[string][]byte{"core-components.yaml": data})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range built.Objects {
		if o.GetKind() == "CustomResourceDefinition" {
			out[o.GetName()] = o
		}
	}
	if len(out) == 0 {
		t.Fatalf("no CRDs in the Cluster API %s core components", version)
	}
	return out
}

// installed is crd as the API server holds it once applied: typed, with
// the status it keeps.
func installed(t testing.TB, crd *unstructured.Unstructured) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := crd.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&out)
	out.UID, out.ResourceVersion, out.Generation = types.UID("uid-"+out.Name), "1", 1
	for _, v := range out.Spec.Versions {
		if v.Storage {
			out.Status.StoredVersions = []string{v.Name}
		}
	}
	return &out
}

// The real core CRDs pass, as new and over the previous minor's; what
// the API server refuses, a stored version dropped and a CEL rule that
// does not compile, is refused in its words (tests/e2e/dryrun compares
// them with a real API server's).
func TestValidateCRDAsTheAPIServerDoes(t *testing.T) {
	ctx := context.Background()
	previous := coreCRDs(t, "v1.13.6")
	for name, next := range coreCRDs(t, capiVersion) {
		body, _ := next.MarshalJSON()
		if invalid, err := validateCRD(ctx, body, nil); invalid != "" || err != nil {
			t.Errorf("%s as a new CRD: %q, %v", name, invalid, err)
		}
		if live, ok := previous[name]; ok {
			if invalid, err := validateCRD(ctx, body, installed(t, live)); invalid != "" || err != nil {
				t.Errorf("%s over %s's: %q, %v", name, "v1.13.6", invalid, err)
			}
		}
	}

	live := installed(t, previous["clusters.cluster.x-k8s.io"])
	live.Status.StoredVersions = []string{"v1alpha4", "v1beta1"}
	body, _ := previous["clusters.cluster.x-k8s.io"].MarshalJSON()
	invalid, err := validateCRD(ctx, body, live)
	if err != nil || !strings.Contains(invalid, `status.storedVersions[0]: Invalid value: "v1alpha4": missing from spec.versions`) {
		t.Errorf("a stored version dropped: %q, %v", invalid, err)
	}

	bad := previous["clusters.cluster.x-k8s.io"].DeepCopy()
	versions, _, _ := unstructured.NestedSlice(bad.Object, "spec", "versions")
	schema := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	schema["x-kubernetes-validations"] = []any{map[string]any{"rule": "self.spec >"}}
	_ = unstructured.SetNestedSlice(bad.Object, versions, "spec", "versions")
	body, _ = bad.MarshalJSON()
	if invalid, err := validateCRD(ctx, body, nil); err != nil || !strings.Contains(invalid, "compilation failed") {
		t.Errorf("a CEL rule that does not compile: %q, %v", invalid, err)
	}
}

// BenchmarkValidateTheCoreCRDs validates every CRD of Cluster API's core
// components over the previous minor's, as an upgrade's dry run does.
func BenchmarkValidateTheCoreCRDs(b *testing.B) {
	ctx := context.Background()
	previous := coreCRDs(b, "v1.13.6")
	type pair struct {
		body []byte
		live *apiextensionsv1.CustomResourceDefinition
	}
	var pairs []pair
	for name, next := range coreCRDs(b, capiVersion) {
		body, _ := next.MarshalJSON()
		var live *apiextensionsv1.CustomResourceDefinition
		if p, ok := previous[name]; ok {
			live = installed(b, p)
		}
		pairs = append(pairs, pair{body, live})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pairs {
			if invalid, err := validateCRD(ctx, p.body, p.live); invalid != "" || err != nil {
				b.Fatal(invalid, err)
			}
		}
	}
}
