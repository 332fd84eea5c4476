package render

import (
	"reflect"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func coreProvider() *v1alpha1.CoreProvider {
	return &v1alpha1.CoreProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "6c1f0b57-core"},
		Spec:       v1alpha1.ProviderSpec{Version: capiVersion},
	}
}

func TestObjectName(t *testing.T) {
	for _, tt := range []struct{ typ, name, want string }{
		{v1alpha1.CoreProviderType, "cluster-api", "core-cluster-api"},
		{v1alpha1.ControlPlaneProviderType, "kubeadm", "control-plane-kubeadm"},
		{v1alpha1.BootstrapProviderType, "kubeadm", "bootstrap-kubeadm"},
	} {
		if got := ObjectName(tt.typ, tt.name); got != tt.want {
			t.Errorf("ObjectName(%q, %q) = %q, want %q", tt.typ, tt.name, got, tt.want)
		}
	}
}

func TestCoreProvider(t *testing.T) {
	out, err := Provider(inputFor(t, coreProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if out.HelmRelease != nil {
		t.Errorf("a provider-artifact is applied by a Kustomization, not a HelmRelease")
	}

	truth := true
	wantMeta := metav1.ObjectMeta{
		Name: "core-cluster-api", Namespace: "capi-system",
		Labels: map[string]string{v1alpha1.ProviderKindLabel: "CoreProvider", v1alpha1.ProviderNameLabel: "cluster-api"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "providers.capwright.io/v1alpha1", Kind: "CoreProvider",
			Name: "cluster-api", UID: "6c1f0b57-core", Controller: &truth, BlockOwnerDeletion: &truth}},
	}
	repo := out.OCIRepository
	if !reflect.DeepEqual(repo.ObjectMeta, wantMeta) {
		t.Errorf("OCIRepository metadata = %+v, want %+v", repo.ObjectMeta, wantMeta)
	}
	if repo.APIVersion != "source.toolkit.fluxcd.io/v1" || repo.Kind != "OCIRepository" {
		t.Errorf("OCIRepository TypeMeta = %+v; server-side apply needs it", repo.TypeMeta)
	}
	if repo.Spec.URL != "oci://registry.example.com/cluster-api/manifests/core-cluster-api" {
		t.Errorf("url = %s", repo.Spec.URL)
	}
	if *repo.Spec.Reference != (sourcev1.OCIRepositoryRef{Digest: testDigest}) {
		t.Errorf("ref = %+v, want only the checked digest (a tag could move past preflight)", *repo.Spec.Reference)
	}
	if repo.Spec.Ignore == nil || *repo.Spec.Ignore != "/*\n!/core-components.yaml\n" {
		t.Errorf("ignore = %v, want only the components file", repo.Spec.Ignore)
	}
	if repo.Spec.LayerSelector != nil || repo.Spec.Interval.Duration != 10*time.Minute || repo.Spec.Insecure || repo.Spec.Verify != nil {
		t.Errorf("OCIRepository spec = %+v", repo.Spec)
	}

	ks := out.Kustomization
	if !reflect.DeepEqual(ks.ObjectMeta, wantMeta) {
		t.Errorf("Kustomization metadata = %+v", ks.ObjectMeta)
	}
	if ks.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || ks.Kind != "Kustomization" {
		t.Errorf("Kustomization TypeMeta = %+v", ks.TypeMeta)
	}
	want := kustomizev1.KustomizationSpec{
		SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "core-cluster-api"},
		Path:            "./",
		Prune:           true,
		Wait:            true,
		Interval:        metav1.Duration{Duration: 10 * time.Minute},
		RetryInterval:   &metav1.Duration{Duration: time.Minute},
		Timeout:         &metav1.Duration{Duration: 5 * time.Minute},
		TargetNamespace: "capi-system",
		DeletionPolicy:  kustomizev1.DeletionPolicyMirrorPrune,
		PostBuild:       &kustomizev1.PostBuild{SubstituteStrategy: kustomizev1.SubstituteStrategyAlways},
		CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{
			"cluster.x-k8s.io/provider": "cluster-api", "clusterctl.cluster.x-k8s.io": ""}},
		Patches: []kustomize.Patch{
			{
				Patch: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: not-used\n  annotations:\n" +
					"    kustomize.toolkit.fluxcd.io/prune: disabled\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n",
				Target: &kustomize.Selector{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
			},
			keepOnPrune("", "v1", "Namespace"),
		},
		ServiceAccountName: "core-cluster-api-installer",
	}
	if !reflect.DeepEqual(ks.Spec, want) {
		got, _ := yaml.Marshal(ks.Spec)
		exp, _ := yaml.Marshal(want)
		t.Errorf("Kustomization spec:\n%s\nwant:\n%s", got, exp)
	}
}

func bootstrapProvider() *v1alpha1.BootstrapProvider {
	replicas, verbosity := int32(2), int32(4)
	return &v1alpha1.BootstrapProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeadm-bootstrap", Name: "kubeadm", UID: "9d2e-bootstrap"},
		Spec: v1alpha1.ProviderSpec{
			Version:      capiVersion,
			ConfigSecret: &v1alpha1.SecretReference{Name: "kubeadm-vars"},
			Variables:    map[string]string{"KUBEADM_BOOTSTRAP_TOKEN_TTL": "30m"},
			Manager: &v1alpha1.ManagerSpec{
				FeatureGates:   map[string]bool{"MachinePool": false, "KubeadmBootstrapFormatIgnition": true, "NewGate": true},
				Verbosity:      &verbosity,
				SyncPeriod:     &metav1.Duration{Duration: 5 * time.Minute},
				AdditionalArgs: map[string]string{"--kubeadmconfig-concurrency": "20", "leader-elect": "false"},
			},
			Deployment: &v1alpha1.DeploymentSpec{
				Replicas:     &replicas,
				NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations:  []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []v1alpha1.ContainerSpec{{
					Name:     "manager",
					ImageURL: "mirror.example.com/kubeadm-bootstrap-controller:v1.14.2",
					Env: []corev1.EnvVar{
						{Name: "POD_NAMESPACE", Value: "pinned"},
						{Name: "HTTPS_PROXY", Value: "http://proxy:3128"},
						// A different value source than the components' fieldRef.
						{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "uid"}, Key: "uid"}}},
					},
					Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
				}},
			},
			Images: []kustomize.Image{{Name: "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller", NewTag: "v1.14.2-hotfix"}},
			Patches: []kustomize.Patch{{
				Patch:  `[{"op": "add", "path": "/metadata/annotations", "value": {"example.com/team": "platform"}}]`,
				Target: &kustomize.Selector{Kind: "Service"},
			}},
			DependsOn: []v1alpha1.DependencyReference{
				{Kind: "HelmRelease", Name: "cert-manager", Namespace: "cert-manager"},
				{Name: "cluster-addons"},
			},
		},
	}
}

// bootstrapInput is what the controller passes for bootstrapProvider, with
// a mirror rule for the same image the spec overrides and one for another.
func bootstrapInput(t *testing.T) Input {
	in := inputFor(t, bootstrapProvider())
	in.CoreDependency = &meta.NamespacedObjectReference{Namespace: "capi-system", Name: "core-cluster-api"}
	in.MirrorImages = []kustomize.Image{
		{Name: "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller", NewName: "mirror.example.com/kubeadm-bootstrap-controller"},
		{Name: "gcr.io/kubebuilder/kube-rbac-proxy", NewName: "mirror.example.com/kube-rbac-proxy"},
	}
	// Stands for clusterctl's namespace fixes: render passes them through,
	// first.
	in.NamespacePatches = []kustomize.Patch{{
		Patch:  `[{"op": "replace", "path": "/subjects/0/namespace", "value": "kubeadm-bootstrap"}]`,
		Target: &kustomize.Selector{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Name: "capi-kubeadm-bootstrap-manager-rolebinding"},
	}}
	return in
}

func TestBootstrapProviderSettings(t *testing.T) {
	in := bootstrapInput(t)
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	ks := out.Kustomization
	if ks.Labels[v1alpha1.ProviderKindLabel] != "BootstrapProvider" || ks.OwnerReferences[0].Kind != "BootstrapProvider" {
		t.Errorf("kind = %s / %s, want BootstrapProvider", ks.Labels[v1alpha1.ProviderKindLabel], ks.OwnerReferences[0].Kind)
	}
	wantPostBuild := &kustomizev1.PostBuild{
		SubstituteStrategy: kustomizev1.SubstituteStrategyAlways,
		Substitute:         map[string]string{"KUBEADM_BOOTSTRAP_TOKEN_TTL": "30m"},
		SubstituteFrom:     []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "kubeadm-vars"}},
	}
	if !reflect.DeepEqual(ks.Spec.PostBuild, wantPostBuild) {
		t.Errorf("postBuild = %+v, want %+v", ks.Spec.PostBuild, wantPostBuild)
	}
	wantDeps := []kustomizev1.DependencyReference{
		{Namespace: "capi-system", Name: "core-cluster-api"},
		{Namespace: "kubeadm-bootstrap", Name: "cluster-addons"},
	}
	if !reflect.DeepEqual(ks.Spec.DependsOn, wantDeps) {
		t.Errorf("dependsOn = %+v, want the core provider and the Kustomization dependency (HelmReleases are the controller's to wait for)", ks.Spec.DependsOn)
	}
	wantImages := []kustomize.Image{
		{Name: "gcr.io/kubebuilder/kube-rbac-proxy", NewName: "mirror.example.com/kube-rbac-proxy"},
		{Name: "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller", NewTag: "v1.14.2-hotfix"},
	}
	if !reflect.DeepEqual(ks.Spec.Images, wantImages) {
		t.Errorf("images = %+v, want mirror rules then spec.images, spec winning for the same name", ks.Spec.Images)
	}
	if got := ks.Spec.CommonMetadata.Labels["cluster.x-k8s.io/provider"]; got != "bootstrap-kubeadm" {
		t.Errorf("provider label = %q", got)
	}

	patches := ks.Spec.Patches
	if len(patches) != 5 {
		t.Fatalf("%d patches, want namespace fix, CRD and Namespace protection, workload, user patch", len(patches))
	}
	if !reflect.DeepEqual(patches[0], in.NamespacePatches[0]) || patches[1].Target.Kind != "CustomResourceDefinition" ||
		patches[2].Target.Kind != "Namespace" || !reflect.DeepEqual(patches[4], bootstrapProvider().Spec.Patches[0]) {
		t.Errorf("patch order: namespace fixes, prune protection, workload, spec.patches; got %+v", patches)
	}
	workload := patches[3]
	wantTarget := kustomize.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "capi-kubeadm-bootstrap-controller-manager"}
	if *workload.Target != wantTarget {
		t.Errorf("workload patch target = %+v, want the manager Deployment by name", *workload.Target)
	}
	var dep struct {
		Spec struct {
			Replicas int32 `json:"replicas"`
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(workload.Patch), &dep); err != nil {
		t.Fatalf("workload patch is not a Deployment: %v\n%s", err, workload.Patch)
	}
	wantArgs := []string{
		"--leader-elect=false",
		"--diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}",
		"--insecure-diagnostics=${CAPI_INSECURE_DIAGNOSTICS:=false}",
		"--feature-gates=MachinePool=false,KubeadmBootstrapFormatIgnition=true,PriorityQueue=${EXP_PRIORITY_QUEUE:=true},ReconcilerRateLimiting=${EXP_RECONCILER_RATE_LIMITING:=true},NewGate=true",
		"--bootstrap-token-ttl=${KUBEADM_BOOTSTRAP_TOKEN_TTL:=15m}",
		"--kubeadmconfig-concurrency=20",
		"--sync-period=5m0s",
		"--v=4",
	}
	containers := dep.Spec.Template.Spec.Containers
	if len(containers) != 1 || !reflect.DeepEqual(containers[0].Args, wantArgs) {
		t.Errorf("manager args =\n%s\nwant\n%s", strings.Join(containers[0].Args, "\n"), strings.Join(wantArgs, "\n"))
	}
	if dep.Spec.Replicas != 2 || containers[0].Image != "mirror.example.com/kubeadm-bootstrap-controller:v1.14.2" ||
		containers[0].Resources.Limits.Memory().String() != "512Mi" || len(dep.Spec.Template.Spec.Tolerations) != 1 {
		t.Errorf("workload patch:\n%s", workload.Patch)
	}
	if strings.Contains(workload.Patch, "creationTimestamp") || strings.Contains(workload.Patch, "status") || strings.Contains(workload.Patch, "{}") {
		t.Errorf("the patch must hold only what the spec sets; empty fields would be merged in:\n%s", workload.Patch)
	}
}

func TestWorkloadPatchTargetsByLabelWithoutDeploymentName(t *testing.T) {
	p := coreProvider()
	p.Spec.Deployment = &v1alpha1.DeploymentSpec{ServiceAccountName: "capi-manager-custom"}
	in := inputFor(t, p)
	in.ManagerDeployment = ""
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	target := out.Kustomization.Spec.Patches[2].Target
	if target.Name != "" || target.LabelSelector != "cluster.x-k8s.io/provider=cluster-api" {
		t.Errorf("target = %+v, want the provider label the components carry", target)
	}
	if strings.Contains(out.Kustomization.Spec.Patches[2].Patch, "containers") {
		t.Errorf("no container setting, so no container entry:\n%s", out.Kustomization.Spec.Patches[2].Patch)
	}
}

func TestSourceAccessAndSchedule(t *testing.T) {
	p := coreProvider()
	p.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	p.Spec.Timeout = &metav1.Duration{Duration: 15 * time.Minute}
	p.Spec.Suspend = true
	p.Spec.Source = &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{
		URL:           "oci://ghcr.io/example/cluster-api/manifests/core-cluster-api",
		SecretRef:     &meta.LocalObjectReference{Name: "ghcr-pull"},
		CertSecretRef: &meta.LocalObjectReference{Name: "ghcr-ca"},
		Insecure:      true,
		Verify: &v1alpha1.OCIVerification{
			SecretRef:         &meta.LocalObjectReference{Name: "cosign-keys"},
			MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/kubernetes-sigs/cluster-api.*$"}},
		},
	}}}
	in := inputFor(t, p)
	in.ArtifactURL = p.Spec.Source.OCI.URL
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	repo, ks := out.OCIRepository.Spec, out.Kustomization.Spec
	if repo.SecretRef.Name != "ghcr-pull" || repo.CertSecretRef.Name != "ghcr-ca" || !repo.Insecure {
		t.Errorf("registry access = %+v", repo)
	}
	if v := repo.Verify; v == nil || v.Provider != "cosign" || v.SecretRef.Name != "cosign-keys" || len(v.MatchOIDCIdentity) != 1 ||
		v.MatchOIDCIdentity[0].Subject != "^https://github.com/kubernetes-sigs/cluster-api.*$" {
		t.Errorf("verify = %+v, want cosign (the API default) with the key Secret and identity", v)
	}
	if repo.Interval.Duration != time.Hour || ks.Interval.Duration != time.Hour || ks.Timeout.Duration != 15*time.Minute {
		t.Errorf("interval/timeout not taken from the spec: %v %v %v", repo.Interval, ks.Interval, ks.Timeout)
	}
	if ks.RetryInterval == nil || ks.RetryInterval.Duration != time.Minute {
		t.Errorf("retryInterval = %v, want 1m: a failed apply is tried again within a minute, not an hour", ks.RetryInterval)
	}
	if !repo.Suspend || !ks.Suspend {
		t.Errorf("spec.suspend must suspend both objects")
	}
}

func TestRenderedObjectsDoNotAliasTheProvider(t *testing.T) {
	in := bootstrapInput(t)
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	out.Kustomization.Spec.PostBuild.Substitute["KUBEADM_BOOTSTRAP_TOKEN_TTL"] = "changed"
	out.Kustomization.Spec.Patches[4].Target.Kind = "changed"
	out.Kustomization.Spec.Patches[0].Target.Kind = "changed"
	p := in.Provider.GetSpec()
	if p.Variables["KUBEADM_BOOTSTRAP_TOKEN_TTL"] != "30m" || p.Patches[0].Target.Kind != "Service" || in.NamespacePatches[0].Target.Kind != "ClusterRoleBinding" {
		t.Errorf("changing a rendered object changed the provider or the input")
	}
}
