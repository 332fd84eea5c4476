package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/convert"
)

// TestSupportMatrix: each row of docs/support.md states the versions the
// code, go.mod, the tools' pins (tests/tools) and the CRDs say, so a pin
// moved without the page (or the page without the pin) fails here.
func TestSupportMatrix(t *testing.T) {
	rows := supportRows(t)
	fluxMod := "tests/tools/flux/go.mod"
	want := map[string][]string{
		"Kubernetes": {
			"1.30 or later", kindAPIVersion(t, "manifests/rbac/manager_admission.yaml", "ValidatingAdmissionPolicy"),
			submatch(t, "tests/tools/main.go", `k8sVersion = "(v[^"]+)"`),
			"k8s.io " + modVersion(t, "go.mod", "k8s.io/client-go"),
		},
		"Flux": {
			submatch(t, "cmd/manager/main.go", `Flux (v\d+\.\d+) or later`) + " or later",
			"source-controller " + modVersion(t, fluxMod, "github.com/fluxcd/source-controller"),
			"kustomize-controller " + modVersion(t, fluxMod, "github.com/fluxcd/kustomize-controller"),
			"helm-controller " + modVersion(t, fluxMod, "github.com/fluxcd/helm-controller"),
			"notification-controller " + modVersion(t, fluxMod, "github.com/fluxcd/notification-controller"),
			"flux CLI " + modVersion(t, "tests/tools/fluxcli/go.mod", "github.com/fluxcd/flux2/v2"),
		},
		"Flux APIs Capwright writes": {
			"`" + sourcev1.GroupVersion.String() + "` (" + sourcev1.OCIRepositoryKind + ", " + sourcev1.ExternalArtifactKind + ")",
			"`" + kustomizev1.GroupVersion.String() + "` (" + kustomizev1.KustomizationKind + ")",
			"`" + helmv2.GroupVersion.String() + "` (" + helmv2.HelmReleaseKind + ")",
			"source-controller/api " + modVersion(t, "go.mod", "github.com/fluxcd/source-controller/api"),
			"kustomize-controller/api " + modVersion(t, "go.mod", "github.com/fluxcd/kustomize-controller/api"),
			"helm-controller/api " + modVersion(t, "go.mod", "github.com/fluxcd/helm-controller/api"),
		},
		"Cluster API providers": {
			"Cluster API " + strings.Join(reverse(quoted(submatch(t, "tests/tools/capi.go", `capiFixtureVersions = \[\]string\{([^}]*)\}`))), " and "),
			"Cluster API Provider AWS " + submatch(t, "tests/tools/capa.go", `capaVersion\s*=\s*"(v[^"]+)"`),
			"test runtime extension " + submatch(t, "tests/tools/capitest.go", `capiTestVersion\s*=\s*"(v[^"]+)"`),
		},
		"Contract kinds (CapwrightControlPlane, CapwrightCluster)": {
			"Cluster API " + modVersion(t, "tests/tools/capi/go.mod", "sigs.k8s.io/cluster-api"),
			contractLabel(t),
		},
		"cert-manager": {
			modVersion(t, "tests/tools/certmanager/go.mod", "github.com/cert-manager/cert-manager") + " CRDs",
			"chart " + submatch(t, "docs/examples/repository/infrastructure/cert-manager/cert-manager.yaml", `version: "([^"]+)"`),
		},
		"cluster-api-operator (to migrate from)": {
			"`" + convert.OperatorGroup + "/v1alpha2`",
			modVersion(t, "tests/tools/capioperator/go.mod", "sigs.k8s.io/cluster-api-operator"),
		},
		"Go (to build from source)": {
			"go " + submatch(t, "go.mod", `(?m)^go (\S+)`),
		},
	}
	for component, facts := range want {
		row, ok := rows[component]
		if !ok {
			t.Errorf("docs/support.md has no row %q", component)
			continue
		}
		for _, fact := range facts {
			if !strings.Contains(row, fact) {
				t.Errorf("docs/support.md, row %q, does not say %q (from the code, go.mod, tests/tools or the CRDs):\n%s", component, fact, row)
			}
		}
	}
	for component := range rows {
		if _, ok := want[component]; !ok {
			t.Errorf("docs/support.md, row %q: no check for it here; add one to TestSupportMatrix", component)
		}
	}
}

// supportRows maps the first cell of each row of support.md's table to
// the row.
func supportRows(t *testing.T) map[string]string {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "support.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 || strings.HasPrefix(line, "|---") || cells[0] == "| Component" {
			continue
		}
		rows[strings.TrimPrefix(cells[0], "| ")] = line
	}
	return rows
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func submatch(t *testing.T, path, expr string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(readRepoFile(t, path))
	if m == nil {
		t.Fatalf("%s: nothing matches %s", path, expr)
	}
	return m[1]
}

// modVersion is the version a go.mod requires of module.
func modVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	return submatch(t, gomod, `(?m)^\s*(?:require\s+)?`+regexp.QuoteMeta(module)+`\s+(v\S+)`)
}

func quoted(list string) []string {
	var out []string
	for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(list, -1) {
		out = append(out, q[1])
	}
	return out
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// kindAPIVersion is the apiVersion of the first object of kind in a
// manifest file.
func kindAPIVersion(t *testing.T, path, kind string) string {
	t.Helper()
	for _, doc := range strings.Split(readRepoFile(t, path), "\n---") {
		var obj struct{ APIVersion, Kind string }
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err == nil && obj.Kind == kind {
			return "`" + obj.APIVersion + "`"
		}
	}
	t.Fatalf("%s holds no %s", path, kind)
	return ""
}

// contractLabel is the Cluster API contract label the contract kinds'
// CRDs carry, as `cluster.x-k8s.io/<contract>: <versions>`.
func contractLabel(t *testing.T) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsyaml.Unmarshal([]byte(readRepoFile(t, "manifests/crd/bases/clusters.capwright.io_capwrightcontrolplanes.yaml")), crd); err != nil {
		t.Fatal(err)
	}
	for k, v := range crd.Labels {
		if strings.HasPrefix(k, "cluster.x-k8s.io/v") {
			return "`" + k + ": " + v + "`"
		}
	}
	t.Fatal("the CapwrightControlPlane CRD carries no cluster.x-k8s.io/<contract> label")
	return ""
}
