package docs

import (
	"os"
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
	data, err := os.ReadFile(filepath.Join(repoRoot, guide))
	if err != nil {
		t.Fatal(err)
	}
	decoder := strictDecoder(t)
	var providers []providersv1alpha1.Provider
	namespaces := map[string]bool{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(data, -1) {
		for _, doc := range yamlDocuments(t, m[1]) {
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", guide, err)
			}
			switch o := obj.(type) {
			case providersv1alpha1.Provider:
				providers = append(providers, o)
			case *corev1.Namespace:
				namespaces[o.Name] = true
			}
		}
	}
	// What the guide's `kubectl create secret generic NAME --from-literal=KEY=…`
	// puts into which Secret, and the namespaces it creates.
	secrets := map[string][]string{}
	secret := regexp.MustCompile(`kubectl -n (\S+) create secret generic (\S+) \\\n((?:\s*--from-literal=[A-Z_][A-Z0-9_]*=.*\n)+)`)
	for _, m := range secret.FindAllStringSubmatch(string(data), -1) {
		for _, k := range regexp.MustCompile(`--from-literal=([A-Z_][A-Z0-9_]*)=`).FindAllStringSubmatch(m[3], -1) {
			secrets[m[1]+"/"+m[2]] = append(secrets[m[1]+"/"+m[2]], k[1])
		}
	}
	for _, m := range regexp.MustCompile(`kubectl create namespace (\S+)`).FindAllStringSubmatch(string(data), -1) {
		namespaces[m[1]] = true
	}

	for _, m := range regexp.MustCompile(`cluster-api-provider-aws/releases/download/([^/\s]+)/`).FindAllStringSubmatch(string(data), -1) {
		if m[1] != plane.CAPAVersion {
			t.Errorf("%s downloads clusterawsadm %s; the provider it installs is %s", guide, m[1], plane.CAPAVersion)
		}
	}
	want := map[string]string{
		providersv1alpha1.CoreProviderType + "/cluster-api":     plane.CAPIVersion,
		providersv1alpha1.BootstrapProviderType + "/kubeadm":    plane.CAPIVersion,
		providersv1alpha1.ControlPlaneProviderType + "/kubeadm": plane.CAPIVersion,
		providersv1alpha1.InfrastructureProviderType + "/aws":   plane.CAPAVersion,
	}
	var got []string
	bin, err := bindir.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range providers {
		key := p.ProviderType() + "/" + p.GetName()
		got = append(got, key)
		spec := p.GetSpec()
		if spec.Version != want[key] {
			t.Errorf("%s: %s %s installs %s; the local plane installs %s from its release (tests/e2e/providers), keep them equal", guide, key, p.GetNamespace(), spec.Version, want[key])
		}
		if !namespaces[p.GetNamespace()] {
			t.Errorf("%s: nothing in the guide creates namespace %s of %s", guide, p.GetNamespace(), key)
		}
		loc, err := catalog.Locate(p, catalog.Options{})
		if err != nil {
			t.Errorf("%s: %s: %v", guide, key, err)
			continue
		}
		if spec.Source != nil || !loc.Catalog || !strings.HasPrefix(loc.Release, "https://github.com/kubernetes-sigs/") {
			t.Errorf("%s: %s comes from %+v; the guide says it comes from its GitHub release through the catalog (only spec.version)", guide, key, loc)
		}
		if _, inline := spec.Variables["AWS_B64ENCODED_CREDENTIALS"]; inline {
			t.Errorf("%s: %s has AWS credentials inline in spec.variables; the guide keeps them in the Secret of spec.configSecret", guide, key)
		}
		provided := map[string]bool{}
		for k := range spec.Variables {
			provided[k] = true
		}
		if spec.ConfigSecret != nil {
			keys, ok := secrets[p.GetNamespace()+"/"+spec.ConfigSecret.Name]
			if !ok {
				t.Errorf("%s: %s names configSecret %s, which the guide does not create in %s", guide, key, spec.ConfigSecret.Name, p.GetNamespace())
			}
			for _, k := range keys {
				provided[k] = true
			}
		}
		// The real components of that release, as the plane serves them.
		project := "capi"
		if p.ProviderType() == providersv1alpha1.InfrastructureProviderType {
			project = "capa"
		}
		file := filepath.Join(bin, "fixtures", project, spec.Version, clusterctl.ComponentsFile(p.ProviderType()))
		components, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the release fixture of %s (make tools renders it): %v", key, err)
		}
		vars, err := clusterctl.ParseVariables(components)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if missing := clusterctl.MissingVariables(vars, func(n string) bool { return provided[n] }); len(missing) > 0 {
			t.Errorf("%s: %s %s would be refused (MissingVariables): no value for %s", guide, key, spec.Version, strings.Join(missing, ", "))
		}
	}
	slices.Sort(got)
	wantKeys := make([]string, 0, len(want))
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	if !slices.Equal(got, wantKeys) {
		t.Errorf("%s installs %v; clusterctl init --infrastructure aws installs %v", guide, got, wantKeys)
	}
}
