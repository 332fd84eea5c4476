package convert

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"
	corev1 "k8s.io/api/core/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/convert/converttest"
)

// exampleCheck asserts what one of the operator's documented CRs becomes.
type exampleCheck func(t *testing.T, c Converted)

// The operator's docs/README.md repeats the book's examples; its blocks
// get the book's checks.
var (
	checkCoreV143 = all(kindName("CoreProvider", "capi-system", "cluster-api"), version("v1.4.3"), catalogSource, noFindings)

	checkCoreWithoutVersion = all(kindName("CoreProvider", "capi-system", "cluster-api"), version(""), catalogSource,
		attention("spec.version", "set spec.version to the version running"))

	checkAWSQuickStart = all(kindName("InfrastructureProvider", "capa-system", "aws"), version("v2.1.4"), catalogSource,
		configSecret("credentials-secret"), noAttention)

	// 03_examples-of-api-usage.md, example 1: manager flags and
	// provider-specific args.
	checkAWSFlags = all(kindName("InfrastructureProvider", "capa-system", "aws"), version("v2.1.4"), configSecret("aws-variables"),
		releaseURL("https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases"),
		note("spec.fetchConfig.url", "infrastructure-components.yaml of spec.version"),
		func(t *testing.T, c Converted) {
			m := c.Object.GetSpec().Manager
			if m == nil || m.SyncPeriod == nil || m.SyncPeriod.Duration != 500*time.Second {
				t.Errorf("spec.manager.syncPeriod: want 500s, got %+v", m)
			}
			if m != nil && !reflect.DeepEqual(m.AdditionalArgs, map[string]string{"metrics-bind-addr": ":8181"}) {
				t.Errorf("spec.manager.additionalArgs: want the operator's --metrics-bind-addr=:8181, got %v", m.AdditionalArgs)
			}
			if m != nil && m.MetricsBindAddress != "" {
				t.Errorf("metrics.bindAddress (--metrics-bind-addr) must not become metricsBindAddress (--diagnostics-address): got %q", m.MetricsBindAddress)
			}
		},
		attention("spec.manager.metrics.bindAddress", "removed it in v1.9"),
		container(0, v1alpha1.ContainerSpec{Name: "manager", Args: map[string]string{"awscluster-concurrency": "12", "awsmachine-concurrency": "11"}}))

	checkAWSImage = all(kindName("InfrastructureProvider", "capa-system", "aws"), version("v2.1.4"), catalogSource,
		container(0, v1alpha1.ContainerSpec{Name: "manager", ImageURL: "gcr.io/myregistry/capa-controller:v2.1.4-foo"}), noAttention)

	checkKubeadmResources = all(kindName("ControlPlaneProvider", "capi-kubeadm-control-plane-system", "kubeadm"), version("v1.4.3"),
		configSecret("capi-variables"), catalogSource, noAttention,
		container(0, v1alpha1.ContainerSpec{Name: "manager", Resources: &corev1.ResourceRequirements{
			Limits:   resources("100m", "30Mi"),
			Requests: resources("100m", "20Mi"),
		}}),
		note("spec.deployment.containers[0].resources", "merges them key by key"))

	checkMyAzure = all(kindName("InfrastructureProvider", "capz-system", "myazure"), version("v1.9.3"),
		releaseURL("https://github.com/myorg/awesome-azure-provider/releases"), noAttention)

	checkVSphere = all(kindName("InfrastructureProvider", "capv-system", "vsphere"), version("v1.6.1"), catalogSource,
		configSecret("vsphere-variables"), noAttention)

	checkAzureSelector = all(kindName("InfrastructureProvider", "capz-system", "azure"), version("v1.9.3"), catalogSource,
		attention("spec.fetchConfig.selector", "capwright publish DIR --type infrastructure --name azure --version v1.9.3"))

	checkAzureOCI = all(kindName("InfrastructureProvider", "capz-system", "azure"), version("v1.9.3"),
		ociURL("oci://my-oci-registry.example.com/my-provider", false),
		attention("spec.fetchConfig.oci", "capwright mirror --repack --to REGISTRY/PREFIX oci://my-oci-registry.example.com/my-provider:v1.9.3"),
		attention("spec.fetchConfig.oci", "capwright publish --from-release infrastructure/azure --version v1.9.3"),
		note("spec.fetchConfig.oci", "kubernetes.io/dockerconfigjson"))

	checkAzureOCIPlainHTTP = all(kindName("InfrastructureProvider", "capz-system", "azure"),
		ociURL("oci://my-oci-registry.example.com/my-provider", true),
		note("spec.fetchConfig.oci", "spec.source.oci.insecure"))

	checkAzureFileURL = all(kindName("InfrastructureProvider", "capz-system", "azure"),
		releaseURL("https://my-internal-repo.example.com/providers/azure/v1.9.3.yaml"),
		attention("spec.fetchConfig.url", "outside a version directory"))

	checkAdditionalManifests = all(kindName("CoreProvider", "capi-system", "cluster-api"), attention("spec.version", ""),
		func(t *testing.T, c Converted) {
			if got := c.Object.GetSpec().AdditionalManifests; got == nil || got.Name != "additional-manifests" || got.Namespace != "" {
				t.Errorf("spec.additionalManifests: want ConfigMap additional-manifests, got %+v", got)
			}
		},
		note("spec.additionalManifests", "ExternalArtifact feature gate"))

	checkManifestPatch = all(kindName("CoreProvider", "capi-system", "cluster-api"),
		patches(kustomize.Patch{Patch: "apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n      test-label: test-value\n", Target: &kustomize.Selector{Kind: "Service"}}),
		note("spec.manifestPatches[0]", "every Service"), noAttentionOn("spec.manifestPatches[0]"))

	checkStrategicMergePatch = all(kindName("CoreProvider", "capi-system", "cluster-api"),
		patches(kustomize.Patch{Patch: "apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    test-label: test-value\n", Target: &kustomize.Selector{Kind: "Service"}}),
		noAttentionOn("spec.patches[0]"), noAttentionOn("spec.patches[0].patch"))

	checkJSONPatch = all(kindName("CoreProvider", "capi-system", "cluster-api"),
		patches(kustomize.Patch{
			Patch:  "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --additional-sync-machine-labels=topology.kubernetes.io/.*\n",
			Target: &kustomize.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "capi-controller-manager"},
		}),
		note("spec.patches[0].target.namespace", "every namespaced object of the provider ends up in capi-system"),
		// The block holds both CoreProviders: one would be refused.
		attention("metadata.name", "DuplicateProvider"))

	// 05_provider-spec-configuration.md documents the fields as spec:
	// fragments, wrapped into InfrastructureProvider example-system/example.
	checkSpecFragment = all(version("v0.1.0"), configSecret("provider-secret"),
		releaseURL("https://github.com/owner/repo/releases"),
		func(t *testing.T, c Converted) {
			s := c.Object.GetSpec()
			if s.Deployment == nil || s.Deployment.Replicas == nil || *s.Deployment.Replicas != 1 {
				t.Errorf("spec.deployment.replicas: want 1, got %+v", s.Deployment)
			}
			if s.Manager == nil || s.Manager.AdditionalArgs["max-concurrent-reconciles"] != "5" {
				t.Errorf("spec.manager: want additionalArgs max-concurrent-reconciles 5, got %+v", s.Manager)
			}
		},
		attention("spec.manager.maxConcurrentReconciles", "cluster-concurrency"))

	checkManagerFragment = all(version(""), func(t *testing.T, c Converted) {
		m := c.Object.GetSpec().Manager
		want := &v1alpha1.ManagerSpec{
			FeatureGates:   map[string]bool{"FeatureA": true, "FeatureB": false},
			AdditionalArgs: map[string]string{"profiler-address": "localhost:6060", "max-concurrent-reconciles": "5"},
			// verbosity: 1 is the operator's default: no --v, no field.
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("spec.manager:\n got %+v\nwant %+v", m, want)
		}
	}, attention("spec.version", ""), attention("spec.fetchConfig", `no infrastructure provider named "example"`))

	checkDeploymentFragment = all(func(t *testing.T, c Converted) {
		d := c.Object.GetSpec().Deployment
		if d == nil || d.Replicas == nil || *d.Replicas != 2 || d.NodeSelector["disktype"] != "ssd" {
			t.Fatalf("spec.deployment: want 2 replicas on disktype ssd, got %+v", d)
		}
		if want := []corev1.Toleration{{Key: "example", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}; !reflect.DeepEqual(d.Tolerations, want) {
			t.Errorf("tolerations: got %+v", d.Tolerations)
		}
		terms := d.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || terms[0].MatchExpressions[0].Key != "example" || terms[0].MatchExpressions[0].Values[0] != "true" {
			t.Errorf("affinity: got %+v", d.Affinity)
		}
	}, container(0, v1alpha1.ContainerSpec{Name: "containerA", ImageURL: "example.com/repo/image-name:v1.0.0"}),
		attention("spec.deployment.containers[0].args[exampleArg]", `args of the "manager" container only`),
		note("spec.deployment.affinity", "merges"))

	checkContainerFragment = all(container(0, v1alpha1.ContainerSpec{
		Name: "example-container", ImageURL: "example.com/repo/image-name:v1.0.0",
		Env:       []corev1.EnvVar{{Name: "EXAMPLE_ENV", Value: "example-value"}},
		Resources: &corev1.ResourceRequirements{Limits: resources("1", "1Gi"), Requests: resources("500m", "500Mi")},
		Command:   []string{"/bin/bash"},
	}), attention("spec.deployment.containers[0].args[exampleArg]", "JSON 6902 patch"))

	// The fragment sets url and an empty selector together.
	checkFetchFragment = all(releaseURL("https://github.com/owner/repo/releases"),
		attention("spec.fetchConfig", "sets selector and url"))

	checkSecretNamespaceFragment = all(func(t *testing.T, c Converted) {
		if got := c.Object.GetSpec().ConfigSecret; got == nil || got.Name != "capa-secret" || got.Namespace != "" {
			t.Errorf("spec.configSecret: want capa-secret in the provider's namespace, got %+v", got)
		}
	}, attention("spec.configSecret.namespace", "Copy the Secret into example-system"))

	checkStatusFragment = all(version("v0.1.0"), note("spec.version", "status.installedVersion"))

	// 01_v1alpha1-to-v1alpha2.md shows v1alpha1 fields next to v1alpha2
	// ones; its "v1alpha2" example spells imageURL, which v1alpha2 does
	// not have (imageUrl): each is reported, not dropped.
	checkV1alpha1Image  = all(attention("spec.deployment.containers[0].image", "unknown field"))
	checkImageURLTypo   = all(attention("spec.deployment.containers[0].imageURL", "unknown field"), container(0, v1alpha1.ContainerSpec{Name: "manager"}))
	checkV1alpha1Secret = all(attention("spec.secretName", "unknown field"), attention("spec.secretNamespace", "unknown field"),
		func(t *testing.T, c Converted) {
			if c.Object.GetSpec().ConfigSecret != nil {
				t.Errorf("an unknown field became spec.configSecret")
			}
		})
	checkV1alpha2Secret = all(attention("spec.configSecret.namespace", "capz-system/azure-variables"))
)

// operatorExampleChecks lists every provider CR of the operator's
// documentation, by FILE#BLOCK/DOCUMENT; a new or vanished example fails
// TestOperatorExamples.
var operatorExampleChecks = map[string]exampleCheck{
	"docs/README.md#2/1":  checkCoreV143,
	"docs/README.md#4/1":  checkSpecFragment,
	"docs/README.md#5/1":  checkManagerFragment,
	"docs/README.md#6/1":  checkDeploymentFragment,
	"docs/README.md#7/1":  checkContainerFragment,
	"docs/README.md#8/1":  checkFetchFragment,
	"docs/README.md#9/1":  checkSecretNamespaceFragment,
	"docs/README.md#10/1": checkStatusFragment,
	"docs/README.md#11/2": checkAWSFlags,
	"docs/README.md#12/1": checkAWSImage,
	"docs/README.md#13/1": checkKubeadmResources,
	"docs/README.md#14/1": checkMyAzure,
	"docs/README.md#15/1": checkVSphere,
	"docs/README.md#16/2": checkAzureSelector,
	"docs/README.md#17/2": checkAdditionalManifests,
	"docs/README.md#18/1": checkCoreWithoutVersion,

	"docs/book/src/01_user/02_quick-start.md#1/1": checkCoreWithoutVersion,
	"docs/book/src/01_user/02_quick-start.md#2/1": checkAWSQuickStart,
	"docs/quickstart.md#1/1":                      checkCoreWithoutVersion,
	"docs/quickstart.md#2/1":                      checkAWSQuickStart,

	"docs/book/src/03_topics/02_configuration/01_air-gapped-environtment.md#1/2": checkAzureSelector,
	"docs/book/src/03_topics/02_configuration/01_air-gapped-environtment.md#2/1": checkAzureOCI,
	"docs/book/src/03_topics/02_configuration/01_air-gapped-environtment.md#3/1": checkAzureOCIPlainHTTP,
	"docs/book/src/03_topics/02_configuration/01_air-gapped-environtment.md#4/1": checkAzureOCI,
	"docs/book/src/03_topics/02_configuration/01_air-gapped-environtment.md#6/1": checkAzureFileURL,

	"docs/book/src/03_topics/02_configuration/02_injecting-additional-manifests.md#1/2": checkAdditionalManifests,

	"docs/book/src/03_topics/02_configuration/03_examples-of-api-usage.md#1/2": checkAWSFlags,
	"docs/book/src/03_topics/02_configuration/03_examples-of-api-usage.md#2/1": checkAWSImage,
	"docs/book/src/03_topics/02_configuration/03_examples-of-api-usage.md#3/1": checkKubeadmResources,
	"docs/book/src/03_topics/02_configuration/03_examples-of-api-usage.md#4/1": checkMyAzure,
	"docs/book/src/03_topics/02_configuration/03_examples-of-api-usage.md#5/1": checkVSphere,

	"docs/book/src/03_topics/02_configuration/04_patching-provider-manifests.md#1/1": checkManifestPatch,
	"docs/book/src/03_topics/02_configuration/04_patching-provider-manifests.md#2/1": checkStrategicMergePatch,
	"docs/book/src/03_topics/02_configuration/04_patching-provider-manifests.md#2/2": checkJSONPatch,

	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#1/1": checkSpecFragment,
	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#2/1": checkManagerFragment,
	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#3/1": checkDeploymentFragment,
	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#4/1": checkContainerFragment,
	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#5/1": checkFetchFragment,
	"docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md#6/1": checkSecretNamespaceFragment,

	"docs/book/src/03_topics/03_basic-cluster-api-provider-installation/01_installing-core-provider.md#1/1": checkCoreV143,

	"docs/book/src/04_developer/01_version_migration/01_v1alpha1-to-v1alpha2.md#1/1": checkV1alpha1Image,
	"docs/book/src/04_developer/01_version_migration/01_v1alpha1-to-v1alpha2.md#2/1": checkImageURLTypo,
	"docs/book/src/04_developer/01_version_migration/01_v1alpha1-to-v1alpha2.md#3/1": checkV1alpha1Secret,
	"docs/book/src/04_developer/01_version_migration/01_v1alpha1-to-v1alpha2.md#4/1": checkV1alpha2Secret,

	"docs/book/src/05_reference/06_providers.md#1/1": checkStatusFragment,
}

// operatorV1alpha1Examples are the documented CRs in the operator's older
// v1alpha1: reported, not converted.
var operatorV1alpha1Examples = []string{
	"docs/README.md#3/2",
	"docs/book/src/03_topics/03_basic-cluster-api-provider-installation/02_installing-capz.md#1/2",
}

// TestOperatorExamples converts every provider CR of cluster-api-operator's
// own documentation (at OperatorVersion, from the module source), asserts
// each one's mappings and findings, and checks every output that needs no
// human against Capwright's CRDs (schema and CEL rules).
func TestOperatorExamples(t *testing.T) {
	crds, err := converttest.LoadCRDs(filepath.Join(repoRoot, "manifests", "crd", "bases", "providers.capwright.io_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var v1alpha1Seen []string
	for _, ex := range operatorExamples(t) {
		docs, err := Decode(fmt.Sprintf("%s#%d", ex.File, ex.Block), ex.YAML)
		if err != nil {
			t.Errorf("%s block %d: %v", ex.File, ex.Block, err)
			continue
		}
		for _, c := range Convert(docs) {
			key := exampleKey(c.Document.Source)
			if c.Document.Provider == nil {
				if strings.HasPrefix(c.Document.APIVersion, OperatorGroup+"/") {
					v1alpha1Seen = append(v1alpha1Seen, key)
					if c.Object != nil || !hasFinding(c, Attention, "apiVersion", "v1alpha2") {
						t.Errorf("%s: a v1alpha1 CR must be reported, not converted: %v", key, c.Findings)
					}
				}
				continue
			}
			seen[key] = true
			check, ok := operatorExampleChecks[key]
			if !ok {
				t.Errorf("%s: no check for this example of the operator's docs; add one to operatorExampleChecks", key)
				continue
			}
			t.Run(key, func(t *testing.T) {
				if c.Object == nil {
					t.Fatalf("not converted: %v", c.Findings)
				}
				check(t, c)
				checkAgainstCRDs(t, crds, c)
			})
		}
	}
	for key := range operatorExampleChecks {
		if !seen[key] {
			t.Errorf("%s: expected an operator CR there, found none", key)
		}
	}
	if !slices.Equal(v1alpha1Seen, operatorV1alpha1Examples) {
		t.Errorf("v1alpha1 examples: got %v, want %v", v1alpha1Seen, operatorV1alpha1Examples)
	}
	t.Logf("converted %d provider CRs of cluster-api-operator %s's documentation; %d v1alpha1 ones reported", len(seen), OperatorVersion, len(v1alpha1Seen))
}

// checkAgainstCRDs: a converted CR with no finding on its version or name
// must be accepted by Capwright's CRDs; one with such a finding must not.
func checkAgainstCRDs(t *testing.T, crds *converttest.CRDs, c Converted) {
	t.Helper()
	out, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	errs := crds.Validate(out)
	flagged := hasFinding(c, Attention, "spec.version", "") || hasFinding(c, Attention, "metadata.name", "must be named")
	switch {
	case !flagged && len(errs) > 0:
		t.Errorf("the converted CR is refused by the CRD: %v\n%s", errs, out)
	case flagged && len(errs) == 0 && c.Object.GetSpec().Version == "":
		t.Errorf("the CR has no version, yet the CRD check passed:\n%s", out)
	}
}

// exampleKey turns "FILE#BLOCK, document N[, item M]" into FILE#BLOCK/N.
func exampleKey(source string) string {
	file, doc, _ := strings.Cut(source, ", document ")
	doc, _, _ = strings.Cut(doc, ",")
	return file + "/" + doc
}

func all(checks ...exampleCheck) exampleCheck {
	return func(t *testing.T, c Converted) {
		t.Helper()
		for _, check := range checks {
			check(t, c)
		}
	}
}

func kindName(kind, namespace, name string) exampleCheck {
	return func(t *testing.T, c Converted) {
		o := c.Object
		if got := o.GetObjectKind().GroupVersionKind(); got != v1alpha1.GroupVersion.WithKind(kind) {
			t.Errorf("kind: got %v, want %s of %s", got, kind, v1alpha1.GroupVersion)
		}
		if o.GetNamespace() != namespace || o.GetName() != name {
			t.Errorf("object: got %s/%s, want %s/%s", o.GetNamespace(), o.GetName(), namespace, name)
		}
	}
}

func version(v string) exampleCheck {
	return func(t *testing.T, c Converted) {
		if got := c.Object.GetSpec().Version; got != v {
			t.Errorf("spec.version: got %q, want %q", got, v)
		}
	}
}

func configSecret(name string) exampleCheck {
	return func(t *testing.T, c Converted) {
		if got := c.Object.GetSpec().ConfigSecret; got == nil || got.Name != name {
			t.Errorf("spec.configSecret: got %+v, want %s", got, name)
		}
	}
}

// catalogSource: no spec.source, and the catalog knows the provider (the
// operator fetched it from clusterctl's list).
func catalogSource(t *testing.T, c Converted) {
	if s := c.Object.GetSpec().Source; s != nil {
		t.Errorf("spec.source: want none (the catalog), got %+v", s)
	}
	if _, ok := catalog.ReleaseURL(c.Object.ProviderType(), c.Object.GetName()); !ok {
		t.Errorf("the catalog does not know %s/%s", c.Object.ProviderType(), c.Object.GetName())
	}
}

func releaseURL(url string) exampleCheck {
	return func(t *testing.T, c Converted) {
		s := c.Object.GetSpec().Source
		if s == nil || s.Release == nil || s.Release.URL != url || s.OCI != nil || s.Chart != nil {
			t.Errorf("spec.source: want release %s, got %+v", url, s)
		}
	}
}

func ociURL(url string, insecure bool) exampleCheck {
	return func(t *testing.T, c Converted) {
		s := c.Object.GetSpec().Source
		if s == nil || s.OCI == nil || s.OCI.URL != url || s.OCI.Insecure != insecure || s.Release != nil {
			t.Errorf("spec.source: want oci %s (insecure %v), got %+v", url, insecure, s)
		}
	}
}

func container(i int, want v1alpha1.ContainerSpec) exampleCheck {
	return func(t *testing.T, c Converted) {
		d := c.Object.GetSpec().Deployment
		if d == nil || len(d.Containers) <= i {
			t.Fatalf("spec.deployment.containers[%d]: missing in %+v", i, d)
		}
		if !reflect.DeepEqual(d.Containers[i], want) {
			t.Errorf("spec.deployment.containers[%d]:\n got %+v\nwant %+v", i, d.Containers[i], want)
		}
	}
}

func patches(want ...kustomize.Patch) exampleCheck {
	return func(t *testing.T, c Converted) {
		if got := c.Object.GetSpec().Patches; !reflect.DeepEqual(got, want) {
			t.Errorf("spec.patches:\n got %#v\nwant %#v", got, want)
		}
	}
}

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: mustQuantity(cpu), corev1.ResourceMemory: mustQuantity(memory)}
}

func attention(field, text string) exampleCheck {
	return func(t *testing.T, c Converted) {
		if !hasFinding(c, Attention, field, text) {
			t.Errorf("want an attention finding on %s mentioning %q, got:\n%s", field, text, findingsText(c))
		}
	}
}

func note(field, text string) exampleCheck {
	return func(t *testing.T, c Converted) {
		if !hasFinding(c, Note, field, text) {
			t.Errorf("want a note on %s mentioning %q, got:\n%s", field, text, findingsText(c))
		}
	}
}

func noAttention(t *testing.T, c Converted) {
	if NeedAttention(c.Findings) {
		t.Errorf("want no finding that needs attention, got:\n%s", findingsText(c))
	}
}

func noAttentionOn(field string) exampleCheck {
	return func(t *testing.T, c Converted) {
		if hasFinding(c, Attention, field, "") {
			t.Errorf("want no attention finding on %s, got:\n%s", field, findingsText(c))
		}
	}
}

func noFindings(t *testing.T, c Converted) {
	if len(c.Findings) > 0 {
		t.Errorf("want no finding, got:\n%s", findingsText(c))
	}
}

func hasFinding(c Converted, sev Severity, field, text string) bool {
	for _, f := range c.Findings {
		if f.Severity == sev && f.Field == field && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}

func findingsText(c Converted) string {
	var b strings.Builder
	_ = WriteReport(&b, c.Findings)
	return b.String()
}
