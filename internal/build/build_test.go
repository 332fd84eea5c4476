package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/render"
)

// push publishes a provider to reg and returns its oci:// URL.
func push(t *testing.T, reg *registrytest.Registry, providerType, name, version, contract, components string) string {
	t.Helper()
	repo := "manifests/" + providerType + "-" + name
	files := map[string][]byte{artifact.MetadataFile: clusterctltest.Metadata(version, contract), clusterctl.ComponentsFile(providerType): []byte(components)}
	if _, err := artifact.Push(context.Background(), reg.Ref(repo, version), files, artifact.ProviderAnnotations(providerType, name, version, ""), reg.Access()); err != nil {
		t.Fatal(err)
	}
	return "oci://" + reg.Host + "/" + repo
}

// repository writes files into a directory, as a Git checkout holds them.
func repository(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func buildDir(t *testing.T, o Options, paths ...string) ([]Item, Loaded) {
	t.Helper()
	in, err := Load(paths, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range in.Invalid {
		t.Errorf("the API server would refuse the test's own input: %s", inv)
	}
	if err := DefaultNamespaces(&in, "default"); err != nil {
		t.Fatal(err)
	}
	items, err := Build(context.Background(), in.CRs, in.World, o)
	if err != nil {
		t.Fatal(err)
	}
	return items, in
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func offline() Options {
	return Options{Forbidden: render.TenantForbidden(render.DefaultTenantForbiddenNamespaces, "capwright-system"), Provisioned: true,
		RegistryTimeout: 5 * time.Second}
}

// TestBuildProviders: a core and an infrastructure provider from a
// registry, as a repository holds them (no namespace on the core: -n
// puts it into default… here given), are resolved and checked as the
// manager does; the infrastructure provider waits for the core's contract
// in the manager, and build plans the core first; spec.dependsOn is
// taken as Ready and said; two builds print the same objects.
func TestBuildProviders(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	core := push(t, reg, "core", "cluster-api", "v1.14.2", "v1beta2", clusterctltest.CoreComponents)
	docker := push(t, reg, "infrastructure", "docker", "v1.14.2", "v1beta2", clusterctltest.DockerComponents)
	dir := repository(t, map[string]string{
		// The infrastructure provider first: the core is still planned
		// before it.
		"a-docker.yaml": fmt.Sprintf(`apiVersion: providers.capwright.io/v1alpha1
kind: InfrastructureProvider
metadata: {name: docker, namespace: capd-system}
spec:
  version: v1.14.2
  source: {oci: {url: %s, insecure: true}}
  variables: {DOCKER_TOKEN: t0k3n, DOCKER_REGION: eu}
  manager: {featureGates: {MachinePool: false}}
  dependsOn: [{name: cert-manager, namespace: flux-system}]
`, docker),
		"b-core.yaml": fmt.Sprintf(`apiVersion: providers.capwright.io/v1alpha1
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec:
  version: v1.14.2
  source: {oci: {url: %s, insecure: true}}
`, core),
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a-docker.yaml, b-core.yaml]\n",
	})
	items, in := buildDir(t, offline(), dir)
	if len(items) != 2 || in.Ignored != 1 {
		t.Fatalf("items %d (want 2), ignored %d (want the kustomization.yaml)", len(items), in.Ignored)
	}
	for _, it := range items {
		if it.Refusal != nil {
			t.Fatalf("%s refused: %s: %s", it.Ref(), it.Refusal.Reason, it.Refusal.Message)
		}
	}
	want := []string{"ServiceAccount capd-system/infrastructure-docker-installer", "ClusterRoleBinding /capwright-provider-installer:capd-system:infrastructure-docker",
		"OCIRepository capd-system/infrastructure-docker", "Kustomization capd-system/infrastructure-docker"}
	if got := kinds(items[0].Objects); !reflect.DeepEqual(got, want) {
		t.Errorf("docker's objects %v, want %v", got, want)
	}
	ks := items[0].Objects[3]
	substitute, _, _ := unstructured.NestedStringMap(ks.Object, "spec", "postBuild", "substitute")
	if substitute["DOCKER_TOKEN"] != "t0k3n" {
		t.Errorf("the variable is not substituted: %v", substitute)
	}
	if len(items[0].Notes) != 1 || !strings.Contains(items[0].Notes[0], "spec.dependsOn Kustomization flux-system/cert-manager taken as Ready") {
		t.Errorf("notes %v, want the dependency taken as Ready", items[0].Notes)
	}
	if items[1].Kind != "CoreProvider" || len(items[1].Objects) != 4 {
		t.Errorf("core: %s with %v", items[1].Kind, kinds(items[1].Objects))
	}
	again, _ := buildDir(t, offline(), dir)
	for i := range items {
		if !reflect.DeepEqual(items[i].Objects, again[i].Objects) {
			t.Errorf("%s: two builds of the same files differ", items[i].Ref())
		}
	}
}

// TestBuildRefusesAsTheManager: a provider whose contract the core cannot
// work with gets the manager's refusal, its objects left out; a registry
// that cannot be reached stops the build naming it.
func TestBuildRefusesAsTheManager(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	core := push(t, reg, "core", "cluster-api", "v1.14.2", "v1beta2", clusterctltest.CoreComponents)
	docker := push(t, reg, "infrastructure", "docker", "v1.14.2", "v1alpha4", clusterctltest.DockerComponents)
	dir := repository(t, map[string]string{"providers.yaml": fmt.Sprintf(`apiVersion: providers.capwright.io/v1alpha1
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec: {version: v1.14.2, source: {oci: {url: %s, insecure: true}}}
---
apiVersion: providers.capwright.io/v1alpha1
kind: InfrastructureProvider
metadata: {name: docker, namespace: capd-system}
spec: {version: v1.14.2, source: {oci: {url: %s, insecure: true}}, variables: {DOCKER_TOKEN: x, DOCKER_REGION: eu}}
`, core, docker)})
	items, _ := buildDir(t, offline(), dir)
	r := items[1].Refusal
	if r == nil || r.Reason != v1alpha1.IncompatibleContractReason || len(items[1].Objects) != 0 {
		t.Fatalf("docker: refusal %+v, objects %v; want IncompatibleContract and nothing", r, kinds(items[1].Objects))
	}
	t.Logf("%s: %s", r.Reason, r.Message)

	unreachable := repository(t, map[string]string{"core.yaml": `apiVersion: providers.capwright.io/v1alpha1
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec: {version: v1.14.2, source: {oci: {url: oci://127.0.0.1:1/manifests/core-cluster-api, insecure: true}}}
`})
	in, err := Load([]string{unreachable}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), in.CRs, in.World, offline())
	var unreached *UnreachableError
	if !errors.As(err, &unreached) || !strings.Contains(err.Error(), "127.0.0.1:1") || unreached.Item != "CoreProvider capi-system/cluster-api" {
		t.Fatalf("an unreachable registry: %v, want an UnreachableError naming the provider and host", err)
	}
}

const clusters = `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod-1, namespace: tenant-team-a, labels: {env: prod}}
spec:
  controlPlaneRef: {apiGroup: clusters.capwright.io, kind: CapwrightControlPlane, name: prod-1}
  infrastructureRef: {apiGroup: clusters.capwright.io, kind: CapwrightCluster, name: prod-1}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod-2, namespace: tenant-team-a, labels: {env: prod}}
spec: {}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: dev-1, namespace: tenant-team-a, labels: {env: dev}}
spec: {}
`

// TestBuildTenantAndContractObjects: a Tenant selecting two of three
// Clusters gets its namespace, RBAC, source and a Kustomization per
// selected cluster, each cluster said to be taken as provisioned; a
// CapwrightControlPlane gets its chart backend, owned by the Cluster
// whose spec names it; one no Cluster names waits, as in the manager; a
// Tenant reaching into flux-system is refused.
func TestBuildTenantAndContractObjects(t *testing.T) {
	dir := repository(t, map[string]string{
		"tenant.yaml": `apiVersion: tenancy.capwright.io/v1alpha1
kind: Tenant
metadata: {name: team-a}
spec:
  clusters: {selector: {matchLabels: {env: prod}}}
  stack: {kustomize: {url: oci://ghcr.io/example/stacks/baseline, tag: v1.0.0}}
`,
		"clusters/clusters.yaml": clusters,
		"clusters/controlplanes.yaml": `apiVersion: clusters.capwright.io/v1alpha1
kind: CapwrightControlPlane
metadata: {name: prod-1, namespace: tenant-team-a}
spec:
  version: v1.34.0
  backend: {chart: {url: oci://ghcr.io/example/charts/hosted-control-plane, version: 1.2.0, values: {version: "${KUBERNETES_VERSION}"}}}
  statusFrom: {apiVersion: example.com/v1, kind: HostedControlPlane, name: "${CLUSTER_NAME}"}
  kubeconfig: {secretName: "${CLUSTER_NAME}-admin"}
---
apiVersion: clusters.capwright.io/v1alpha1
kind: CapwrightControlPlane
metadata: {name: orphan, namespace: tenant-team-a}
spec:
  version: v1.34.0
  backend: {chart: {url: oci://ghcr.io/example/charts/hosted-control-plane, version: 1.2.0}}
  statusFrom: {apiVersion: example.com/v1, kind: HostedControlPlane, name: "${CLUSTER_NAME}"}
  kubeconfig: {secretName: "${CLUSTER_NAME}-admin"}
`,
		"forbidden.yaml": `apiVersion: tenancy.capwright.io/v1alpha1
kind: Tenant
metadata: {name: sneaky}
spec:
  clusters: {namespaces: [flux-system], selector: {}}
  stack: {kustomize: {url: oci://ghcr.io/example/stacks/baseline, tag: v1.0.0}}
`,
	})
	items, _ := buildDir(t, offline(), dir)
	byRef := map[string]Item{}
	for _, it := range items {
		byRef[it.Ref()] = it
	}
	tn := byRef["Tenant team-a"]
	if tn.Refusal != nil {
		t.Fatalf("team-a refused: %s", tn.Refusal.Message)
	}
	var stacks []string
	for _, o := range tn.Objects {
		if o.GetKind() == "Kustomization" && o.GetLabels()[tenancyv1alpha1.TenantLabel] == "team-a" {
			stacks = append(stacks, o.GetName())
		}
	}
	if len(stacks) != 4 || len(tn.Notes) != 2 {
		t.Errorf("team-a: Kustomizations %v, notes %v; want the stack and its target namespace's per prod cluster, each cluster noted as provisioned", stacks, tn.Notes)
	}
	cp := byRef["CapwrightControlPlane tenant-team-a/prod-1"]
	if cp.Refusal != nil || !reflect.DeepEqual(kinds(cp.Objects), []string{"OCIRepository tenant-team-a/controlplane-prod-1", "HelmRelease tenant-team-a/controlplane-prod-1"}) {
		t.Errorf("control plane: refusal %v, objects %v", cp.Refusal, kinds(cp.Objects))
	}
	if len(cp.Notes) != 1 || !strings.Contains(cp.Notes[0], "Cluster tenant-team-a/prod-1") {
		t.Errorf("control plane notes %v, want its owner Cluster said", cp.Notes)
	}
	if o := byRef["CapwrightControlPlane tenant-team-a/orphan"]; o.Refusal == nil || o.Refusal.Reason != clustersv1alpha1.WaitingForClusterReason {
		t.Errorf("a control plane no Cluster names: %+v, want WaitingForCluster", o.Refusal)
	}
	if s := byRef["Tenant sneaky"]; s.Refusal == nil || s.Refusal.Reason != tenancyv1alpha1.NamespaceNotAllowedReason || !strings.Contains(s.Refusal.Message, "flux-system") {
		t.Errorf("a tenant in flux-system: %+v, want NamespaceNotAllowed", s.Refusal)
	}
}

// TestLoadRefusesWhatItCannotRead: not YAML, an object without a kind
// and a field a Capwright kind does not have stop the build naming the
// file; an unknown kind of Capwright's groups is named and skipped;
// .git is not walked.
func TestLoadRefusesWhatItCannotRead(t *testing.T) {
	for name, tt := range map[string]struct{ content, want string }{
		"not yaml":      {"kind: [unclosed", "is not YAML or JSON"},
		"no kind":       {"metadata: {name: x}\n", "has no apiVersion and kind"},
		"unknown field": {"apiVersion: providers.capwright.io/v1alpha1\nkind: CoreProvider\nmetadata: {name: c, namespace: ns1}\nspec: {version: v1.14.2, verison: v1}\n", `unknown field "spec.verison"`},
		"no name":       {"apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ns1}\n", "has no metadata.name"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := repository(t, map[string]string{"bad.yaml": tt.content})
			_, err := Load([]string{dir}, false)
			var input *InputError
			if !errors.As(err, &input) || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want an InputError naming bad.yaml and %q", err, tt.want)
			}
		})
	}
	dir := repository(t, map[string]string{
		"future.yaml":      "apiVersion: providers.capwright.io/v1beta9\nkind: CoreProvider\nmetadata: {name: c, namespace: ns1}\n",
		".git/config.yaml": "this: [is not yaml",
		"list.yaml":        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s, namespace: ns1}\n",
	})
	in, err := Load([]string{dir}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Unknown) != 1 || !strings.Contains(in.Unknown[0], "providers.capwright.io/v1beta9 CoreProvider") || !strings.Contains(in.Unknown[0], "providers.capwright.io/v1alpha1 CoreProvider") {
		t.Errorf("unknown %v, want the v1beta9 CoreProvider named with the known kinds", in.Unknown)
	}
	if len(in.World) != 1 || in.World[0].GetName() != "s" {
		t.Errorf("world %v, want the Secret of the List", in.World)
	}
}

// TestBuildOffline: with the providers' artifacts in OCI image layouts —
// one named by its whole reference, one by its version with the
// provider's annotations (capwright publish --output) — build asks no
// registry (the one named is not even reachable) and prints what it
// prints from the registry; a layout that is not one is refused.
func TestBuildOffline(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Options{})
	online := push(t, reg, "core", "cluster-api", "v1.14.2", "v1beta2", clusterctltest.CoreComponents)
	write := func(t *testing.T, tag string) string {
		dir := t.TempDir()
		files := map[string][]byte{artifact.MetadataFile: clusterctltest.Metadata("v1.14.2", "v1beta2"), clusterctl.ComponentsFile("core"): []byte(clusterctltest.CoreComponents)}
		if _, err := artifact.WriteLayout(ctx, dir, tag, files, artifact.ProviderAnnotations("core", "cluster-api", "v1.14.2", "")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	crs := func(url string) string {
		return repository(t, map[string]string{"core.yaml": fmt.Sprintf(`apiVersion: providers.capwright.io/v1alpha1
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec: {version: v1.14.2, source: {oci: {url: %s, insecure: true}}}
`, url)})
	}
	fromRegistry, _ := buildDir(t, offline(), crs(online))
	for name, layout := range map[string]string{
		"whole reference": write(t, "127.0.0.1:1/manifests/core-cluster-api:v1.14.2"),
		"version":         write(t, "v1.14.2"),
	} {
		t.Run(name, func(t *testing.T) {
			o := offline()
			o.Layouts = []string{layout}
			items, _ := buildDir(t, o, crs("oci://127.0.0.1:1/manifests/core-cluster-api"))
			it := items[0]
			if it.Refusal != nil || len(it.Objects) != 4 {
				t.Fatalf("refusal %v, objects %v", it.Refusal, kinds(it.Objects))
			}
			if len(it.Notes) != 1 || !strings.Contains(it.Notes[0], "read from the OCI image layout "+layout) {
				t.Errorf("notes %v, want where the artifact came from", it.Notes)
			}
			// The same Kustomization as from the registry, but for the URL.
			got, _, _ := unstructured.NestedMap(it.Objects[3].Object, "spec")
			want, _, _ := unstructured.NestedMap(fromRegistry[0].Objects[3].Object, "spec")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the Kustomization from the layout differs from the registry's:\n%v\n%v", got, want)
			}
		})
	}
	o := offline()
	o.Layouts = []string{t.TempDir()}
	in, err := Load([]string{crs(online)}, false)
	if err != nil {
		t.Fatal(err)
	}
	var input *InputError
	if _, err := Build(ctx, in.CRs, in.World, o); !errors.As(err, &input) || !strings.Contains(err.Error(), "is not an OCI image layout") {
		t.Errorf("an empty directory as --layout: %v, want an InputError", err)
	}
}

// Load leaves out, naming the file, the object and the field in the API
// server's words, what the API server would refuse by the schema or the
// CEL rules of Capwright's CRDs, and keeps the rest.
func TestLoadLeavesOutWhatTheAPIServerWouldRefuse(t *testing.T) {
	const provider = "apiVersion: providers.capwright.io/v1alpha1\nkind: InfrastructureProvider\nmetadata: {name: aws, namespace: capa-system}\nspec:\n  version: v2.8.0\n"
	const tenant = "apiVersion: tenancy.capwright.io/v1alpha1\nkind: Tenant\nmetadata: {name: team-a}\nspec:\n  stack: {kustomize: {url: oci://ghcr.io/example/stacks/baseline, tag: v1.0.0}}\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"an interval of a second", provider + "  interval: 1s\n",
			`InfrastructureProvider "aws": it is invalid: spec.interval: Invalid value: "1s": interval must be at least 1m`},
		{"a core provider with another name", strings.Replace(strings.Replace(provider, "InfrastructureProvider", "CoreProvider", 1), "name: aws", "name: capi", 1),
			"the core provider must be named cluster-api"},
		{"a version without its v", strings.Replace(provider, "v2.8.0", "2.8.0", 1),
			`spec.version: Invalid value: "2.8.0": version must be a semantic version with a leading v`},
		{"a tenant selecting no clusters", tenant + "  clusters: {namespaces: [team-a]}\n",
			"spec.clusters: Invalid value: clusters: set a selector, names, or both"},
		{"a bake time of 5s", tenant + "  clusters: {names: [prod-1]}\n  rollout: {waveLabel: ring, bakeTime: 5s}\n",
			`spec.rollout.bakeTime: Invalid value: "5s": rollout.bakeTime must be at least 10s`},
		// In the order of their fields, whatever order the CEL validator met them in.
		{"two errors at once", provider + "  interval: 1s\n  timeout: 1s\n",
			`it is invalid: [spec.interval: Invalid value: "1s": interval must be at least 1m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := repository(t, map[string]string{"bad.yaml": tc.yaml, "good.yaml": strings.Replace(provider, "aws", "gcp", 1)})
			in, err := Load([]string{dir}, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Invalid) != 1 || !strings.Contains(in.Invalid[0], "bad.yaml, document 1: the API server would refuse") || !strings.Contains(in.Invalid[0], tc.want) {
				t.Fatalf("Invalid = %q, want one naming bad.yaml and saying %q", in.Invalid, tc.want)
			}
			if len(in.CRs) != 1 || in.CRs[0].GetName() != "gcp" {
				t.Errorf("CRs = %d, want only the valid provider", len(in.CRs))
			}
		})
	}
	// What the cluster holds (--cluster-file) is not judged: it is there.
	dir := repository(t, map[string]string{"live.yaml": provider + "  interval: 1s\n"})
	if in, err := Load([]string{dir}, true); err != nil || len(in.Invalid) != 0 || len(in.World) != 1 {
		t.Errorf("Load as the world: invalid %q, world %d, %v", in.Invalid, len(in.World), err)
	}
}
