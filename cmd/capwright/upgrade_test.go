package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/status"
	"github.com/capwright/capwright/internal/upgrades"
)

// fakeAPIServer answers the discovery and list requests of upgrade plan:
// the provider kinds when providers is not nil, no Capwright at all
// otherwise. The real cluster is the e2e test's; this one gives the
// command's bad cases a server to fail against.
func fakeAPIServer(t *testing.T, providers map[string][]any) string {
	t.Helper()
	group := v1alpha1.GroupVersion.Group
	gv := v1alpha1.GroupVersion.String()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/api":
			write(w, map[string]any{"kind": "APIVersions", "versions": []string{"v1"}})
		case p == "/api/v1":
			write(w, map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{}})
		case p == "/apis":
			groups := []any{}
			if providers != nil {
				groups = append(groups, map[string]any{"name": group, "versions": []any{map[string]any{"groupVersion": gv, "version": "v1alpha1"}},
					"preferredVersion": map[string]any{"groupVersion": gv, "version": "v1alpha1"}})
			}
			write(w, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
		case p == "/apis/"+gv && providers != nil:
			resources := []any{}
			for _, k := range providerKinds() {
				resources = append(resources, map[string]any{"name": k.Resource, "singularName": strings.ToLower(k.Kind), "namespaced": true,
					"kind": k.Kind, "verbs": []string{"get", "list", "watch"}})
			}
			write(w, map[string]any{"kind": "APIResourceList", "groupVersion": gv, "resources": resources})
		case strings.HasPrefix(p, "/apis/"+gv+"/") && providers != nil:
			resource := strings.TrimPrefix(p, "/apis/"+gv+"/")
			for _, k := range providerKinds() {
				if k.Resource == resource {
					items := providers[k.Kind]
					if items == nil {
						items = []any{}
					}
					write(w, map[string]any{"apiVersion": gv, "kind": k.Kind + "List", "metadata": map[string]any{}, "items": items})
					return
				}
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "` + srv.URL + `"}
contexts:
- name: fake
  context: {cluster: fake, user: fake}
current-context: fake
users:
- name: fake
  user: {token: not-a-secret}
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func installedProvider(kind, namespace, name, version, url string) map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind,
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     map[string]any{"version": version, "source": map[string]any{"oci": map[string]any{"url": url, "insecure": true}}},
		"status": map[string]any{"installedVersion": version, "contract": "v1beta2",
			"artifact": map[string]any{"url": url, "revision": version + "@sha256:0", "digest": "sha256:0"}},
	}
}

func pushPlanVersion(t *testing.T, reg *registrytest.Registry, providerType, name, version, metadata string) string {
	t.Helper()
	ref := reg.Ref("capi/manifests/"+providerType+"-"+name, version)
	files := map[string][]byte{"metadata.yaml": []byte(metadata),
		providerType + "-components.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n")}
	if _, err := artifact.Push(context.Background(), ref, files, artifact.ProviderAnnotations(providerType, name, version, ""), reg.Access()); err != nil {
		t.Fatal(err)
	}
	return ref.URL()
}

func TestUpgradePlan(t *testing.T) {
	noDockerCredentials(t)
	reg := registrytest.New(t, registrytest.Options{})
	const coreMeta = "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 1, minor: 14, contract: v1beta2}\n- {major: 1, minor: 15, contract: v1beta3}\n"
	const infraMeta = "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 0, minor: 1, contract: v1beta2}\n- {major: 0, minor: 2, contract: v1beta3}\n"
	var coreURL, infraURL string
	for _, v := range []string{"v1.14.2", "v1.14.3", "v1.15.0"} {
		coreURL = pushPlanVersion(t, reg, "core", "cluster-api", v, coreMeta)
	}
	for _, v := range []string{"v0.1.0", "v0.2.0"} {
		infraURL = pushPlanVersion(t, reg, "infrastructure", "up", v, infraMeta)
	}
	kubeconfig := fakeAPIServer(t, map[string][]any{
		"CoreProvider":           {installedProvider("CoreProvider", "capi", "cluster-api", "v1.14.2", coreURL)},
		"InfrastructureProvider": {installedProvider("InfrastructureProvider", "up", "up", "v0.1.0", infraURL)},
	})

	out, stderr, code := cliRun(t, "upgrade", "plan", "--kubeconfig", kubeconfig, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var plan upgrades.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(plan.Providers) != 2 {
		t.Fatalf("plan: %s", out)
	}
	core, infra := plan.Providers[0], plan.Providers[1]
	// v1.15.0 moves the core to v1beta3, which the infrastructure
	// provider's v0.2.0 implements: every provider can follow, so the core
	// may go; v0.2.0 itself needs that core first.
	if core.Next != "v1.15.0" || len(core.Candidates) != 2 || !core.Candidates[0].Usable() || !core.Candidates[1].Usable() {
		t.Errorf("core: %+v", core)
	}
	if infra.Next != "" || len(infra.Candidates) != 1 || infra.Candidates[0].Blocked != upgrades.BlockedCoreFirst ||
		!strings.Contains(infra.Candidates[0].Message, "upgrade the core provider to v1.15.0 (contract v1beta3) first") {
		t.Errorf("infrastructure: %+v", infra)
	}

	yamlOut, _, code := cliRun(t, "upgrade", "plan", "--kubeconfig", kubeconfig, "-o", "yaml")
	var fromYAML upgrades.Plan
	if err := yaml.Unmarshal([]byte(yamlOut), &fromYAML); code != exitOK || err != nil || !reflect.DeepEqual(fromYAML, plan) {
		t.Errorf("-o yaml (exit %d, %v) says otherwise than -o json:\n%s", code, err, yamlOut)
	}

	table, _, code := cliRun(t, "upgrade", "plan", "--kubeconfig", kubeconfig)
	if code != exitOK || !strings.Contains(table, "blocked: CoreUpgradeRequired") || !strings.Contains(table, "(blocked: see below)") {
		t.Errorf("table (exit %d):\n%s", code, table)
	}

	// The registry gone: the error names it and what to do, exit code 5.
	reg.Close()
	_, stderr, code = cliRun(t, "upgrade", "plan", "--kubeconfig", kubeconfig)
	if code != exitNetwork || !strings.Contains(stderr, reg.Host) || !strings.Contains(stderr, "no offline form") ||
		!strings.Contains(stderr, "2 of 2 providers could not be checked") {
		t.Errorf("registry gone: exit %d, %s", code, stderr)
	}
}

func TestUpgradePlanBadInput(t *testing.T) {
	noDockerCredentials(t)
	_, stderr, code := cliRun(t, "upgrade", "plan", "--kubeconfig", fakeAPIServer(t, nil))
	if code != exitNotFound || !strings.Contains(stderr, "does not serve coreproviders.providers.capwright.io") ||
		!strings.Contains(stderr, "Capwright is not installed there") || !strings.Contains(stderr, "--context") {
		t.Errorf("no Capwright: exit %d, %s", code, stderr)
	}

	_, stderr, code = cliRun(t, "upgrade", "plan", "--kubeconfig", fakeAPIServer(t, map[string][]any{}), "-o", "xml")
	if code != exitUsage || !strings.Contains(stderr, "choose table, json or yaml") {
		t.Errorf("-o xml: exit %d, %s", code, stderr)
	}

	out, stderr, code := cliRun(t, "upgrade", "plan", "--kubeconfig", fakeAPIServer(t, map[string][]any{}))
	if code != exitOK || !strings.Contains(out, "No provider is installed") {
		t.Errorf("no providers: exit %d, %s%s", code, out, stderr)
	}
}

// providerKinds are the provider kinds of status.Kinds.
func providerKinds() []status.Kind {
	var out []status.Kind
	for _, k := range status.Kinds() {
		if k.Group == v1alpha1.GroupVersion.Group {
			out = append(out, k)
		}
	}
	return out
}
