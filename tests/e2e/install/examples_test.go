package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// What the install guide's examples name, and what stands in for it on the
// plane.
const (
	// exampleReleaseRegistry is where Capwright's releases are published.
	exampleReleaseRegistry = "ghcr.io/capwright"
	// exampleSiteRegistry is the air-gapped site's registry.
	exampleSiteRegistry = "registry.internal.example"
	// exampleVersion is the Capwright version the examples install.
	exampleVersion = "v0.1.0"
)

// example reads docs/examples/<name> as the guide tells users to commit it,
// with the plane's registry in place of the public and the site's registry,
// version in place of the examples' version, and the suite's release key
// in place of Capwright's. The plane's registry
// speaks plain HTTP, so OCIRepositories get spec.insecure (the only change
// that is not a substitution).
func example(t *testing.T, name, version string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	if version != "" && !bytes.Contains(data, []byte("tag: "+exampleVersion)) {
		t.Fatalf("docs/examples/%s does not install tag %s any more; update exampleVersion", name, exampleVersion)
	}
	// The release key of the suite where a user pastes Capwright's cosign.pub.
	if bytes.Contains(data, []byte("-----BEGIN PUBLIC KEY-----")) {
		key, err := framework.ReleaseKey()
		if err != nil {
			t.Fatal(err)
		}
		if data, err = framework.WithPublicKey(data, key); err != nil {
			t.Fatalf("docs/examples/%s: %v", name, err)
		}
	}
	// The public release registry is releasePrefix() on the plane's
	// registry. The site's registry is the plane's too: Capwright's release
	// mirrored under sitePrefix(), the Cluster API providers where the
	// suite published them.
	text := string(data)
	text = strings.ReplaceAll(text, exampleReleaseRegistry, releasePrefix())
	text = strings.ReplaceAll(text, exampleSiteRegistry+"/capwright/", sitePrefix()+"/capwright/")
	text = strings.ReplaceAll(text, exampleSiteRegistry, env.Registry.Host)
	if version != "" {
		text = strings.ReplaceAll(text, "tag: "+exampleVersion, "tag: "+version)
	}
	objs, err := plane.DecodeYAML(strings.NewReader(text))
	if err != nil {
		t.Fatalf("docs/examples/%s: %v", name, err)
	}
	for _, o := range objs {
		if o.GetKind() == "OCIRepository" {
			if err := unstructured.SetNestedField(o.Object, true, "spec", "insecure"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return objs
}

// only returns the single object of kind in objs.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s in the example, found %d", kind, len(found))
	}
	return found[0]
}
