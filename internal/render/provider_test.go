package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func input(t *testing.T, p v1alpha1.Provider, kind string) Input {
	t.Helper()
	components := clusterctltest.Read(t, clusterctltest.Current, clusterctl.ComponentsFile(p.ProviderType()))
	dep := managerDeployment(t, components)
	return Input{
		Provider: p, Kind: kind,
		ArtifactURL: "oci://registry.example.com/cluster-api/manifests/" + p.ProviderType() + "-" + p.GetName(),
		Tag:         clusterctltest.Current, Digest: digest,
		ComponentsFile: clusterctl.ComponentsFile(p.ProviderType()),
		ProviderLabel:  clusterctl.ProviderLabelValue(p.ProviderType(), p.GetName()),
		ManagerArgs:    dep.Spec.Template.Spec.Containers[0].Args,
	}
}

func managerDeployment(t *testing.T, components []byte) *appsv1.Deployment {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(components), 4096)
	for {
		var dep appsv1.Deployment
		if err := dec.Decode(&dep); err != nil {
			t.Fatalf("no Deployment in the components: %v", err)
		}
		if dep.Kind == "Deployment" {
			return &dep
		}
	}
}

func TestRenderCoreProvider(t *testing.T) {
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "uid-1"},
		Spec: v1alpha1.ProviderSpec{Version: clusterctltest.Current}}
	out, err := Provider(input(t, core, "CoreProvider"))
	if err != nil {
		t.Fatal(err)
	}
	repo, ks := out.OCIRepository, out.Kustomization
	if repo.Name != "core-cluster-api" || repo.Namespace != "capi-system" || repo.Spec.Reference.Digest != digest || repo.Spec.Reference.Tag != "" {
		t.Errorf("OCIRepository must be pinned to the checked digest only: %+v %+v", repo.ObjectMeta, repo.Spec.Reference)
	}
	if *repo.Spec.Ignore != "/*\n!/core-components.yaml\n" {
		t.Errorf("ignore = %q", *repo.Spec.Ignore)
	}
	if len(repo.OwnerReferences) != 1 || repo.OwnerReferences[0].UID != "uid-1" || !*repo.OwnerReferences[0].Controller {
		t.Errorf("owner references = %+v", repo.OwnerReferences)
	}
	if !ks.Spec.Prune || !ks.Spec.Wait || ks.Spec.Path != "./" || ks.Spec.TargetNamespace != "capi-system" || ks.Spec.Timeout.Duration != DefaultTimeout {
		t.Errorf("Kustomization spec = %+v", ks.Spec)
	}
	if ks.Spec.PostBuild == nil || ks.Spec.PostBuild.SubstituteStrategy != "Always" {
		t.Errorf("defaults of ${VAR:=default} need substitution even without variables: %+v", ks.Spec.PostBuild)
	}
	if got := ks.Spec.CommonMetadata.Labels; got["cluster.x-k8s.io/provider"] != "cluster-api" || got["clusterctl.cluster.x-k8s.io"] != "" {
		t.Errorf("commonMetadata labels = %v", got)
	}
	if len(ks.Spec.DependsOn) != 0 {
		t.Errorf("the core provider depends on nothing: %v", ks.Spec.DependsOn)
	}
	built := clusterctltest.KustomizeBuild(t, clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml"), "capi-system", ks.Spec.Patches)
	crds := strings.Count(string(built), "kind: CustomResourceDefinition")
	if protected := strings.Count(string(built), "kustomize.toolkit.fluxcd.io/prune: disabled"); protected != crds+1 || crds == 0 {
		t.Errorf("%d objects protected from pruning, want the %d CRDs and the Namespace", protected, crds)
	}
	if !strings.Contains(string(built), "kind: Namespace\nmetadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled") {
		t.Errorf("the Namespace, which holds the provider CR, must survive pruning")
	}
}

func TestRenderBootstrapProviderSettings(t *testing.T) {
	replicas, verbosity := int32(2), int32(4)
	p := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeadm-bootstrap", Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{
			Version:      clusterctltest.Current,
			ConfigSecret: &v1alpha1.SecretReference{Name: "kubeadm-vars"},
			Variables:    map[string]string{"KUBEADM_BOOTSTRAP_TOKEN_TTL": "30m"},
			Manager: &v1alpha1.ManagerSpec{
				FeatureGates: map[string]bool{"MachinePool": false, "KubeadmBootstrapFormatIgnition": true},
				Verbosity:    &verbosity,
				SyncPeriod:   &metav1.Duration{Duration: 5 * time.Minute},
			},
			Deployment: &v1alpha1.DeploymentSpec{
				Replicas:     &replicas,
				NodeSelector: map[string]string{"role": "infra"},
				Containers: []v1alpha1.ContainerSpec{{Name: "manager", ImageURL: "mirror.local/kubeadm-bootstrap-controller:v1.14.2",
					Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}},
			},
			Images:  []kustomize.Image{{Name: "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller", NewTag: "v1.14.2-hotfix"}},
			Patches: []kustomize.Patch{{Patch: `[{"op": "add", "path": "/metadata/annotations/example.com~1team", "value": "platform"}]`, Target: &kustomize.Selector{Kind: "Service"}}},
		}}
	in := input(t, p, "BootstrapProvider")
	in.CoreDependency = &meta.NamespacedObjectReference{Namespace: "capi-system", Name: "core-cluster-api"}
	in.NamespacePatches, _ = clusterctl.NamespacePatches(clusterctltest.Read(t, clusterctltest.Current, "bootstrap-components.yaml"), "kubeadm-bootstrap")
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	ks := out.Kustomization
	if ks.Spec.PostBuild.Substitute["KUBEADM_BOOTSTRAP_TOKEN_TTL"] != "30m" || len(ks.Spec.PostBuild.SubstituteFrom) != 1 || ks.Spec.PostBuild.SubstituteFrom[0].Name != "kubeadm-vars" {
		t.Errorf("postBuild = %+v", ks.Spec.PostBuild)
	}
	if len(ks.Spec.DependsOn) != 1 || ks.Spec.DependsOn[0].Name != "core-cluster-api" || ks.Spec.DependsOn[0].Namespace != "capi-system" {
		t.Errorf("dependsOn = %+v", ks.Spec.DependsOn)
	}
	if len(ks.Spec.Images) != 1 || ks.Spec.Images[0].NewTag != "v1.14.2-hotfix" {
		t.Errorf("images = %+v", ks.Spec.Images)
	}

	built := clusterctltest.KustomizeBuild(t, clusterctltest.Read(t, clusterctltest.Current, "bootstrap-components.yaml"), "kubeadm-bootstrap", ks.Spec.Patches)
	dep := managerDeployment(t, built)
	manager := dep.Spec.Template.Spec.Containers[0]
	args := strings.Join(manager.Args, " ")
	for _, want := range []string{"--feature-gates=KubeadmBootstrapFormatIgnition=true,MachinePool=false", "--v=4", "--sync-period=5m0s", "--leader-elect"} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %q lack %s", args, want)
		}
	}
	if strings.Count(args, "--feature-gates=") != 1 {
		t.Errorf("--feature-gates must be replaced, not repeated: %q", args)
	}
	if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.NodeSelector["role"] != "infra" ||
		manager.Image != "mirror.local/kubeadm-bootstrap-controller:v1.14.2" || manager.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("deployment settings not applied: replicas %d nodeSelector %v image %s resources %v",
			*dep.Spec.Replicas, dep.Spec.Template.Spec.NodeSelector, manager.Image, manager.Resources)
	}
	if manager.LivenessProbe == nil || len(manager.Ports) == 0 {
		t.Errorf("the strategic merge dropped fields of the manager container it should keep")
	}
	if !strings.Contains(string(built), "example.com/team: platform") {
		t.Errorf("spec.patches were not applied")
	}
	if strings.Contains(string(built), "capi-kubeadm-bootstrap-system") {
		t.Errorf("a reference to the components' own namespace is left")
	}
}

func TestRenderRefusesWhatFluxCannotDo(t *testing.T) {
	tests := []struct {
		name string
		spec v1alpha1.ProviderSpec
		want string
	}{
		{"config Secret in another namespace", v1alpha1.ProviderSpec{Version: "v1.14.2", ConfigSecret: &v1alpha1.SecretReference{Name: "vars", Namespace: "elsewhere"}}, "spec.configSecret"},
		{"clusterctl variables for a chart", v1alpha1.ProviderSpec{Version: "v1.14.2", Variables: map[string]string{"A": "b"}, Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{}}}, "spec.source.chart.values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}, Spec: tt.spec}
			_, err := Provider(input(t, p, "CoreProvider"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestMergeArgs(t *testing.T) {
	got := mergeArgs([]string{"--leader-elect", "--v=2", "--feature-gates=A=true", "positional"}, map[string]string{"v": "5", "--new": "x"})
	want := "--leader-elect --v=5 --feature-gates=A=true positional --new=x"
	if strings.Join(got, " ") != want {
		t.Fatalf("mergeArgs = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestRenderChartProvider(t *testing.T) {
	p := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "addons", Name: "helm"}, Spec: v1alpha1.ProviderSpec{
		Version: "v0.4.1",
		Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/caaph/charts/cluster-api-addon-provider-helm"},
			ValuesFrom:        []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "helm-values"}},
		}},
		Images: []kustomize.Image{{Name: "ghcr.io/caaph/manager", NewName: "mirror.local/caaph/manager"}},
	}}
	out, err := Provider(Input{Provider: p, Kind: "AddonProvider", ArtifactURL: p.Spec.Source.Chart.URL, Tag: "v0.4.1", Digest: digest, ProviderLabel: "addon-helm"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Kustomization != nil || out.HelmRelease == nil {
		t.Fatalf("a chart provider is installed by a HelmRelease only: %+v", out)
	}
	repo, hr := out.OCIRepository, out.HelmRelease
	if repo.Spec.LayerSelector == nil || repo.Spec.LayerSelector.MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" ||
		repo.Spec.LayerSelector.Operation != "copy" || repo.Spec.Ignore != nil || repo.Spec.Reference.Digest != digest {
		t.Errorf("OCIRepository spec = %+v", repo.Spec)
	}
	if hr.Spec.ChartRef.Name != "addon-helm" || hr.Spec.ChartRef.Kind != "OCIRepository" || hr.Spec.TargetNamespace != "addons" ||
		hr.Spec.Install.CRDs != "CreateReplace" || hr.Spec.CommonMetadata.Labels["cluster.x-k8s.io/provider"] != "addon-helm" {
		t.Errorf("HelmRelease spec = %+v", hr.Spec)
	}
	if len(hr.Spec.ValuesFrom) != 1 || len(hr.Spec.PostRenderers) != 1 || hr.Spec.PostRenderers[0].Kustomize.Images[0].NewName != "mirror.local/caaph/manager" {
		t.Errorf("valuesFrom %+v postRenderers %+v", hr.Spec.ValuesFrom, hr.Spec.PostRenderers)
	}
}
