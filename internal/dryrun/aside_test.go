package dryrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capwright/capwright/tests/bindir"
)

// fixture is one of the real release files make tools puts in
// bin/fixtures.
func fixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	bin, err := bindir.Default()
	if err != nil {
		t.Fatalf("locating bin/: %v; run `make tools` at the repository root", err)
	}
	data, err := os.ReadFile(filepath.Join(append([]string{bin, "fixtures"}, parts...)...))
	if err != nil {
		t.Fatalf("reading a fixture: %v; run `make tools` at the repository root", err)
	}
	return data
}

// crdAnnotations is Capwright's own patch of every CRD (render's
// crdPatch): metadata only.
var crdAnnotations = kustomize.Patch{
	Patch:  "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: not-used\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
	Target: &kustomize.Selector{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// noCRDSubstitution is crdAnnotations when no CRD has a variable.
var noCRDSubstitution = kustomize.Patch{
	Patch:  crdAnnotations.Patch + "    kustomize.toolkit.fluxcd.io/substitute: disabled\n",
	Target: crdAnnotations.Target,
}

// With the CRDs' schemas set aside during the build, Build still builds
// what kustomize-controller builds, value for value: over real releases
// (Cluster API's three providers, AWS's), with Capwright's patches, a
// user's patch of a schema (which keeps them in place), images, a target
// namespace and variables.
func TestSchemasSetAsideBuildAsFluxDoes(t *testing.T) {
	schemaPatch := kustomize.Patch{
		Patch:  `[{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/description", "value": "patched"}]`,
		Target: &kustomize.Selector{Kind: "CustomResourceDefinition", Name: "clusters.cluster.x-k8s.io"},
	}
	metadataPatch := kustomize.Patch{
		Patch:  `[{"op": "add", "path": "/metadata/labels/example.com~1patched", "value": "yes"}]`,
		Target: &kustomize.Selector{Kind: "Custom.*"},
	}
	deploymentPatch := kustomize.Patch{
		Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: capi-controller-manager\nspec:\n  replicas: 2\n",
		Target: &kustomize.Selector{Kind: "Deployment"},
	}
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		patches []kustomize.Patch
		aside   bool
	}{
		{"core", map[string][]byte{"core-components.yaml": coreComponents(t), "dollars.yaml": []byte(dollars)}, []kustomize.Patch{crdAnnotations, deploymentPatch, metadataPatch}, true},
		// Kubernetes' descriptions of $(VAR) have "$$", which Flux's
		// substitution turns into "$" unless it is off for CRDs, as
		// Capwright turns it off when no CRD has a variable.
		{"bootstrap", map[string][]byte{"bootstrap-components.yaml": fixture(t, "capi", capiVersion, "bootstrap-components.yaml")}, []kustomize.Patch{crdAnnotations}, true},
		{"bootstrap, no substitution in CRDs", map[string][]byte{"bootstrap-components.yaml": fixture(t, "capi", capiVersion, "bootstrap-components.yaml")}, []kustomize.Patch{noCRDSubstitution}, true},
		{"control plane", map[string][]byte{"control-plane-components.yaml": fixture(t, "capi", capiVersion, "control-plane-components.yaml")}, []kustomize.Patch{crdAnnotations}, true},
		{"aws", map[string][]byte{"infrastructure-components.yaml": fixture(t, "capa", "v2.13.0", "infrastructure-components.yaml")}, []kustomize.Patch{crdAnnotations}, true},
		{"a schema patched", map[string][]byte{"core-components.yaml": coreComponents(t)}, []kustomize.Patch{crdAnnotations, schemaPatch}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
			ks := coreKustomization("./")
			ks.Spec.Patches = tc.patches
			ks.Spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/cluster-api-controller", NewName: "mirror.example.com/capi"}}
			ks.Spec.TargetNamespace = "capi-system"
			if _, aside := setAside(tc.files, ks); (len(aside) > 0) != tc.aside {
				t.Fatalf("%d schemas set aside, want some: %v", len(aside), tc.aside)
			}
			built, err := Build(context.Background(), secrets, ks, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fluxBuild(t, secrets, ks, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if len(built.Objects) != len(want) {
				t.Fatalf("built %d objects, Flux builds %d", len(built.Objects), len(want))
			}
			crds := 0
			for i, o := range built.Objects {
				if !reflect.DeepEqual(o.Object, want[i].Object) {
					got, _ := json.Marshal(o.Object)
					flux, _ := json.Marshal(want[i].Object)
					t.Errorf("%s %s differs from Flux's build:\n got %.2000s\nflux %.2000s", o.GetKind(), o.GetName(), got, flux)
				}
				if o.GetKind() == "CustomResourceDefinition" {
					crds++
					if raw, _ := json.Marshal(o.Object); strings.Contains(string(raw), schemaToken) {
						t.Errorf("CustomResourceDefinition %s kept a token", o.GetName())
					}
				}
			}
			if crds == 0 {
				t.Error("no CustomResourceDefinition built")
			}
		})
	}
}

// What a patch may change decides whether the schemas can be set aside.
func TestMayChangeACRD(t *testing.T) {
	for _, tc := range []struct {
		patch  string
		target *kustomize.Selector
		want   bool
	}{
		{crdAnnotations.Patch, crdAnnotations.Target, false},
		{"$patch: delete\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n", &kustomize.Selector{Kind: "CustomResourceDefinition"}, false},
		{"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\nspec:\n  preserveUnknownFields: false\n", &kustomize.Selector{Kind: "CustomResourceDefinition"}, true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 2\n", &kustomize.Selector{Kind: "Deployment"}, false},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 2\n", &kustomize.Selector{Kind: ".*"}, true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 2\n", &kustomize.Selector{Name: "x"}, true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 2\n", nil, true},
		{`[{"op": "replace", "path": "/metadata/annotations/a", "value": "b"}]`, nil, false},
		{`[{"op": "copy", "from": "/spec/group", "path": "/metadata/annotations/a"}]`, nil, true},
		{`[{"op": "remove", "path": "/spec/versions/1"}]`, &kustomize.Selector{Kind: "CustomResource.*"}, true},
		{`[{"op": "remove", "path": "/spec/versions/1"}]`, &kustomize.Selector{Kind: "("}, true},
		{"not: [yaml", &kustomize.Selector{Kind: "CustomResourceDefinition"}, true},
	} {
		if got := mayChangeACRD(tc.patch, tc.target); got != tc.want {
			t.Errorf("mayChangeACRD(%q, %+v) = %v, want %v", tc.patch, tc.target, got, tc.want)
		}
	}
}

// A schema with a variable, an anchor or an alias stays where it is; a
// source with a kustomization of its own, or components, keeps all.
func TestWhatStaysInPlace(t *testing.T) {
	crd := func(schema string) []byte {
		return []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n" + schema)
	}
	ks := &kustomizev1.Kustomization{}
	for schema, want := range map[string]int{
		"        type: object\n        pattern: ^a$\n":                                                 1,
		"        type: object\n        description: costs ${PRICE}\n":                                  1,
		"        type: object\n        description: $$5\n":                                             1,
		"        type: object\n        properties:\n          a: &x {type: string}\n          b: *x\n": 0,
	} {
		_, aside := setAside(map[string][]byte{"crd.yaml": crd(schema)}, ks)
		if len(aside) != want {
			t.Errorf("%d schemas set aside of %q, want %d", len(aside), schema, want)
		}
		for _, a := range aside {
			if a.substitutable != (strings.Contains(schema, "${") || strings.Contains(schema, "$$")) {
				t.Errorf("the schema %q set aside as substitutable: %v", schema, a.substitutable)
			}
		}
	}
	plainCRD := crd("        type: object\n")
	if _, aside := setAside(map[string][]byte{"crd.yaml": plainCRD, "kustomization.yaml": []byte("resources: [crd.yaml]\n")}, ks); len(aside) != 0 {
		t.Error("schemas set aside from a source with a kustomization of its own")
	}
	if _, aside := setAside(map[string][]byte{"crd.yaml": plainCRD}, &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{Components: []string{"c"}}}); len(aside) != 0 {
		t.Error("schemas set aside from a build with components")
	}
	if out, aside := setAside(map[string][]byte{"crd.yaml": []byte("not: [yaml")}, ks); len(aside) != 0 || string(out["crd.yaml"]) != "not: [yaml" {
		t.Error("a file that does not decode was changed")
	}
}
