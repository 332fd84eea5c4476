package mirrortest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"

	"github.com/capwright/capwright/internal/artifact"
)

// CapwrightManifests is a Capwright install as the release's Flux artifact
// holds it: a Namespace, a ConfigMap, and the manager Deployment running
// image, with an init container running it too.
func CapwrightManifests(image string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Namespace
metadata:
  name: capwright-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: capwright-config
  namespace: capwright-system
data:
  image: not-an-image-field
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capwright-manager
  namespace: capwright-system
spec:
  selector:
    matchLabels: {app: capwright}
  template:
    metadata:
      labels: {app: capwright}
    spec:
      initContainers:
      - name: check
        image: %[1]s
        args: [--check]
      containers:
      - name: manager
        image: %[1]s
`, image)
}

// ArtifactHubImages is the value of a chart's artifacthub.io/images
// annotation listing one image.
func ArtifactHubImages(name, image string) string {
	return fmt.Sprintf("- name: %s\n  image: %s\n", name, image)
}

// PushFluxArtifact pushes files as `flux push artifact` does: the Flux
// config media type (an empty JSON config) and one tar+gzip layer of the
// files. It returns the manifest's descriptor.
func PushFluxArtifact(t testing.TB, access artifact.Access, ref artifact.Reference, files map[string][]byte) ocispec.Descriptor {
	t.Helper()
	layer, err := artifact.PackTarGz(files)
	if err != nil {
		t.Fatal(err)
	}
	return pushManifest(t, access, ref, artifact.FluxConfigMediaType, []byte("{}"), artifact.FluxContentMediaType, layer,
		map[string]string{ocispec.AnnotationSource: "https://github.com/capwright/capwright", ocispec.AnnotationRevision: ref.Tag + "@sha1:0123abcd"})
}

// PushChart pushes a Helm chart as `helm push` does: Chart.yaml as the
// JSON config, with annotations, and the chart archive as the one layer.
func PushChart(t testing.TB, access artifact.Access, ref artifact.Reference, annotations map[string]string) ocispec.Descriptor {
	t.Helper()
	config := mustJSON(t, map[string]any{
		"apiVersion": "v2", "name": "capwright", "version": ref.Tag, "appVersion": ref.Tag, "type": "application",
		"annotations": annotations,
	})
	archive, err := artifact.PackTarGz(map[string][]byte{
		"capwright/Chart.yaml":  []byte("apiVersion: v2\nname: capwright\nversion: " + ref.Tag + "\n"),
		"capwright/values.yaml": []byte("image:\n  repository: example\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return pushManifest(t, access, ref, artifact.HelmConfigMediaType, config, artifact.HelmChartMediaType, archive, nil)
}

// pushManifest pushes an image manifest with one config and one layer and
// tags it.
func pushManifest(t testing.TB, access artifact.Access, ref artifact.Reference, configType string, config []byte, layerType string, layer []byte, annotations map[string]string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	repo := repository(t, access, ref)
	manifest := ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      ocispec.Descriptor{MediaType: configType, Digest: digest.FromBytes(config), Size: int64(len(config))},
		Layers:      []ocispec.Descriptor{{MediaType: layerType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
		Annotations: annotations,
	}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{manifest.Config, config}, {manifest.Layers[0], layer}} {
		if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
			t.Fatalf("pushing %s to %s: %v", b.desc.MediaType, ref, err)
		}
	}
	data := mustJSON(t, manifest)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), ref.Tag); err != nil {
		t.Fatalf("pushing the manifest of %s: %v", ref, err)
	}
	return desc
}

// WriteLayout copies registry content into the OCI image layout dir, as a
// release bundle: each entry named by its key (a full reference
// host/path:tag, or anything, to test refusals), with the referrers of
// the root. It uses oras-go's content/oci, which also lists the platform
// manifests and referrers in index.json, unnamed.
func WriteLayout(t testing.TB, dir string, access artifact.Access, entries map[string]artifact.Reference) {
	t.Helper()
	ctx := context.Background()
	store, err := oci.NewWithContext(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, ref := range entries {
		from := ref.Tag
		if from == "" {
			from = ref.Digest
		}
		if _, err := oras.ExtendedCopy(ctx, repository(t, access, ref), from, store, name, oras.DefaultExtendedCopyOptions); err != nil {
			t.Fatalf("copying %s into the layout as %s: %v", ref, name, err)
		}
	}
}
