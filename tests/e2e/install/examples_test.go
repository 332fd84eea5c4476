package install

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// keySecret is the Secret the install examples verify Capwright's release
// with; they hold a placeholder a site replaces with the release's
// cosign.pub.
const keySecret = "capwright-cosign-key"

// jsonPatch is one kustomize patch of a site overlay: RFC 6902 operations
// on the object of kind and name.
type jsonPatch struct {
	kind, name string
	ops        []map[string]any
}

// op is one RFC 6902 operation.
func op(operation, path string, value any) map[string]any {
	return map[string]any{"op": operation, "path": path, "value": value}
}

// sourcePatch points the example's OCIRepository at url and tag on the
// plane's registry, which speaks plain HTTP.
func sourcePatch(url, tag string) jsonPatch {
	return jsonPatch{kind: "OCIRepository", name: "capwright", ops: []map[string]any{
		op("replace", "/spec/url", url),
		op("replace", "/spec/ref/tag", tag),
		op("add", "/spec/insecure", true),
	}}
}

// siteOverlay builds docs/examples/<name> as a site installs it
// (docs/install.md, "Your registry, tag and key"): the example copied as
// written, the release's cosign.pub beside it, and a kustomization.yaml
// whose patches carry the site's differences and whose secretGenerator
// replaces the example's key Secret from cosign.pub, built with kustomize
// (krusty, as kustomize-controller builds). The example's bytes reach
// kustomize unchanged; only the overlay changes what is applied.
func siteOverlay(ctx context.Context, t *testing.T, name string, patches ...jsonPatch) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := filepath.Base(name)
	if err := os.WriteFile(filepath.Join(dir, base), data, 0o644); err != nil {
		t.Fatal(err)
	}
	k := kusttypes.Kustomization{
		TypeMeta:  kusttypes.TypeMeta{APIVersion: kusttypes.KustomizationVersion, Kind: kusttypes.KustomizationKind},
		Resources: []string{base},
	}
	for _, p := range patches {
		ops, err := json.Marshal(p.ops)
		if err != nil {
			t.Fatal(err)
		}
		k.Patches = append(k.Patches, kusttypes.Patch{Patch: string(ops), Target: &kusttypes.Selector{
			ResId: resid.ResId{Gvk: resid.Gvk{Kind: p.kind}, Name: p.name},
		}})
	}
	if bytes.Contains(data, []byte("name: "+keySecret+"\n")) {
		if err := os.WriteFile(filepath.Join(dir, release.PublicKeyFile), releasePublicKey(ctx, t), 0o644); err != nil {
			t.Fatal(err)
		}
		k.SecretGenerator = []kusttypes.SecretArgs{{GeneratorArgs: kusttypes.GeneratorArgs{
			Namespace: "flux-system", Name: keySecret, Behavior: "replace",
			KvPairSources: kusttypes.KvPairSources{FileSources: []string{release.PublicKeyFile}},
			Options:       &kusttypes.GeneratorOptions{DisableNameSuffixHash: true},
		}}}
	}
	overlay, err := sigsyaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build of docs/examples/%s with the site overlay:\n%s\n%v", name, overlay, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := plane.DecodeYAML(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("docs/examples/%s: %v", name, err)
	}
	return objs
}

// releasePublicKey is the cosign.pub `make release COSIGN_KEY=…` wrote
// beside the suite's first release, which users get with the release; it
// must be the public half of the key the release was signed with.
func releasePublicKey(ctx context.Context, t *testing.T) []byte {
	t.Helper()
	r := released(ctx, t, firstVersion)
	if r.PublicKey == "" {
		t.Fatalf("the release %s, signed with a key, wrote no %s", firstVersion, release.PublicKeyFile)
	}
	pub, err := os.ReadFile(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := framework.ReleaseKey()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(pub), bytes.TrimSpace(key.PublicPEM)) {
		t.Fatalf("%s of the release %s is not the public half of the key it was signed with:\n%s", r.PublicKey, firstVersion, pub)
	}
	return pub
}

// exampleAsWritten decodes docs/examples/<name> as written: files a site
// commits without an overlay.
func exampleAsWritten(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := plane.DecodeYAML(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("docs/examples/%s: %v", name, err)
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
