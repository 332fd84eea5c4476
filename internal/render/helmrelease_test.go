package render

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func chartProvider() *v1alpha1.AddonProvider {
	return &v1alpha1.AddonProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "caaph-system", Name: "helm", UID: "a11-addon"},
		Spec: v1alpha1.ProviderSpec{
			Version: "v0.4.1",
			Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
				OCIRegistryAccess: v1alpha1.OCIRegistryAccess{
					URL:       "oci://ghcr.io/example/charts/cluster-api-addon-provider-helm",
					SecretRef: &meta.LocalObjectReference{Name: "ghcr-pull"},
				},
				Values:     &apiextensionsv1.JSON{Raw: []byte(`{"manager":{"replicas":2}}`)},
				ValuesFrom: []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "caaph-values", ValuesKey: "overrides.yaml", Optional: true}},
			}},
			Images:  []kustomize.Image{{Name: "ghcr.io/example/caaph-manager", NewTag: "v0.4.1-hotfix"}},
			Patches: []kustomize.Patch{{Patch: `[{"op": "add", "path": "/metadata/labels/team", "value": "platform"}]`, Target: &kustomize.Selector{Kind: "Deployment"}}},
			DependsOn: []v1alpha1.DependencyReference{
				{Kind: "HelmRelease", Name: "cert-manager", Namespace: "cert-manager"},
				{Kind: "HelmRelease", Name: "sidecar"},
				{Name: "a-kustomization"},
			},
			Timeout: &metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

func chartInput(p v1alpha1.Provider) Input {
	return Input{
		Provider:      p,
		ArtifactURL:   p.GetSpec().Source.Chart.URL,
		Tag:           p.GetSpec().Version,
		Digest:        testDigest,
		ProviderLabel: "addon-helm",
		CoreDependency: &meta.NamespacedObjectReference{
			Namespace: "capi-system", Name: "core-cluster-api"},
		MirrorImages: []kustomize.Image{{Name: "registry.k8s.io/kube-rbac-proxy", NewName: "mirror.example.com/kube-rbac-proxy"}},
	}
}

func TestChartProvider(t *testing.T) {
	out, err := Provider(chartInput(chartProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if out.Kustomization != nil || out.HelmRelease == nil {
		t.Fatalf("a chart is installed by a HelmRelease only: %+v", out)
	}

	repo := out.OCIRepository
	wantRepo := sourcev1.OCIRepositorySpec{
		URL:           "oci://ghcr.io/example/charts/cluster-api-addon-provider-helm",
		Reference:     &sourcev1.OCIRepositoryRef{Digest: testDigest},
		LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"},
		SecretRef:     &meta.LocalObjectReference{Name: "ghcr-pull"},
		Interval:      metav1.Duration{Duration: 10 * time.Minute},
		Timeout:       &metav1.Duration{Duration: time.Minute},
	}
	if !reflect.DeepEqual(repo.Spec, wantRepo) {
		t.Errorf("OCIRepository spec = %+v, want %+v (no ignore: the chart layer is copied whole)", repo.Spec, wantRepo)
	}

	hr := out.HelmRelease
	if hr.APIVersion != "helm.toolkit.fluxcd.io/v2" || hr.Kind != "HelmRelease" || hr.Name != "addon-helm" || hr.Namespace != "caaph-system" ||
		hr.Labels[v1alpha1.ProviderKindLabel] != "AddonProvider" || hr.OwnerReferences[0].UID != "a11-addon" {
		t.Errorf("HelmRelease meta = %+v %+v", hr.TypeMeta, hr.ObjectMeta)
	}
	s := hr.Spec
	if *s.ChartRef != (helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "addon-helm", Namespace: "caaph-system"}) {
		t.Errorf("chartRef = %+v", *s.ChartRef)
	}
	if s.ReleaseName != "addon-helm" || s.TargetNamespace != "caaph-system" || s.Interval.Duration != 10*time.Minute || s.Timeout.Duration != 10*time.Minute || s.Suspend {
		t.Errorf("release settings = %+v", s)
	}
	if s.Install.CRDs != helmv2.CreateReplace || s.Install.CreateNamespace || s.Upgrade.CRDs != helmv2.CreateReplace ||
		s.DriftDetection.Mode != helmv2.DriftDetectionEnabled {
		t.Errorf("install %+v upgrade %+v drift %+v", s.Install, s.Upgrade, s.DriftDetection)
	}
	if string(s.Values.Raw) != `{"manager":{"replicas":2}}` {
		t.Errorf("values = %s", s.Values.Raw)
	}
	if want := []meta.ValuesReference{{Kind: "ConfigMap", Name: "caaph-values", ValuesKey: "overrides.yaml", Optional: true}}; !reflect.DeepEqual(s.ValuesFrom, want) {
		t.Errorf("valuesFrom = %+v", s.ValuesFrom)
	}
	wantDeps := []helmv2.DependencyReference{{Name: "cert-manager", Namespace: "cert-manager"}, {Name: "sidecar", Namespace: "caaph-system"}}
	if !reflect.DeepEqual(s.DependsOn, wantDeps) {
		t.Errorf("dependsOn = %+v, want the HelmRelease entries only (Flux cannot depend on other kinds from a HelmRelease)", s.DependsOn)
	}
	if !reflect.DeepEqual(s.CommonMetadata.Labels, map[string]string{"cluster.x-k8s.io/provider": "addon-helm", "clusterctl.cluster.x-k8s.io": ""}) {
		t.Errorf("commonMetadata = %+v", s.CommonMetadata)
	}
	if len(s.PostRenderers) != 1 || len(s.PostRenderers[0].Kustomize.Patches) != 2 || len(s.PostRenderers[0].Kustomize.Images) != 2 {
		t.Fatalf("postRenderers = %+v, want CRD protection + spec.patches and mirror + spec images", s.PostRenderers)
	}

	// The values are the chart's own copy.
	s.Values.Raw[2] = 'X'
	if string(chartProvider().Spec.Source.Chart.Values.Raw) != `{"manager":{"replicas":2}}` {
		t.Errorf("values alias the provider's")
	}
}

// TestChartRegistryAccess: the chart source's registry access reaches the
// OCIRepository as spec.source.oci's does, for source-controller to pull
// the chart with.
func TestChartRegistryAccess(t *testing.T) {
	p := chartProvider()
	p.Spec.Source.Chart.CertSecretRef = &meta.LocalObjectReference{Name: "registry-tls"}
	p.Spec.Source.Chart.Insecure = true
	out, err := Provider(chartInput(p))
	if err != nil {
		t.Fatal(err)
	}
	s := out.OCIRepository.Spec
	if s.SecretRef == nil || s.SecretRef.Name != "ghcr-pull" || s.CertSecretRef == nil || s.CertSecretRef.Name != "registry-tls" || !s.Insecure {
		t.Errorf("OCIRepository secretRef %+v, certSecretRef %+v, insecure %v; want the chart source's", s.SecretRef, s.CertSecretRef, s.Insecure)
	}
}

// TestChartPostRenderer runs the post-renderer as helm-controller does
// (internal/postrender.Kustomize: one kustomization over the rendered
// manifests with the patches and images) on a chart's output with and
// without templated CRDs.
func TestChartPostRenderer(t *testing.T) {
	out, err := Provider(chartInput(chartProvider()))
	if err != nil {
		t.Fatal(err)
	}
	pr := out.HelmRelease.Spec.PostRenderers[0].Kustomize
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: helmchartproxies.addons.cluster.x-k8s.io\n  annotations:\n    cert-manager.io/inject-ca-from: caaph-system/caaph-serving-cert\n"
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: caaph-controller-manager\n  labels:\n    app: caaph\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: ghcr.io/example/caaph-manager:v0.4.1\n"

	objects := postRender(t, crd+"---\n"+deploy, pr)
	gotCRD := objects["CustomResourceDefinition"]
	if gotCRD.GetAnnotations()["helm.sh/resource-policy"] != "keep" || gotCRD.GetAnnotations()["cert-manager.io/inject-ca-from"] == "" {
		t.Errorf("CRD annotations = %v, want Helm's keep policy added", gotCRD.GetAnnotations())
	}
	gotDeploy := objects["Deployment"]
	if gotDeploy.GetLabels()["team"] != "platform" {
		t.Errorf("spec.patches not applied: %v", gotDeploy.GetLabels())
	}
	containers, _, _ := unstructured.NestedSlice(gotDeploy.Object, "spec", "template", "spec", "containers")
	if image := containers[0].(map[string]any)["image"]; image != "ghcr.io/example/caaph-manager:v0.4.1-hotfix" {
		t.Errorf("image = %v", image)
	}

	// A chart without templated CRDs must still render.
	if objects := postRender(t, deploy, pr); len(objects) != 1 {
		t.Errorf("post-rendering a chart without CRDs gave %d objects", len(objects))
	}
}

// postRender is helm-controller's kustomize post-renderer; objects by kind.
func postRender(t *testing.T, manifests string, pr *helmv2.Kustomize) map[string]*unstructured.Unstructured {
	t.Helper()
	cfg := kustypes.Kustomization{Resources: []string{"helm-output.yaml"}}
	cfg.APIVersion, cfg.Kind = kustypes.KustomizationVersion, kustypes.KustomizationKind
	for _, img := range pr.Images {
		cfg.Images = append(cfg.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	for _, p := range pr.Patches {
		patch := kustypes.Patch{Patch: p.Patch}
		if s := p.Target; s != nil {
			patch.Target = &kustypes.Selector{LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
			patch.Target.Group, patch.Target.Version, patch.Target.Kind = s.Group, s.Version, s.Kind
			patch.Target.Name, patch.Target.Namespace = s.Name, s.Namespace
		}
		cfg.Patches = append(cfg.Patches, patch)
	}
	kfile, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile("helm-output.yaml", []byte(manifests)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile("kustomization.yaml", kfile); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, ".")
	if err != nil {
		t.Fatalf("helm-controller's post-renderer would fail: %v", err)
	}
	objects := map[string]*unstructured.Unstructured{}
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &o.Object); err != nil {
			t.Fatal(err)
		}
		objects[o.GetKind()] = o
	}
	return objects
}
