package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact/registrytest"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const tenantYAML = `apiVersion: tenancy.capwright.io/v1alpha1
kind: Tenant
metadata: {name: team-a}
spec:
  clusters: {selector: {matchLabels: {env: prod}}}
  stack: {kustomize: {url: oci://ghcr.io/example/stacks/baseline, tag: v1.0.0}}
`

const clusterYAML = `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod-1, namespace: tenant-team-a, labels: {env: prod}}
spec: {}
`

// TestBuildExitCodes: the objects on stdout (YAML, or one JSON List), the
// notes on stderr; a refusal is exit code 8 with the manager's reason,
// input that is not YAML is 2 with nothing on stdout, an unknown
// Capwright kind 2 with the rest printed, an unreachable registry 5
// naming the offline alternative.
func TestBuildExitCodes(t *testing.T) {
	noDockerCredentials(t)
	dir := t.TempDir()
	tenant := writeFile(t, dir, "tenant.yaml", tenantYAML)
	clusters := writeFile(t, dir, "clusters.yaml", clusterYAML)

	stdout, stderr, code := cliRun(t, "build", "-f", tenant, "--cluster-file", clusters)
	if code != 0 || !strings.Contains(stdout, "# Tenant team-a\n---\napiVersion: v1\nkind: Namespace") || !strings.Contains(stderr, "Cluster tenant-team-a/prod-1 taken as provisioned") {
		t.Fatalf("build: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, _, code = cliRun(t, "build", "-f", tenant, "--cluster-file", clusters, "-o", "json")
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || list.Kind != "List" || len(list.Items) < 5 {
		t.Fatalf("build -o json: exit %d, %v, %d items:\n%s", code, err, len(list.Items), stdout)
	}

	forbidden := writeFile(t, dir, "forbidden.yaml", strings.Replace(tenantYAML, "clusters: {selector: {matchLabels: {env: prod}}}", "clusters: {namespaces: [cert-manager], selector: {}}", 1))
	_, stderr, code = cliRun(t, "build", "-f", forbidden)
	if code != exitNotReady || !strings.Contains(stderr, "refused: Tenant team-a: ClustersReady=False NamespaceNotAllowed") {
		t.Errorf("a refused Tenant: exit %d, want %d:\n%s", code, exitNotReady, stderr)
	}

	// What the API server would refuse is left out, in its words.
	invalid := writeFile(t, dir, "invalid.yaml", strings.Replace(tenantYAML, "clusters: {selector: {matchLabels: {env: prod}}}", "clusters: {namespaces: [team-a]}", 1))
	stdout, stderr, code = cliRun(t, "build", "-f", invalid)
	if code != exitNotReady || stdout != "" || !strings.Contains(stderr, "invalid: "+invalid+", document 1: the API server would refuse Tenant \"team-a\": it is invalid: spec.clusters: Invalid value: clusters: set a selector, names, or both") {
		t.Errorf("an invalid Tenant: exit %d, want %d, stdout %q:\n%s", code, exitNotReady, stdout, stderr)
	}

	bad := writeFile(t, dir, "bad.yaml", "kind: [unclosed\n")
	stdout, stderr, code = cliRun(t, "build", "-f", tenant, "-f", bad)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "bad.yaml, document 1, is not YAML or JSON") {
		t.Errorf("not YAML: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}

	future := writeFile(t, dir, "future.yaml", "apiVersion: tenancy.capwright.io/v2\nkind: Tenant\nmetadata: {name: later}\n")
	stdout, stderr, code = cliRun(t, "build", "-f", tenant, "-f", future, "--cluster-file", clusters)
	if code != exitUsage || !strings.Contains(stdout, "# Tenant team-a") || !strings.Contains(stderr, "skipped: "+future) {
		t.Errorf("an unknown version: exit %d, want the rest printed and 2:\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	reg := registrytest.New(t, registrytest.Options{})
	reg.Close()
	core := writeFile(t, dir, "core.yaml", fmt.Sprintf(`apiVersion: providers.capwright.io/v1alpha1
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec: {version: v1.14.2, source: {oci: {url: oci://%s/manifests/core-cluster-api, insecure: true}}}
`, reg.Host))
	_, stderr, code = cliRun(t, "build", "-f", core, "--registry-timeout", "5s")
	if code != exitNetwork || !strings.Contains(stderr, reg.Host) || !strings.Contains(stderr, "--layout DIR") {
		t.Errorf("an unreachable registry: exit %d, want %d naming the host and --layout:\n%s", code, exitNetwork, stderr)
	}
}
