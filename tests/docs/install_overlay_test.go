package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestInstallGuideSiteOverlayBuilds builds install.md's site overlay (the
// kustomization.yaml of "A site's own registry, tag and key") with
// kustomize over the example capwright.yaml it names, copied as written
// beside a cosign.pub, as a user commits them: the Secret the
// OCIRepository verifies with holds the key instead of the placeholder,
// and the patches reach the objects they name. tests/e2e/install applies
// the examples through overlays of the same form.
func TestInstallGuideSiteOverlayBuilds(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var overlay []byte
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(guide, -1) {
		if kustomizationFile(m[1]) {
			overlay = m[1]
		}
	}
	if overlay == nil {
		t.Fatal("docs/install.md shows no kustomization.yaml")
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "docs", "examples", "repository", "clusters", "management", "capwright.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"
	dir := t.TempDir()
	for name, data := range map[string][]byte{"kustomization.yaml": overlay, "capwright.yaml": example, "cosign.pub": []byte(key)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build of install.md's overlay over capwright.yaml: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var secrets, patched int
	for _, doc := range yamlDocuments(t, out) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string][]byte `json:"data"`
			Spec struct {
				URL    string `json:"url"`
				Images []struct {
					NewName string `json:"newName"`
				} `json:"images"`
			} `json:"spec"`
		}
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "Secret":
			secrets++
			if obj.Metadata.Name != "capwright-cosign-key" || !bytes.Equal(obj.Data["cosign.pub"], []byte(key)) {
				t.Errorf("the overlay's Secret %s holds %q, want cosign.pub as the file beside it", obj.Metadata.Name, obj.Data["cosign.pub"])
			}
		case "OCIRepository":
			if strings.HasPrefix(obj.Spec.URL, "oci://registry.internal.example/") {
				patched++
			}
		case "Kustomization":
			if len(obj.Spec.Images) == 1 && strings.HasPrefix(obj.Spec.Images[0].NewName, "registry.internal.example/") {
				patched++
			}
		}
	}
	if secrets != 1 || patched != 2 {
		t.Errorf("the overlay gave %d Secrets (want the example's one, replaced) and patched %d of the OCIRepository and Kustomization:\n%s", secrets, patched, out)
	}
}
