package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/providerrelease"
)

// clusterctlTypes maps clusterctl's provider type constants
// (cmd/clusterctl/api/v1alpha3) to Capwright's type names.
var clusterctlTypes = map[string]string{
	"CoreProviderType":             v1alpha1.CoreProviderType,
	"BootstrapProviderType":        v1alpha1.BootstrapProviderType,
	"ControlPlaneProviderType":     v1alpha1.ControlPlaneProviderType,
	"InfrastructureProviderType":   v1alpha1.InfrastructureProviderType,
	"IPAMProviderType":             v1alpha1.IPAMProviderType,
	"RuntimeExtensionProviderType": v1alpha1.RuntimeExtensionProviderType,
	"AddonProviderType":            v1alpha1.AddonProviderType,
}

// TestClusterctlProvidersMatchClusterctl compares the table with
// clusterctl's own list in the sigs.k8s.io/cluster-api module source at
// ClusterctlVersion, both ways, so that it cannot drift unnoticed.
func TestClusterctlProvidersMatchClusterctl(t *testing.T) {
	upstream := clusterctlDefaults(t, filepath.Join(clusterAPIModuleDir(t), "cmd", "clusterctl", "client", "config", "providers_client.go"))
	if len(upstream) < 50 {
		t.Fatalf("read only %d providers from clusterctl's list: has its source changed shape?", len(upstream))
	}
	ours := map[string]string{}
	for _, p := range clusterctlProviders {
		key := p.Type + "/" + p.Name
		if _, dup := ours[key]; dup {
			t.Errorf("%s is twice in the table", key)
		}
		ours[key] = p.URL
	}
	for _, key := range sortedKeys(upstream) {
		switch got, ok := ours[key]; {
		case !ok:
			t.Errorf("clusterctl %s lists %s (%s); the table lacks it", ClusterctlVersion, key, upstream[key])
		case got != upstream[key]:
			t.Errorf("%s: the table has %s, clusterctl %s has %s", key, got, ClusterctlVersion, upstream[key])
		}
	}
	for _, key := range sortedKeys(ours) {
		if _, ok := upstream[key]; !ok {
			t.Errorf("the table lists %s (%s), which clusterctl %s does not", key, ours[key], ClusterctlVersion)
		}
	}
}

// TestClusterctlVersionIsPinned checks that the table's Cluster API version
// is the one go.mod pins.
func TestClusterctlVersionIsPinned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == "sigs.k8s.io/cluster-api/api" {
			if fields[1] != ClusterctlVersion {
				t.Errorf("go.mod pins sigs.k8s.io/cluster-api/api %s but the clusterctl provider table is of %s: update ClusterctlVersion and the table",
					fields[1], ClusterctlVersion)
			}
			return
		}
	}
	t.Fatal("go.mod does not require sigs.k8s.io/cluster-api/api")
}

func TestReleaseURL(t *testing.T) {
	for _, tc := range []struct{ providerType, name, want string }{
		{"core", "cluster-api", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"},
		{"infrastructure", "aws", "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml"},
		{"control-plane", "kubeadm", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/control-plane-components.yaml"},
		{"infrastructure", "docker", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/infrastructure-components-development.yaml"},
		{"ipam", "in-cluster", "https://github.com/kubernetes-sigs/cluster-api-ipam-provider-in-cluster/releases/latest/ipam-components.yaml"},
	} {
		got, ok := ReleaseURL(tc.providerType, tc.name)
		if !ok || got != tc.want {
			t.Errorf("ReleaseURL(%s, %s) = %q, %v; want %q", tc.providerType, tc.name, got, ok, tc.want)
		}
	}
	for _, unknown := range [][2]string{{"bootstrap", "aws"}, {"infrastructure", "nope"}, {"", "cluster-api"}} {
		if got, ok := ReleaseURL(unknown[0], unknown[1]); ok {
			t.Errorf("ReleaseURL(%s, %s) = %q, want none", unknown[0], unknown[1], got)
		}
	}
	// The OCI catalog is unchanged: it still knows only what Cluster API
	// publishes as artifacts.
	if got := Known(); !slices.Equal(got, []string{"bootstrap/kubeadm", "control-plane/kubeadm", "core/cluster-api"}) {
		t.Errorf("Known() = %v", got)
	}
}

// TestReleaseOf: TYPE/NAME as the CLI takes it resolves to the list's
// release URL, and back from a release URL to the name; the errors say
// what the list has.
func TestReleaseOf(t *testing.T) {
	url, err := ReleaseOf("infrastructure", "docker")
	if err != nil || url != "https://github.com/kubernetes-sigs/cluster-api/releases/latest/infrastructure-components-development.yaml" {
		t.Errorf("ReleaseOf(infrastructure, docker) = %q, %v", url, err)
	}
	src, err := providerrelease.ParseURL("https://github.com/Kubernetes-SIGs/cluster-api-provider-aws/releases/v2.13.0/infrastructure-components.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := ReleaseName(src, "infrastructure"); got != "aws" {
		t.Errorf("ReleaseName(%s) = %q, want aws", src.URL, got)
	}
	if got := ReleaseName(src, "bootstrap"); got != "" {
		t.Errorf("ReleaseName(%s, bootstrap) = %q, want none", src.URL, got)
	}
	var unknown *UnknownReleaseError
	if _, err := ReleaseOf("infrastructure", "nope"); !errors.As(err, &unknown) ||
		!strings.HasPrefix(err.Error(), `clusterctl v1.14.2 knows no infrastructure provider "nope" (it knows aws, azure,`) {
		t.Errorf("ReleaseOf(infrastructure, nope): %v", err)
	}
	var notType *ProviderTypeError
	if _, err := ReleaseOf("cloud", "aws"); !errors.As(err, &notType) ||
		err.Error() != `"cloud" is not a provider type; use one of core, bootstrap, control-plane, infrastructure, ipam, runtime-extension, addon` {
		t.Errorf("ReleaseOf(cloud, aws): %v", err)
	}
}

func TestClusterctlProvidersOrderAndURLs(t *testing.T) {
	all := ClusterctlProviders()
	if len(all) != len(clusterctlProviders) || all[0].Type != "core" || all[len(all)-1].Type != "addon" {
		t.Fatalf("ClusterctlProviders() = %v", all)
	}
	if names := KnownReleasesOfType("control-plane"); !slices.IsSorted(names) || !slices.Contains(names, "kubeadm") {
		t.Errorf("control-plane providers %v", names)
	}
	if known := KnownReleases(); len(known) != len(all) || known[0] != "core/cluster-api" {
		t.Errorf("KnownReleases() = %v", known)
	}
	for _, p := range all {
		src, err := providerrelease.ParseURL(p.URL)
		if err != nil {
			t.Errorf("%s/%s: %v", p.Type, p.Name, err)
			continue
		}
		if src.Kind != providerrelease.GitHub || src.Version != providerrelease.Latest || src.ComponentsPath == "" {
			t.Errorf("%s/%s: %s parses as %+v", p.Type, p.Name, p.URL, src)
		}
		u, err := src.FileURL("v1.2.3", providerrelease.MetadataFile)
		if err != nil || !strings.HasSuffix(u, "/releases/download/v1.2.3/metadata.yaml") {
			t.Errorf("%s/%s: metadata URL %q, %v", p.Type, p.Name, u, err)
		}
	}
}

// clusterAPIModuleDir finds the sigs.k8s.io/cluster-api module source at
// ClusterctlVersion in the module cache (`make tools` puts it there).
func clusterAPIModuleDir(t *testing.T) string {
	t.Helper()
	mod := "sigs.k8s.io/cluster-api@" + ClusterctlVersion
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	// Outside the main module: this must never touch go.mod or go.sum.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil && err == nil {
		err = jsonErr
	}
	if err != nil || info.Error != "" || info.Dir == "" {
		t.Fatalf("cannot find the %s module source to compare clusterctl's provider list with (%v %s %s): run `make tools` at the repository root, or `go mod download %s` with network access",
			mod, err, info.Error, strings.TrimSpace(stderr.String()), mod)
	}
	return info.Dir
}

// clusterctlDefaults reads the providers of clusterctl's defaults() list
// (`&provider{name: …, url: …, providerType: …}`) as type/name → URL.
func clusterctlDefaults(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing clusterctl's provider list: %v", err)
	}
	consts := map[string]string{}
	var defaults *ast.FuncDecl
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			if d.Tok != token.CONST {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		case *ast.FuncDecl:
			if d.Name.Name == "defaults" {
				defaults = d
			}
		}
	}
	if defaults == nil {
		t.Fatalf("%s has no defaults() function any more: update this test", file)
	}
	providers := map[string]string{}
	ast.Inspect(defaults, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "provider" {
			return true
		}
		var name, url, providerType string
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				t.Fatalf("a provider literal without keys in %s", file)
			}
			key, _ := kv.Key.(*ast.Ident)
			switch {
			case key == nil:
			case key.Name == "name":
				name = stringValue(t, kv.Value, consts)
			case key.Name == "url":
				url = stringValue(t, kv.Value, consts)
			case key.Name == "providerType":
				sel, ok := kv.Value.(*ast.SelectorExpr)
				if !ok {
					t.Fatalf("provider %s: providerType is not clusterctlv1.<Type>", name)
				}
				if providerType, ok = clusterctlTypes[sel.Sel.Name]; !ok {
					t.Fatalf("clusterctl's list uses provider type %s, which this test does not know: add it", sel.Sel.Name)
				}
			}
		}
		if name == "" || url == "" || providerType == "" {
			t.Fatalf("a provider of clusterctl's list lacks a name, URL or type (%q, %q, %q)", name, url, providerType)
		}
		providers[providerType+"/"+name] = url
		return false
	})
	return providers
}

func stringValue(t *testing.T, e ast.Expr, consts map[string]string) string {
	t.Helper()
	switch v := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(v.Value)
		if err != nil {
			t.Fatal(err)
		}
		return s
	case *ast.Ident:
		if s, ok := consts[v.Name]; ok {
			return s
		}
		t.Fatalf("clusterctl's list names the constant %s, which is not a string constant of the file", v.Name)
	}
	t.Fatalf("clusterctl's list has a value of type %T where a string was expected", e)
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
