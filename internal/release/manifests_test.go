package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capwright/capwright/internal/artifact"
)

const testDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// decodeObjects reads a multi-document YAML stream as Kubernetes objects.
func decodeObjects(t *testing.T, data []byte) []unstructured.Unstructured {
	t.Helper()
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding the manifests: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			t.Errorf("not a Kubernetes object: %v", u.Object)
		}
		objs = append(objs, u)
	}
	return objs
}

func TestBuildManifestsPinsTheImageAndKeepsTheCRDs(t *testing.T) {
	repo := testRepo(t)
	out, err := buildManifests(filepath.Join(repo, "manifests", "default"), "registry.test/capwright/capwright-manager", testDigest)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeObjects(t, out)
	var crds, deployments int
	services := map[string]bool{}
	for _, u := range objs {
		if u.GetKind() == "Service" {
			services[u.GetName()] = true
		}
		switch u.GetKind() {
		case "ServiceMonitor":
			// manifests/prometheus is opt-in: a cluster without the
			// Prometheus Operator could not apply the artifact.
			t.Errorf("the kustomize install holds ServiceMonitor %s", u.GetName())
		case "CustomResourceDefinition":
			crds++
			if got := u.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"]; got != "disabled" {
				t.Errorf("CRD %s: prune annotation %q, want disabled", u.GetName(), got)
			}
		case "Deployment":
			deployments++
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			image := containers[0].(map[string]any)["image"]
			if image != "registry.test/capwright/capwright-manager@"+testDigest {
				t.Errorf("manager image %v, want it pinned by digest", image)
			}
		default:
			if u.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] != "" {
				t.Errorf("%s %s must stay prunable", u.GetKind(), u.GetName())
			}
		}
	}
	if !services["capwright-artifacts"] || !services["capwright-metrics"] {
		t.Errorf("Services %v, want capwright-artifacts and capwright-metrics", services)
	}
	if crds < 9 || deployments != 1 {
		t.Errorf("%d CRDs (want the 8 Capwright ones and clusterctl's) and %d Deployments", crds, deployments)
	}
	if strings.Contains(string(out), "ghcr.io/capwright/capwright-manager") {
		t.Error("the upstream image is still named")
	}
}

func TestBuildManifestsRefusesManifestsWithoutTheManager(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "default")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	kust := "resources:\n- cm.yaml\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	for name, data := range map[string]string{"kustomization.yaml": kust, "cm.yaml": cm} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := buildManifests(base, "registry.test/capwright-manager", testDigest)
	if err == nil || !strings.Contains(err.Error(), "ghcr.io/capwright/capwright-manager") {
		t.Errorf("got %v, want an error naming the image to pin", err)
	}
}

func TestManifestsArtifactIsWhatFluxPushArtifactWrites(t *testing.T) {
	c := commit{hash: "abc", time: commitTime}
	img, err := manifestsArtifact([]byte("kind: List\n"), fluxAnnotations("v1.2.3", c))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := manifestsArtifact([]byte("kind: List\n"), fluxAnnotations("v1.2.3", c))
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("not reproducible: %s then %s", d1, d2)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != artifact.FluxConfigMediaType {
		t.Errorf("manifest %s, config %s", m.MediaType, m.Config.MediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != artifact.FluxContentMediaType {
		t.Fatalf("layers %v", m.Layers)
	}
	want := map[string]string{
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.revision": "v1.2.3@sha1:abc",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	files := untarGz(t, rc)
	if len(files) != 1 || string(files[manifestsFile]) != "kind: List\n" {
		t.Errorf("layer holds %v, want only %s", files, manifestsFile)
	}
}

// untarGz reads a tar+gzip stream into name → content.
func untarGz(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name], _ = io.ReadAll(tr)
	}
}
