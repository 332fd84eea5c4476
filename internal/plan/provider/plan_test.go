package provider

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden Flux objects under testdata/")

const (
	digest   = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	registry = "registry.example.com/capwright/manifests"
)

// checked is the real Cluster API release's artifact for a provider type,
// checked, as the controller's cache holds it.
func release(t testing.TB, providerType, namespace, version string) *CheckedArtifact {
	t.Helper()
	file := providerType + "-components.yaml"
	return NewCheckedArtifact(&artifact.ProviderArtifact{
		Metadata:       clusterctltest.Read(t, clusterctltest.Current, "metadata.yaml"),
		Components:     clusterctltest.Read(t, clusterctltest.Current, file),
		ComponentsFile: file,
	}, namespace, version)
}

func core(mutate ...func(*v1alpha1.CoreProvider)) *v1alpha1.CoreProvider {
	p := &v1alpha1.CoreProvider{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "CoreProvider"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "core-uid", Generation: 1},
		Spec: v1alpha1.ProviderSpec{Version: clusterctltest.Current,
			Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://" + registry + "/core-cluster-api"}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func bootstrap(mutate ...func(*v1alpha1.BootstrapProvider)) *v1alpha1.BootstrapProvider {
	p := &v1alpha1.BootstrapProvider{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "BootstrapProvider"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm", UID: "bootstrap-uid", Generation: 1},
		Spec: v1alpha1.ProviderSpec{Version: clusterctltest.Current,
			Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://" + registry + "/bootstrap-kubeadm"}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// factsOf are the facts the controller gathers for a provider whose
// artifact is the real release, everything passing.
func factsOf(t testing.TB, p v1alpha1.Provider) Facts {
	t.Helper()
	url := p.GetSpec().Source.OCI.URL
	f := Facts{
		Provider: p, Kind: p.GetObjectKind().GroupVersionKind().Kind, Resync: 10 * time.Minute, ArtifactStorage: true,
		Artifact: Artifact{URL: url, Tag: p.GetSpec().Version, Digest: digest, Revision: p.GetSpec().Version + "@" + digest,
			Checked: release(t, p.ProviderType(), p.GetNamespace(), p.GetSpec().Version)},
	}
	if p.ProviderType() != v1alpha1.CoreProviderType {
		f.Core = Core{Found: true, Namespace: "capi-system", Name: "cluster-api", Version: clusterctltest.Current, Contract: "v1beta2", Known: true}
	}
	return f
}

func chart(mutate ...func(*v1alpha1.CoreProvider)) *v1alpha1.CoreProvider {
	p := core(mutate...)
	p.Spec.Source = &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://" + registry + "/charts/cluster-api"},
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}}}
	return p
}

// TestPlanGoldenFluxObjects: for every provider option, the objects the
// plan writes, in order, are the golden ones under testdata/ (go test
// -update rewrites them).
func TestPlanGoldenFluxObjects(t *testing.T) {
	for _, tt := range []struct {
		name  string
		facts func(t testing.TB) Facts
	}{
		{"core", func(t testing.TB) Facts { return factsOf(t, core()) }},
		{"digest-pin", func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.Spec.Source.OCI.Digest = digest }))
		}},
		{"variables-and-config-secret", func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Variables = map[string]string{"EXP_MACHINE_POOL": "true"}
				p.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "capi-variables"}
			}))
			f.ConfigSecretKeys = []string{"CLUSTER_TOPOLOGY"}
			return f
		}},
		{"images", func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/cluster-api-controller", NewTag: "v1.14.2-patched"}}
			}))
		}},
		{"mirrors", func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Mirrors = catalog.Mirrors{{From: "registry.k8s.io", To: "mirror.example.com:5000/k8s"}}
			return f
		}},
		{"insecure-registry", func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.InsecureRegistries = []string{"registry.example.com"}
			return f
		}},
		{"manager-and-deployment", func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Manager = &v1alpha1.ManagerSpec{FeatureGates: map[string]bool{"MachinePool": true}, Verbosity: ptr.To[int32](4)}
				p.Spec.Deployment = &v1alpha1.DeploymentSpec{Replicas: ptr.To[int32](2), NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""},
					Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}}
			}))
		}},
		{"patches", func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Patches = []kustomize.Patch{{Patch: `[{"op":"add","path":"/metadata/labels/team","value":"platform"}]`,
					Target: &kustomize.Selector{Kind: "Deployment", Name: "capi-controller-manager"}}}
			}))
		}},
		{"additional-manifests", func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
			}))
			f.AdditionalManifests = []byte("packed")
			return f
		}},
		{"depends-on", func(t testing.TB) Facts {
			f := factsOf(t, bootstrap(func(p *v1alpha1.BootstrapProvider) {
				p.Spec.DependsOn = []v1alpha1.DependencyReference{{Kind: "HelmRelease", Name: "cert-manager", Namespace: "cert-manager"}, {Name: "platform"}}
			}))
			f.Dependencies = []Dependency{{Kind: "HelmRelease", Namespace: "cert-manager", Name: "cert-manager", Ready: true}, {Kind: "Kustomization", Namespace: "capi-kubeadm-bootstrap-system", Name: "platform", Ready: true}}
			return f
		}},
		{"interval-and-timeout", func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Interval, p.Spec.Timeout = &metav1.Duration{Duration: time.Hour}, &metav1.Duration{Duration: 15 * time.Minute}
			}))
		}},
		{"non-core", func(t testing.TB) Facts { return factsOf(t, bootstrap()) }},
		{"chart", func(t testing.TB) Facts {
			p := chart()
			return Facts{Provider: p, Kind: "CoreProvider", Resync: 10 * time.Minute,
				Artifact: Artifact{URL: p.Spec.Source.Chart.URL, Tag: p.Spec.Version, Digest: digest, Revision: p.Spec.Version + "@" + digest}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.facts(t)
			d, err := Plan(f)
			if err != nil {
				t.Fatalf("Plan refused: %v", err)
			}
			if !d.Passed || d.Status.Artifact == nil || d.Status.Artifact.Digest != digest {
				t.Errorf("status after the checks passed = %+v", d.Status)
			}
			layout := "follows the provider-artifact layout"
			if tt.name == "chart" {
				layout = "a Helm chart"
			}
			if msg := d.Status.ArtifactResolved.Message; !strings.Contains(msg, layout) {
				t.Errorf("ArtifactResolved %q, want %q in it", msg, layout)
			}
			var out []string
			for _, w := range d.Sync.Writes {
				data, err := yaml.Marshal(w.Object)
				if err != nil {
					t.Fatal(err)
				}
				head := "# " + plan.KindOf(w.Object)
				if w.Uncached {
					head += " (uncached)"
				}
				if w.Request {
					head += " (passes reconcile requests on)"
				}
				if w.Artifact != nil {
					head += " (stores " + string(w.Artifact.Data) + " of " + w.Artifact.Of + ")"
				}
				out = append(out, head+"\n"+string(data))
			}
			golden(t, filepath.Join("testdata", tt.name+".yaml"), strings.Join(out, "---\n"))
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test ./internal/plan/provider -update", err)
	}
	if string(want) != got {
		t.Errorf("the Flux objects differ from %s (go test -update rewrites it); got:\n%s", path, got)
	}
}

// TestPlanRefusals: each check refuses with its condition, reason and
// retry, as the controller's e2e suites see it; nothing is written, and
// the status values set before the check stay.
func TestPlanRefusals(t *testing.T) {
	installedDigest := "sha256:" + strings.Repeat("f", 64)
	for _, tt := range []struct {
		name  string
		facts func(t testing.TB) Facts
		// want is the refusal; resolved whether ArtifactResolved was set
		// True before it.
		cond, reason string
		status       metav1.ConditionStatus
		stalls       bool
		retry        time.Duration
		message      string
		resolved     bool
	}{
		{name: "registry refused", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Refusal = Refusal(v1alpha1.ArtifactResolvedCondition, v1alpha1.AuthenticationFailedReason, "denied", 0)
			return f
		}, cond: v1alpha1.ArtifactResolvedCondition, reason: v1alpha1.AuthenticationFailedReason, status: metav1.ConditionFalse, retry: time.Minute, message: "denied"},
		// A spec Flux would take and fail on is refused first, also when
		// the registry refused too (the spec is what to fix).
		{name: "keyless identity that is no regular expression", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Source.OCI.Verify = &v1alpha1.OCIVerification{MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{
					{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/kubernetes-sigs/cluster-api/.*$"},
					{Issuer: "https://accounts.google.com", Subject: "*@example.com"}}}
			}))
			f.Refusal = Refusal(v1alpha1.ArtifactResolvedCondition, v1alpha1.AuthenticationFailedReason, "denied", 0)
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.InvalidSpecReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "CoreProvider capi-system/cluster-api: spec.source.oci.verify.matchOIDCIdentity[1].subject is not a regular expression (error parsing regexp: missing argument to repetition operator: `*`): Flux matches it as a Go regular expression"},
		{name: "keyless identity of a chart", facts: func(t testing.TB) Facts {
			p := chart(func(p *v1alpha1.CoreProvider) {})
			p.Spec.Source.Chart.Verify = &v1alpha1.OCIVerification{MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{{Issuer: "(", Subject: ".*"}}}
			return Facts{Provider: p, Kind: "CoreProvider", Resync: 10 * time.Minute}
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.InvalidSpecReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "spec.source.chart.verify.matchOIDCIdentity[0].issuer is not a regular expression"},
		{name: "image digest no Pod can pull", facts: func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/cluster-api-controller", Digest: "0123abcd"}}
			}))
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.InvalidSpecReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: `spec.images[0].digest: "0123abcd" is not an image digest`},
		{name: "image tag no Pod can pull", facts: func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/cluster-api-controller", NewTag: "v1.14.2:patched"}}
			}))
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.InvalidSpecReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: `spec.images[0].newTag: "v1.14.2:patched" is not an image tag`},
		{name: "tag moved", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Provider.GetStatus().Artifact = &v1alpha1.ResolvedArtifact{URL: f.Artifact.URL, Revision: clusterctltest.Current + "@" + installedDigest, Digest: installedDigest}
			return f
		}, cond: v1alpha1.ArtifactResolvedCondition, reason: v1alpha1.TagMovedReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "tag v1.14.2 of " + registry + "/core-cluster-api now points to " + digest + ", but " + installedDigest + " was checked and installed for this version; it stays installed. If the new content is intended, pin it with spec.source.oci.digest: " + digest},
		{name: "contract unknown", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.Spec.Version = "v9.0.0" }))
			f.Artifact.Tag, f.Artifact.Revision = "v9.0.0", "v9.0.0@"+digest
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.ContractUnknownReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "metadata.yaml of v9.0.0@" + digest, resolved: true},
		{name: "downgrade", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Provider.GetStatus().InstalledVersion = "v1.15.0"
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.DowngradeReason, status: metav1.ConditionFalse, stalls: true, retry: 10 * time.Minute, resolved: true},
		{name: "downgrade recorded by clusterctl", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-system", Version: "v1.15.0", By: ByClusterctl, Record: "clusterctl's inventory Provider capi-system/cluster-api"}}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.DowngradeReason, status: metav1.ConditionFalse, stalls: true, retry: 10 * time.Minute,
			message: "(v1.15.0 is what clusterctl's inventory Provider capi-system/cluster-api records as installed; status.installedVersion is empty)", resolved: true},
		{name: "inventory unreadable", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.InstallationsError = "forbidden"
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.ReconcilingReason, status: metav1.ConditionUnknown, retry: 30 * time.Second,
			message: "cannot read what clusterctl or cluster-api-operator installed of cluster-api before its first install, to check for an installation in another namespace and for a downgrade: forbidden", resolved: true},
		{name: "duplicate", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.CreationTimestamp = metav1.NewTime(time.Unix(200, 0)) }))
			f.Others = []v1alpha1.Provider{core(func(p *v1alpha1.CoreProvider) {
				p.Namespace, p.UID, p.CreationTimestamp = "other", "other-uid", metav1.NewTime(time.Unix(100, 0))
			})}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.DuplicateProviderReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: `CoreProvider other/cluster-api already manages the core provider "cluster-api"; a cluster runs each provider once: delete this one or that one`, resolved: true},
		{name: "no core provider", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Core = Core{}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.WaitingForCoreReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "waiting for the core provider: create a CoreProvider named cluster-api", resolved: true},
		{name: "core contract not known", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Core.Known = false
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.WaitingForCoreReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "waiting for CoreProvider capi-system/cluster-api to pass its preflight, which reads its contract", resolved: true},
		{name: "incompatible contract", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Core.Contract = "v1alpha4"
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.IncompatibleContractReason, status: metav1.ConditionFalse, stalls: true, retry: 10 * time.Minute,
			message: "kubeadm v1.14.2 has contract v1beta2, CoreProvider capi-system/cluster-api v1.14.2 has v1alpha4", resolved: true},
		{name: "config secret in another namespace", facts: func(t testing.TB) Facts {
			return factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "vars", Namespace: "elsewhere"}
			}))
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.ConfigSecretNotAllowedReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute, resolved: true},
		{name: "config secret missing", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "vars"} }))
			f.ConfigSecretError = "spec.configSecret: Secret capi-system/vars does not exist"
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.ConfigSecretMissingReason, status: metav1.ConditionFalse, stalls: true, retry: 30 * time.Second,
			message: "spec.configSecret: Secret capi-system/vars does not exist", resolved: true},
		{name: "missing variables", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Artifact.Checked = NewCheckedArtifact(&artifact.ProviderArtifact{Metadata: clusterctltest.Read(t, clusterctltest.Current, "metadata.yaml"),
				Components: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: ${NEEDED}\n  b: ${ALSO_NEEDED}\n"), ComponentsFile: "bootstrap-components.yaml"}, "capi-kubeadm-bootstrap-system", f.Provider.GetSpec().Version)
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.MissingVariablesReason, status: metav1.ConditionFalse, stalls: true, retry: 30 * time.Second,
			message: "bootstrap-components.yaml of kubeadm v1.14.2 uses variables with no value and no default: ALSO_NEEDED, NEEDED; set them in spec.variables or in the spec.configSecret Secret", resolved: true},
		{name: "additional manifests without storage", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
			}))
			f.ArtifactStorage = false
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.AdditionalManifestsInvalidReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: NoArtifactStorage, resolved: true},
		{name: "additional manifests do not pack", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
			}))
			f.AdditionalManifestsError = "ConfigMap capi-system/extra (spec.additionalManifests) does not exist"
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.AdditionalManifestsInvalidReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "ConfigMap capi-system/extra (spec.additionalManifests) does not exist", resolved: true},
		{name: "dependency not ready", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
				p.Spec.DependsOn = []v1alpha1.DependencyReference{{Kind: "HelmRelease", Name: "cert-manager", Namespace: "cert-manager"}}
			}))
			f.Dependencies = []Dependency{{Kind: "HelmRelease", Namespace: "cert-manager", Name: "cert-manager", Message: "install retries exhausted"}}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.WaitingForDependencyReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "waiting for HelmRelease cert-manager/cert-manager (spec.dependsOn): install retries exhausted", resolved: true},
		{name: "cert-manager missing", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.MissingKinds = []schema.GroupVersionKind{{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}, {Group: "cert-manager.io", Version: "v1", Kind: "Issuer"}}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.MissingAPIReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "cluster-api v1.14.2 holds Certificate, Issuer of cert-manager.io/v1, which the cluster does not serve: install cert-manager first (its CRDs serve cert-manager.io/v1; clusterctl init would install it), and name its HelmRelease or Kustomization in spec.dependsOn so that the provider waits for it; nothing is applied until the cluster serves them", resolved: true},
		{name: "another API missing", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.MissingKinds = []schema.GroupVersionKind{{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}}
			return f
		}, cond: v1alpha1.CompatibleCondition, reason: v1alpha1.MissingAPIReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "kubeadm v1.14.2 holds ServiceMonitor of monitoring.coreos.com/v1, which the cluster does not serve: install what serves them first, and name its Flux object in spec.dependsOn", resolved: true},
		{name: "spec that cannot render", facts: func(t testing.TB) Facts {
			p := chart(func(p *v1alpha1.CoreProvider) { p.Spec.Manager = &v1alpha1.ManagerSpec{Verbosity: ptr.To[int32](4)} })
			return Facts{Provider: p, Kind: "CoreProvider", Resync: 10 * time.Minute,
				Artifact: Artifact{URL: "oci://" + registry + "/charts/cluster-api", Tag: p.Spec.Version, Digest: digest, Revision: p.Spec.Version + "@" + digest}}
		}, cond: v1alpha1.InstalledCondition, reason: v1alpha1.InstallFailedReason, status: metav1.ConditionFalse, stalls: true, retry: 10 * time.Minute,
			message: "rendering the Flux objects of CoreProvider capi-system/cluster-api: spec.manager: manager flags", resolved: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Plan(tt.facts(t))
			r, ok := plan.AsRefusal(err)
			if !ok {
				t.Fatalf("Plan = %v, want a refusal", err)
			}
			if r.Condition != tt.cond || r.Reason != tt.reason || r.Status != tt.status || r.Stalls != tt.stalls || r.RetryAfter != tt.retry {
				t.Errorf("refusal = %s %s %s stalls=%v retry=%s, want %s %s %s stalls=%v retry=%s",
					r.Condition, r.Status, r.Reason, r.Stalls, r.RetryAfter, tt.cond, tt.status, tt.reason, tt.stalls, tt.retry)
			}
			if !strings.Contains(r.Message, tt.message) {
				t.Errorf("message %q does not say %q", r.Message, tt.message)
			}
			if len(d.Sync.Writes) > 0 || len(d.Sync.Prune) > 0 || (d.Passed && tt.reason != v1alpha1.InstallFailedReason) {
				t.Errorf("a refused plan writes %d objects, prunes %d (passed %v)", len(d.Sync.Writes), len(d.Sync.Prune), d.Passed)
			}
			if len(d.Sync.Observe) == 0 {
				t.Error("a refused plan observes nothing: the fold would see every Flux object missing")
			}
			if resolved := d.Status.ArtifactResolved != nil && d.Status.ArtifactResolved.Status == metav1.ConditionTrue; resolved != tt.resolved {
				t.Errorf("ArtifactResolved set True before the refusal: %v, want %v", resolved, tt.resolved)
			}
			if tt.reason != v1alpha1.InstallFailedReason && d.Status.Artifact != nil {
				t.Errorf("status.artifact set by a refused plan: %+v", d.Status.Artifact)
			}
		})
	}
}

// TestPlanWithoutChecks: a suspended provider plans nothing but the
// objects to observe; one whose checked artifact is not at hand while
// the registry is down keeps its Flux objects as they are.
func TestPlanWithoutChecks(t *testing.T) {
	d, err := Plan(factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.Spec.Suspend = true })))
	if err != nil || !d.Suspend || len(d.Sync.Writes) > 0 || len(d.Sync.Observe) != 2 {
		t.Errorf("suspended: %+v, %v", d, err)
	}
	f := factsOf(t, core())
	f.Artifact = Artifact{URL: f.Artifact.URL, Tag: f.Artifact.Tag, Digest: digest, Revision: f.Artifact.Revision, Keep: true, Unreachable: "cannot reach the registry"}
	d, err = Plan(f)
	if err != nil || !d.Keep || d.Passed || len(d.Sync.Writes) > 0 || d.Status.Compatible != nil ||
		d.Status.ArtifactResolved.Reason != v1alpha1.RegistryUnreachableReason || d.Status.LastAttemptedRevision != f.Artifact.Revision {
		t.Errorf("kept: %+v, %v", d, err)
	}
	if src, more := Ahead(f); src != nil || more {
		t.Errorf("a kept provider fetches ahead (%v) or reads more (%v)", src != nil, more)
	}
}

// TestAheadIsTheSourceThePlanWrites: the OCIRepository written ahead of
// the slow checks is the one the plan writes once they pass, so that
// write finds it unchanged; a quick refusal writes nothing ahead.
func TestAheadIsTheSourceThePlanWrites(t *testing.T) {
	f := factsOf(t, bootstrap())
	src, more := Ahead(f)
	if src == nil || !more {
		t.Fatalf("Ahead = %v, %v", src, more)
	}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	var written *sourcev1.OCIRepository
	for _, w := range d.Sync.Writes {
		if o, ok := w.Object.(*sourcev1.OCIRepository); ok {
			written = o
		}
	}
	a, _ := plan.AsApplied(src, plan.HashAnnotation)
	b, _ := plan.AsApplied(written, plan.HashAnnotation)
	if a.GetAnnotations()[plan.HashAnnotation] != b.GetAnnotations()[plan.HashAnnotation] {
		t.Errorf("the source written ahead differs from the one the plan writes")
	}
	f.Provider.GetStatus().InstalledVersion = "v1.15.0"
	if src, more := Ahead(f); src != nil || more {
		t.Errorf("a downgrade fetches ahead (%v) or reads more (%v)", src != nil, more)
	}
}

// TestPlanPrunesAdditionalManifestsNoLongerWanted: the objects of
// additional manifests the provider stopped asking for are pruned, after
// the writes, unless an object in the way stopped them.
func TestPlanPrunesAdditionalManifestsNoLongerWanted(t *testing.T) {
	f := factsOf(t, core())
	m := metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-additional", UID: "ks-uid"}
	f.AdditionalLeft = []AdditionalObject{&kustomizev1.Kustomization{ObjectMeta: m}, &sourcev1.ExternalArtifact{ObjectMeta: m}}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sync.Prune) != 2 || d.Additional || len(d.Sync.PruneNeeds) != 1 || d.Sync.PruneNeeds[0] != Group {
		t.Errorf("prune %d objects (needs %v), additional served %v", len(d.Sync.Prune), d.Sync.PruneNeeds, d.Additional)
	}
}

// TestNudges: a Kustomization waiting for dependencies that are Ready now
// is asked to retry, with a token naming their latest Ready transition
// (so once per transition), and never while one is not Ready, nor when
// the provider does not control it.
func TestNudges(t *testing.T) {
	p := core()
	controller := true
	readyAt := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	dep := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api", Generation: 2},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: 2, LastTransitionTime: readyAt}}}}
	waiting := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-additional", Generation: 1,
		OwnerReferences: []metav1.OwnerReference{{UID: "core-uid", Controller: &controller, Name: "cluster-api", Kind: "CoreProvider", APIVersion: "providers.capwright.io/v1alpha1"}}},
		Spec: kustomizev1.KustomizationSpec{DependsOn: []kustomizev1.DependencyReference{{Name: "core-cluster-api"}}},
		Status: kustomizev1.KustomizationStatus{Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: meta.DependencyNotReadyReason, Message: "Dependencies do not meet ready condition, retrying in 30s", ObservedGeneration: 1}}}}
	observed := func() plan.Observed {
		return plan.Observed{
			plan.ObservedKey("Kustomization", "capi-system", dep.Name):     dep.DeepCopy(),
			plan.ObservedKey("Kustomization", "capi-system", waiting.Name): waiting.DeepCopy(),
		}
	}
	if n := nudges(p)(observed()); len(n) != 0 {
		t.Fatalf("dependency not Ready: %d nudges, want none", len(n))
	}
	dep.Status.Conditions[0].Status, dep.Status.Conditions[0].Reason = metav1.ConditionTrue, "ReconciliationSucceeded"
	for range 2 {
		n := nudges(p)(observed())
		if len(n) != 1 || n[0].Object.GetName() != waiting.Name || n[0].Token != "2026-11-23T12:00:00Z" {
			t.Fatalf("after the dependency turned Ready: %+v; want one request naming the transition", n)
		}
	}
	// Flux handled that request while the dependency ran once more and
	// turned Ready again within the same second: asked again, once per
	// state of the dependency.
	waiting.Status.LastHandledReconcileAt = "2026-11-23T12:00:00Z"
	dep.ResourceVersion = "42"
	for range 2 {
		if n := nudges(p)(observed()); len(n) != 1 || n[0].Token != "2026-11-23T12:00:00Z/42" {
			t.Fatalf("after a request Flux handled too early: %+v; want one naming the dependency's state", n)
		}
	}
	waiting.Status.LastHandledReconcileAt = "2026-11-23T12:00:00Z/42"
	if n := nudges(p)(observed()); len(n) != 1 || n[0].Token != "2026-11-23T12:00:00Z/42" {
		t.Fatalf("the dependency unchanged since: %+v; want the same token (no new request)", n)
	}
	other := core(func(p *v1alpha1.CoreProvider) { p.UID = "someone-else" })
	if n := nudges(other)(observed()); len(n) != 0 {
		t.Errorf("a Kustomization the provider does not control was nudged: %+v", n)
	}
}

// TestNeededKindsOfARealRelease: the kinds Cluster API's core components
// apply without defining them are Kubernetes' own and cert-manager's
// Certificate and Issuer, which the cluster must serve first; the kinds
// of their own CRDs are not among them.
func TestNeededKindsOfARealRelease(t *testing.T) {
	needs, err := release(t, v1alpha1.CoreProviderType, "capi-system", clusterctltest.Current).NeededKinds()
	if err != nil {
		t.Fatal(err)
	}
	var certManager []string
	for _, k := range needs {
		switch k.Group {
		case CertManagerGroup:
			certManager = append(certManager, k.Kind+"."+k.Version)
		case "cluster.x-k8s.io", "addons.cluster.x-k8s.io":
			t.Errorf("%s is defined by the components' own CRDs, not needed from the cluster", k)
		}
	}
	if strings.Join(certManager, ",") != "Certificate.v1,Issuer.v1" {
		t.Errorf("cert-manager kinds needed: %v, want Certificate and Issuer of v1 (all needed: %v)", certManager, needs)
	}
}

// TestAheadRefusesASpecFluxWouldFailOn: a source is not fetched ahead
// for a spec the plan refuses (InvalidSpec), so nothing at all is
// written for it.
func TestAheadRefusesASpecFluxWouldFailOn(t *testing.T) {
	f := factsOf(t, core(func(p *v1alpha1.CoreProvider) {
		p.Spec.Source.OCI.Verify = &v1alpha1.OCIVerification{MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{{Issuer: ".*", Subject: "*@example.com"}}}
	}))
	if repo, more := Ahead(f); repo != nil || more {
		t.Errorf("Ahead = %v, %v for a spec the plan refuses; want nothing fetched ahead", repo, more)
	}
	if repo, _ := Ahead(factsOf(t, core())); repo == nil {
		t.Error("Ahead wrote nothing for a spec that passes: the test proves nothing")
	}
}
