package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// testScope answers as an API server serving the built-in kinds below and
// nothing else (a provider's CRDs are not installed yet).
func testScope(gvk schema.GroupVersionKind) (namespaced, known bool) {
	switch gvk.Kind {
	case "ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition":
		return false, true
	case "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "Deployment":
		return true, true
	}
	return false, false
}

const additionalSource = "ConfigMap capi-system/extra (spec.additionalManifests)"

func TestAdditionalManifestsDefaultNamespaces(t *testing.T) {
	manifests := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: capi-extra
rules: []
---
# a comment and an empty document are fine
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  region: ${REGION}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent
  namespace: default
---
apiVersion: infrastructure.example.com/v1beta2
kind: ExampleIdentity
metadata:
  name: not-served-yet
`
	packed, err := AdditionalManifests(additionalSource, manifests, "capi-system", testScope)
	if err != nil {
		t.Fatal(err)
	}
	again, err := AdditionalManifests(additionalSource, manifests, "capi-system", testScope)
	if err != nil || !bytes.Equal(packed, again) {
		t.Fatalf("packing the same manifests twice gave different bytes (a new revision for Flux on every resync): %v", err)
	}
	files := untarGz(t, packed)
	if len(files) != 1 || files[AdditionalManifestsFile] == nil {
		t.Fatalf("artifact files = %v, want only %s", keys(files), AdditionalManifestsFile)
	}
	objects := fluxBuild(t, additionalBuildInput(t), files)
	for _, tt := range []struct{ kind, name, namespace string }{
		{"ClusterRole", "capi-extra", ""},
		{"ConfigMap", "settings", "capi-system"}, // no namespace: the provider's
		{"ServiceAccount", "agent", "default"},   // its own namespace is kept
		{"ExampleIdentity", "not-served-yet", ""},
	} {
		o := find(t, objects, tt.kind, tt.name)
		if o.GetNamespace() != tt.namespace {
			t.Errorf("%s %s: namespace %q, want %q", tt.kind, tt.name, o.GetNamespace(), tt.namespace)
		}
		if o.GetLabels()["cluster.x-k8s.io/provider"] != "cluster-api" {
			t.Errorf("%s %s lacks clusterctl's provider label: %v", tt.kind, tt.name, o.GetLabels())
		}
	}
	if got := find(t, objects, "ConfigMap", "settings").Object["data"]; got.(map[string]any)["region"] != "eu-1" {
		t.Errorf("spec.variables are not substituted in the additional manifests: %v", got)
	}
}

func TestAdditionalManifestsRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, manifests string
		want            []string
	}{
		{"not YAML", "kind: [", []string{additionalSource, `data key "manifests", document 1 is not YAML`}},
		{"no objects", "# nothing\n---\n", []string{"holds no objects", "drop spec.additionalManifests"}},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", []string{"document 1", "apiVersion and kind are required"}},
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", []string{"ConfigMap has no metadata.name"}},
		{"a Secret", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  token: s3cr3t\n",
			[]string{"document 2", "kind Secret (creds) is refused", "SOPS"}},
		{"a list", "apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: l\nitems: []\n", []string{"separate YAML documents"}},
		{"a cluster-scoped object with a namespace", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n  namespace: capi-system\n",
			[]string{"ClusterRole r is cluster-scoped but says namespace capi-system", "remove metadata.namespace"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AdditionalManifests(additionalSource, tt.manifests, "capi-system", testScope)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error leaks secret data: %q", err)
			}
		})
	}
}

func TestRenderAdditionalManifests(t *testing.T) {
	p := coreProvider()
	p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
	p.Spec.Variables = map[string]string{"REGION": "eu-1"}
	out, err := Provider(inputFor(t, p))
	if err != nil {
		t.Fatal(err)
	}
	ea, ks := out.AdditionalArtifact, out.AdditionalKustomization
	if ea == nil || ks == nil {
		t.Fatalf("no ExternalArtifact (%v) or Kustomization (%v) for spec.additionalManifests", ea, ks)
	}
	if ea.Name != "core-cluster-api-additional" || ks.Name != ea.Name || ea.Namespace != "capi-system" {
		t.Errorf("names: ExternalArtifact %s/%s, Kustomization %s", ea.Namespace, ea.Name, ks.Name)
	}
	if ea.APIVersion != "source.toolkit.fluxcd.io/v1" || ea.Kind != "ExternalArtifact" || ea.Status.Artifact != nil {
		t.Errorf("ExternalArtifact %+v; the artifact is the controller's to set after storing it", ea.TypeMeta)
	}
	if ref := ea.Spec.SourceRef; ref == nil || ref.Kind != "CoreProvider" || ref.Name != "cluster-api" || ref.Namespace != "capi-system" || ref.APIVersion != "providers.capwright.io/v1alpha1" {
		t.Errorf("ExternalArtifact sourceRef = %+v, want the provider", ea.Spec.SourceRef)
	}
	if len(ea.OwnerReferences) != 1 || ea.OwnerReferences[0].UID != p.UID || len(ks.OwnerReferences) != 1 {
		t.Errorf("both objects must be controlled by the provider: %+v %+v", ea.OwnerReferences, ks.OwnerReferences)
	}
	main := out.Kustomization
	if ks.Spec.SourceRef != (kustomizev1.CrossNamespaceSourceReference{Kind: "ExternalArtifact", Name: ea.Name}) {
		t.Errorf("sourceRef = %+v", ks.Spec.SourceRef)
	}
	if len(ks.Spec.DependsOn) != 1 || ks.Spec.DependsOn[0].Name != main.Name || ks.Spec.DependsOn[0].Namespace != main.Namespace {
		t.Errorf("dependsOn = %+v, want only the provider's Kustomization", ks.Spec.DependsOn)
	}
	if ks.Spec.TargetNamespace != "" || len(ks.Spec.Patches) != 0 {
		t.Errorf("the additional manifests keep their namespaces and get no component patches: targetNamespace %q, %d patches", ks.Spec.TargetNamespace, len(ks.Spec.Patches))
	}
	if !ks.Spec.Prune || !ks.Spec.Wait || ks.Spec.PostBuild == nil || ks.Spec.PostBuild.Substitute["REGION"] != "eu-1" ||
		ks.Spec.CommonMetadata == nil || ks.Spec.CommonMetadata.Labels["cluster.x-k8s.io/provider"] != "cluster-api" {
		t.Errorf("additional Kustomization spec = %+v", ks.Spec)
	}
	if main.Spec.SourceRef.Kind != "OCIRepository" || len(main.Spec.Patches) == 0 {
		t.Errorf("rendering the additional manifests changed the provider's Kustomization: %+v", main.Spec)
	}

	without, err := Provider(inputFor(t, coreProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if without.AdditionalArtifact != nil || without.AdditionalKustomization != nil {
		t.Errorf("objects for additional manifests rendered without spec.additionalManifests")
	}
}

// TestRenderAdditionalManifestsOfARelease: a provider installed from
// release files applies its components from the release artifact's
// components directory; its additional manifests come from their own
// artifact, whose manifests.yaml is at the root.
func TestRenderAdditionalManifestsOfARelease(t *testing.T) {
	p := coreProvider()
	p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
	in := inputFor(t, p)
	in.Release = true
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Kustomization.Spec.Path; got != "./"+ReleaseComponentsDir {
		t.Errorf("the components' Kustomization builds %q, want ./%s", got, ReleaseComponentsDir)
	}
	ks := out.AdditionalKustomization
	if ks == nil || ks.Spec.Path != "./" || ks.Spec.SourceRef.Kind != "ExternalArtifact" || ks.Spec.SourceRef.Name != "core-cluster-api-additional" {
		t.Fatalf("additional Kustomization = %+v, want path ./ of ExternalArtifact core-cluster-api-additional", ks)
	}
	packed, err := AdditionalManifests(additionalSource, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n", "capi-system", testScope)
	if err != nil {
		t.Fatal(err)
	}
	objects := fluxBuild(t, &RenderedObjects{OCIRepository: &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "unused"}}, Kustomization: ks}, untarGz(t, packed))
	if len(objects) != 1 || objects[0].GetName() != "settings" {
		t.Fatalf("Flux built %d objects at the Kustomization's path, want the ConfigMap settings", len(objects))
	}
}

func TestRenderAdditionalManifestsRefusals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*v1alpha1.CoreProvider)
		want   string
	}{
		{"ConfigMap in another namespace", func(p *v1alpha1.CoreProvider) {
			p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra", Namespace: "elsewhere"}
		}, "ConfigMap elsewhere/extra is outside the provider's namespace capi-system"},
		{"chart source", func(p *v1alpha1.CoreProvider) {
			p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
			p.Spec.Source = &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.example.com/charts/capi"}}}
		}, "not supported with spec.source.chart"},
		{"name too long for a label", func(p *v1alpha1.CoreProvider) {
			p.Name = strings.Repeat("a", 50)
			p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
		}, "use a shorter provider name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := coreProvider()
			tt.change(p)
			in := inputFor(t, coreProvider())
			in.Provider = p
			_, err := Provider(in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// additionalBuildInput is what kustomize-controller builds the additional
// manifests with: the additional Kustomization, over the whole artifact
// (an ExternalArtifact has no ignore rules).
func additionalBuildInput(t *testing.T) *RenderedObjects {
	t.Helper()
	p := coreProvider()
	p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
	p.Spec.Variables = map[string]string{"REGION": "eu-1"}
	out, err := Provider(inputFor(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return &RenderedObjects{OCIRepository: &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "unused"}}, Kustomization: out.AdditionalKustomization}
}

func untarGz(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
