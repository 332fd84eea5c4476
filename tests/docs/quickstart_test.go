package docs

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/tests/bindir"
	"github.com/capwright/capwright/tests/plane"
)

// TestQuickstartInstallsWhatClusterctlInitDoes reads the providers of
// docs/quickstart.md as a user applies them: exactly the four
// `clusterctl init --infrastructure aws` installs, each with only a
// version, from its GitHub release through the catalog (no mirror rule,
// as on a cluster that reaches github.com), at the versions the local
// plane installs from those releases, and with a value for every variable
// of the real components that has no default, the credentials from the
// Secret the guide creates rather than inline.
func TestQuickstartInstallsWhatClusterctlInitDoes(t *testing.T) {
	const guide = "docs/quickstart.md"
	q := readQuickstart(t, guide)
	for _, m := range regexp.MustCompile(`cluster-api-provider-aws/releases/download/([^/\s]+)/`).FindAllStringSubmatch(q.text, -1) {
		if m[1] != plane.CAPAVersion {
			t.Errorf("%s downloads clusterawsadm %s; the provider it installs is %s", guide, m[1], plane.CAPAVersion)
		}
	}
	for _, p := range q.providers {
		if _, inline := p.GetSpec().Variables["AWS_B64ENCODED_CREDENTIALS"]; inline {
			t.Errorf("%s: %s has AWS credentials inline in spec.variables; the guide keeps them in the Secret of spec.configSecret", guide, providerKey(p))
		}
	}
	q.checkCatalogReleases(t, "clusterctl init --infrastructure aws", map[string]string{
		providersv1alpha1.CoreProviderType + "/cluster-api":     plane.CAPIVersion,
		providersv1alpha1.BootstrapProviderType + "/kubeadm":    plane.CAPIVersion,
		providersv1alpha1.ControlPlaneProviderType + "/kubeadm": plane.CAPIVersion,
		providersv1alpha1.InfrastructureProviderType + "/aws":   plane.CAPAVersion,
	})
}

// quickstart is a quick start as a user follows it.
type quickstart struct {
	guide string
	text  string
	// providers are those of its YAML blocks, decoded strictly.
	providers []providersv1alpha1.Provider
	// namespaces are those its YAML or its `kubectl create namespace`
	// commands create.
	namespaces map[string]bool
	// secrets are the keys its `kubectl -n NS create secret generic NAME
	// --from-literal=KEY=…` commands put into NS/NAME.
	secrets map[string][]string
}

func readQuickstart(t *testing.T, guide string) quickstart {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, guide))
	if err != nil {
		t.Fatal(err)
	}
	q := quickstart{guide: guide, text: string(data), namespaces: map[string]bool{}, secrets: map[string][]string{}}
	decoder := strictDecoder(t)
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(data, -1) {
		for _, doc := range yamlDocuments(t, m[1]) {
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", guide, err)
			}
			switch o := obj.(type) {
			case providersv1alpha1.Provider:
				q.providers = append(q.providers, o)
			case *corev1.Namespace:
				q.namespaces[o.Name] = true
			}
		}
	}
	for _, m := range regexp.MustCompile(`kubectl create namespace (\S+)`).FindAllStringSubmatch(q.text, -1) {
		q.namespaces[m[1]] = true
	}
	secret := regexp.MustCompile(`kubectl -n (\S+) create secret generic (\S+) \\\n((?:\s*--from-literal=[A-Z_][A-Z0-9_]*=.*\n)+)`)
	for _, m := range secret.FindAllStringSubmatch(q.text, -1) {
		for _, k := range regexp.MustCompile(`--from-literal=([A-Z_][A-Z0-9_]*)=`).FindAllStringSubmatch(m[3], -1) {
			q.secrets[m[1]+"/"+m[2]] = append(q.secrets[m[1]+"/"+m[2]], k[1])
		}
	}
	return q
}

func providerKey(p providersv1alpha1.Provider) string { return p.ProviderType() + "/" + p.GetName() }

// fixtureProjects names the folder of bin/fixtures (make fixtures) that
// holds the real release files of each project the quick starts install.
var fixtureProjects = map[string]string{
	"https://github.com/kubernetes-sigs/cluster-api":              "capi",
	"https://github.com/kubernetes-sigs/cluster-api-provider-aws": "capa",
}

// checkCatalogReleases checks that the guide installs exactly the
// providers of want (TYPE/NAME → version, the versions the local plane
// installs from those releases), each in a namespace the guide creates,
// each from its GitHub release through the catalog (only spec.version,
// no mirror rule, as on a cluster that reaches github.com), and with a
// value for every variable without a default of the real components
// file the catalog names. It returns each provider's variables of that
// file.
func (q quickstart) checkCatalogReleases(t *testing.T, installs string, want map[string]string) map[string][]clusterctl.Variable {
	t.Helper()
	bin, err := bindir.Default()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]clusterctl.Variable{}
	var got []string
	for _, p := range q.providers {
		key, spec := providerKey(p), p.GetSpec()
		got = append(got, key)
		if spec.Version != want[key] {
			t.Errorf("%s: %s %s installs %s; the local plane installs %s from its release (tests/e2e/providers), keep them equal", q.guide, key, p.GetNamespace(), spec.Version, want[key])
		}
		if !q.namespaces[p.GetNamespace()] {
			t.Errorf("%s: nothing in the guide creates namespace %s of %s", q.guide, p.GetNamespace(), key)
		}
		loc, err := catalog.Locate(p, catalog.Options{})
		if err != nil {
			t.Errorf("%s: %s: %v", q.guide, key, err)
			continue
		}
		repo, _, _ := strings.Cut(loc.Release, "/releases/")
		project, known := fixtureProjects[repo]
		if spec.Source != nil || !loc.Catalog || !known {
			t.Errorf("%s: %s comes from %+v; the guide says it comes from its GitHub release through the catalog (only spec.version)", q.guide, key, loc)
			continue
		}
		provided := map[string]bool{}
		for k := range spec.Variables {
			provided[k] = true
		}
		if spec.ConfigSecret != nil {
			keys, ok := q.secrets[p.GetNamespace()+"/"+spec.ConfigSecret.Name]
			if !ok {
				t.Errorf("%s: %s names configSecret %s, which the guide does not create in %s", q.guide, key, spec.ConfigSecret.Name, p.GetNamespace())
			}
			for _, k := range keys {
				provided[k] = true
			}
		}
		// The real components file of that release, as the catalog names it.
		file := filepath.Join(bin, "fixtures", project, spec.Version, path.Base(loc.Release))
		components, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the release fixture of %s (make fixtures renders it): %v", key, err)
		}
		vars[key], err = clusterctl.ParseVariables(components)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if missing := clusterctl.MissingVariables(vars[key], func(n string) bool { return provided[n] }); len(missing) > 0 {
			t.Errorf("%s: %s %s would be refused (MissingVariables): no value for %s", q.guide, key, spec.Version, strings.Join(missing, ", "))
		}
	}
	if wantKeys := slices.Sorted(maps.Keys(want)); !slices.Equal(slices.Sorted(slices.Values(got)), wantKeys) {
		t.Errorf("%s installs %v; %s installs %v", q.guide, got, installs, wantKeys)
	}
	return vars
}
