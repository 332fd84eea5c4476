package convert

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/envsubst"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// installed renders the real core components of Cluster API v1.13.6 as
// clusterctl init does with vars (defaults for the rest) and returns the
// inventory entry clusterctl writes, with the Deployments that run and
// the release's components file.
func installed(t *testing.T, vars map[string]string) InventoryProvider {
	t.Helper()
	return install(t, InventoryProvider{Namespace: "capi-system", Name: "cluster-api", ProviderName: "cluster-api", Type: "CoreProvider",
		Version: clusterctltest.Previous}, "core-components.yaml", vars)
}

// installedDocker is Cluster API's Docker provider (CAPD) of release
// v1.14.2 as clusterctl init --infrastructure docker installs it with
// vars: its release file, infrastructure-components-development.yaml,
// whose DOCKER_HOST env is ${CAPD_DOCKER_HOST:=""}.
func installedDocker(t *testing.T, vars map[string]string) InventoryProvider {
	t.Helper()
	return install(t, InventoryProvider{Namespace: "capd-system", Name: "infrastructure-docker", ProviderName: "docker", Type: "InfrastructureProvider",
		Version: clusterctltest.Current}, "infrastructure-components-development.yaml", vars)
}

// install completes p, clusterctl's inventory entry, with its labels, the
// release's components file and the Deployments it runs once rendered
// with vars.
func install(t *testing.T, p InventoryProvider, file string, vars map[string]string) InventoryProvider {
	t.Helper()
	p.Labels = map[string]string{"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": p.Name}
	p.Components = clusterctltest.Read(t, p.Version, file)
	p.Deployments = renderedDeployments(t, p.Components, vars)
	return p
}

// renderedDeployments renders a components file as clusterctl init does
// with vars (defaults for the rest) and returns the Deployments that run.
func renderedDeployments(t *testing.T, components []byte, vars map[string]string) []appsv1.Deployment {
	t.Helper()
	rendered, err := envsubst.Eval(string(components), func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return deployments(t, rendered)
}

// deployments decodes the Deployments of a rendered components file.
func deployments(t *testing.T, rendered string) []appsv1.Deployment {
	t.Helper()
	var out []appsv1.Deployment
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rendered)))
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte("kind: Deployment\n")) {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
}

func convertInventoryOne(t *testing.T, p InventoryProvider) Converted {
	t.Helper()
	out := Convert([]Document{InventoryDocument("cluster test", p)})
	if len(out) != 1 {
		t.Fatalf("got %d results", len(out))
	}
	return out[0]
}

func findingFields(c Converted, sev Severity) []string {
	var out []string
	for _, f := range c.Findings {
		if f.Severity == sev {
			out = append(out, f.Field)
		}
	}
	return out
}

// TestInventoryAtDefaults: a core clusterctl installed with every variable
// at its default converts to the same provider at the installed version,
// from the catalog, with nothing needing attention.
func TestInventoryAtDefaults(t *testing.T) {
	c := convertInventoryOne(t, installed(t, nil))
	p, ok := c.Object.(*v1alpha1.CoreProvider)
	if !ok {
		t.Fatalf("want a CoreProvider, got %T", c.Object)
	}
	if p.Name != "cluster-api" || p.Namespace != "capi-system" || p.Spec.Version != "v1.13.6" || p.Spec.Source != nil || p.Spec.ConfigSecret != nil {
		t.Errorf("converted to %s/%s %+v", p.Namespace, p.Name, p.Spec)
	}
	if NeedAttention(c.Findings) {
		t.Errorf("attention at defaults:\n%s", findingsText(c))
	}
	if got := findingFields(c, Note); !slices.Equal(got, []string{"inventory"}) {
		t.Errorf("notes %v, want only the inventory's:\n%s", got, findingsText(c))
	}
	data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("# Converted by capwright convert from clusterctl.cluster.x-k8s.io/v1alpha3 Provider capi-system/cluster-api (cluster test, clusterctl inventory).\n")) {
		t.Errorf("header:\n%s", data)
	}
}

// TestInventoryVariablesGivenToClusterctl: the variables clusterctl was
// given show in the running Deployment's arguments; they are named, the
// CR names a Secret to hold them, and their values appear nowhere.
func TestInventoryVariablesGivenToClusterctl(t *testing.T) {
	c := convertInventoryOne(t, installed(t, map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":18443", "EXP_MACHINE_POOL": "false", "CLUSTER_TOPOLOGY": "false"}))
	want := []string{"variables.CAPI_DIAGNOSTICS_ADDRESS", "variables.EXP_MACHINE_POOL", "spec.configSecret"}
	if got := findingFields(c, Attention); !slices.Equal(got, want) {
		t.Errorf("attention on %v, want %v (CLUSTER_TOPOLOGY was given its default):\n%s", got, want, findingsText(c))
	}
	if cs := c.Object.GetSpec().ConfigSecret; cs == nil || cs.Name != "cluster-api-variables" {
		t.Errorf("configSecret %+v, want cluster-api-variables", cs)
	}
	data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	text := findingsText(c) + string(data)
	if strings.Contains(text, "18443") {
		t.Errorf("a value was printed:\n%s", text)
	}
	for _, s := range []string{"keys CAPI_DIAGNOSTICS_ADDRESS, EXP_MACHINE_POOL", "argument --feature-gates", `default (":8443")`} {
		if !strings.Contains(text, s) {
			t.Errorf("the findings do not say %q:\n%s", s, text)
		}
	}
}

// TestInventoryDockerAtDefaults: CAPD installed by clusterctl with nothing
// given runs DOCKER_HOST as the empty string, the value its release's
// default ${CAPD_DOCKER_HOST:=""} renders to: nothing needs attention.
// Given a value, the variable is named.
func TestInventoryDockerAtDefaults(t *testing.T) {
	p := installedDocker(t, nil)
	if env := dockerHostEnv(t, p); env.Value != "" || env.ValueFrom != nil {
		t.Fatalf("DOCKER_HOST runs as %+v, want the empty string", env)
	}
	c := convertInventoryOne(t, p)
	if _, ok := c.Object.(*v1alpha1.InfrastructureProvider); !ok {
		t.Fatalf("want an InfrastructureProvider, got %T", c.Object)
	}
	if got := findingFields(c, Attention); len(got) != 0 {
		t.Errorf("attention on %v at defaults, want none:\n%s", got, findingsText(c))
	}

	c = convertInventoryOne(t, installedDocker(t, map[string]string{"CAPD_DOCKER_HOST": "tcp://docker.example.com:2376"}))
	if got, want := findingFields(c, Attention), []string{"variables.CAPD_DOCKER_HOST", "spec.configSecret"}; !slices.Equal(got, want) {
		t.Errorf("attention on %v, want %v:\n%s", got, want, findingsText(c))
	}
}

// dockerHostEnv is the DOCKER_HOST env of CAPD's running manager.
func dockerHostEnv(t *testing.T, p InventoryProvider) corev1.EnvVar {
	t.Helper()
	for _, d := range p.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "DOCKER_HOST" {
					return e
				}
			}
		}
	}
	t.Fatal("no container of CAPD's Deployments has DOCKER_HOST")
	return corev1.EnvVar{}
}

// TestYAMLScalar: a default that is the whole value reads as YAML reads it.
func TestYAMLScalar(t *testing.T) {
	for text, want := range map[string]string{
		`""`: "", `''`: "", "": "", "~": "", "null": "", `"a b"`: "a b", `'x'`: "x", "x": "x",
		":8443": ":8443", "false": "false", "a: b": "a: b", `"open`: `"open`,
	} {
		if got := yamlScalar(text); got != want {
			t.Errorf("yamlScalar(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestInventoryImageOverride: an image other than the release's (clusterctl's
// images: setting) is reported with the spec.images entry to write.
func TestInventoryImageOverride(t *testing.T) {
	p := installed(t, nil)
	p.Deployments[0].Spec.Template.Spec.Containers[0].Image = "mirror.example.com/capi/cluster-api-controller:v1.13.6"
	c := convertInventoryOne(t, p)
	if got := findingFields(c, Attention); !slices.Equal(got, []string{"images"}) {
		t.Fatalf("attention on %v, want images:\n%s", got, findingsText(c))
	}
	if !strings.Contains(findingsText(c), "{name: registry.k8s.io/cluster-api/cluster-api-controller, newName:") {
		t.Errorf("the finding does not give the spec.images entry:\n%s", findingsText(c))
	}
}

// TestInventoryEdges: what cannot be converted as it is.
func TestInventoryEdges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*InventoryProvider)
		// converted tells whether a CR is written.
		converted bool
		field     string
		text      string
		severity  Severity
	}{
		{"not in the catalog", func(p *InventoryProvider) {
			p.Type, p.ProviderName, p.Name, p.Namespace = "InfrastructureProvider", "acme", "infrastructure-acme", "acme-system"
			p.Deployments, p.Components = nil, nil
		}, true, "providerName", "Set spec.source.release.url", Attention},
		{"no Deployment", func(p *InventoryProvider) { p.Deployments = nil }, true, "deployments", "does not run where clusterctl recorded it", Attention},
		{"a Deployment elsewhere", func(p *InventoryProvider) { p.Deployments[0].Namespace = "other" }, true, "deployments", "would install a second copy", Attention},
		{"release unreadable", func(p *InventoryProvider) { p.Components, p.ComponentsError = nil, "release not found" }, true, "variables", "release not found", Attention},
		{"not a version", func(p *InventoryProvider) { p.Version = "1.13.6" }, true, "version", "leading v", Attention},
		{"core named otherwise", func(p *InventoryProvider) { p.ProviderName = "capi" }, true, "providerName", "must be named cluster-api", Attention},
		{"unknown type", func(p *InventoryProvider) { p.Type = "WidgetProvider" }, false, "type", "not a clusterctl provider type", Attention},
		{"already Capwright's", func(p *InventoryProvider) {
			p.Labels[v1alpha1.ProviderKindLabel], p.Labels[v1alpha1.ProviderNameLabel] = "CoreProvider", "cluster-api"
		}, false, "metadata.labels", "already manages this provider", Note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := installed(t, nil)
			tc.change(&p)
			c := convertInventoryOne(t, p)
			if (c.Object != nil) != tc.converted {
				t.Errorf("converted: %v, want %v", c.Object != nil, tc.converted)
			}
			for _, f := range c.Findings {
				if f.Field == tc.field && f.Severity == tc.severity && strings.Contains(f.Message, tc.text) {
					return
				}
			}
			t.Errorf("no %s finding on %s saying %q:\n%s", tc.severity, tc.field, tc.text, findingsText(c))
		})
	}
}

// TestInventoryOfOperatorProvider: cluster-api-operator installs through
// clusterctl's library, so its providers are in the inventory as well; the
// operator's CR is converted, the inventory entry left out.
func TestInventoryOfOperatorProvider(t *testing.T) {
	docs, err := Decode("operator.yaml", []byte(`apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec: {version: v1.13.6}
`))
	if err != nil {
		t.Fatal(err)
	}
	out := Convert(append(docs, InventoryDocument("cluster test", installed(t, nil))))
	if out[0].Object == nil || out[1].Object != nil {
		t.Fatalf("want the operator CR converted and the inventory entry left out, got %v and %v", out[0].Object, out[1].Object)
	}
	if len(out[1].Findings) != 1 || !strings.Contains(out[1].Findings[0].Message, "cluster-api-operator's CoreProvider capi-system/cluster-api") {
		t.Errorf("inventory findings:\n%s", findingsText(out[1]))
	}
	for _, f := range out[0].Findings {
		if f.Field == "metadata.name" && f.Severity == Attention {
			t.Errorf("reported as a duplicate: %s", f)
		}
	}
}

// TestInventoryRequiredVariables: a variable without default was given
// to clusterctl whether or not it shows in a Deployment.
func TestInventoryRequiredVariables(t *testing.T) {
	components := []byte(`apiVersion: v1
kind: Secret
metadata: {name: acme-credentials, namespace: acme-system}
stringData:
  credentials: ${ACME_CREDENTIALS}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: acme-controller-manager, namespace: acme-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: registry.example.com/acme:v0.1.0
        args: ["--region=${ACME_REGION}", "--leader-elect"]
        env:
        - {name: ACME_MODE, value: "${ACME_MODE:=fast}"}
`)
	d := deployments(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: acme-controller-manager, namespace: acme-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: registry.example.com/acme:v0.1.0
        args: ["--region=moon-1", "--leader-elect"]
        env:
        - {name: ACME_MODE, value: fast}
`)
	p := InventoryProvider{Namespace: "acme-system", Name: "infrastructure-acme", ProviderName: "acme", Type: "InfrastructureProvider", Version: "v0.1.0", Deployments: d, Components: components}
	c := convertInventoryOne(t, p)
	want := []string{"providerName", "variables.ACME_CREDENTIALS", "variables.ACME_REGION", "spec.configSecret"}
	if got := findingFields(c, Attention); !slices.Equal(got, want) {
		t.Errorf("attention on %v, want %v:\n%s", got, want, findingsText(c))
	}
	text := findingsText(c)
	for _, s := range []string{"shows in Deployment acme-system/acme-controller-manager, container manager, argument --region", "went into objects other than the Deployments", "keys ACME_CREDENTIALS, ACME_REGION"} {
		if !strings.Contains(text, s) {
			t.Errorf("findings do not say %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "moon-1") {
		t.Errorf("a value was printed:\n%s", text)
	}
}

// TestMatchTemplate reads variables back from rendered strings.
func TestMatchTemplate(t *testing.T) {
	for _, tc := range []struct {
		template, running string
		ok                bool
		values            map[string]string
	}{
		{"--a=${A:=x}", "--a=y", true, map[string]string{"A": "y"}},
		{"--g=P=${P:=true},Q=${Q:-false}", "--g=P=false,Q=false", true, map[string]string{"P": "false", "Q": "false"}},
		{"--v=${A}", "--w=1", false, nil},
		{"${A}-${A}", "x-y", false, nil},
		{"${A}-${A}", "x-x", true, map[string]string{"A": "x"}},
		{"--n=${A:=${B}}", "--n=1", false, nil},
		{"--s=${A,,}", "--s=x", false, nil},
		{"--plain", "--plain", false, nil},
	} {
		got, ok := matchTemplate(tc.template, tc.running)
		if ok != tc.ok {
			t.Errorf("%q ← %q: ok %v, want %v", tc.template, tc.running, ok, tc.ok)
			continue
		}
		for _, v := range got {
			if tc.values[v.name] != v.value {
				t.Errorf("%q ← %q: %s = %q, want %q", tc.template, tc.running, v.name, v.value, tc.values[v.name])
			}
		}
	}
}
