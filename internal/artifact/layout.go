package artifact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Media types an artifact may turn out to be instead of a provider artifact.
const (
	mediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// repackHint is what to do with the one-file-per-layer layout.
const repackHint = "this is the one-file-per-layer layout of cluster-api-operator `publish` / `oras push`; repack it with `capwright mirror --repack`"

// checkManifest decodes a manifest and checks that it is an OCI image
// manifest with exactly one tar+gzip layer, returning that layer.
func checkManifest(ref Reference, desc ocispec.Descriptor, data []byte) (*ocispec.Manifest, error) {
	layoutErr := func(problem, hint string) error {
		return &LayoutError{Ref: ref.String(), Problem: problem, Hint: hint}
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageManifest:
	case ocispec.MediaTypeImageIndex, mediaTypeDockerManifestList:
		return nil, layoutErr("it is an image index (a multi-platform image or a list of artifacts)", "point to a single provider artifact")
	case mediaTypeDockerManifest:
		return nil, layoutErr("it is a Docker image manifest, probably a container image", "point to the provider's manifests repository, not to its controller image")
	default:
		return nil, layoutErr(fmt.Sprintf("its manifest has media type %q, expected %s", desc.MediaType, ocispec.MediaTypeImageManifest), "")
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(data, &manifest); err != nil {
		return nil, layoutErr(fmt.Sprintf("its manifest is not valid JSON: %v", err), "")
	}
	if manifest.MediaType != "" && manifest.MediaType != ocispec.MediaTypeImageManifest {
		return nil, layoutErr(fmt.Sprintf("its manifest declares media type %q, expected %s", manifest.MediaType, ocispec.MediaTypeImageManifest), "")
	}
	if manifest.Config.MediaType == HelmConfigMediaType {
		return nil, layoutErr("it is a Helm chart", "install it with spec.source.chart instead of spec.source.oci")
	}
	if len(manifest.Layers) == 1 && manifest.Layers[0].MediaType == MediaTypeLayer {
		return &manifest, nil
	}
	return nil, layoutErr(describeLayers(manifest.Layers), layersHint(manifest.Layers))
}

// describeLayers says what the layers are, e.g. "3 layers of
// application/vnd.oci.image.layer.v1.tar (metadata.yaml, …)".
func describeLayers(layers []ocispec.Descriptor) string {
	if len(layers) == 0 {
		return fmt.Sprintf("it has no layer, expected one %s layer", MediaTypeLayer)
	}
	var types, titles []string
	for _, l := range layers {
		if !slices.Contains(types, l.MediaType) {
			types = append(types, l.MediaType)
		}
		if title := l.Annotations[ocispec.AnnotationTitle]; title != "" {
			titles = append(titles, title)
		}
	}
	what := "1 layer"
	if len(layers) > 1 {
		what = fmt.Sprintf("%d layers", len(layers))
	}
	desc := fmt.Sprintf("it has %s of %s", what, strings.Join(types, ", "))
	if len(titles) > 0 {
		desc += fmt.Sprintf(" (%s)", strings.Join(titles, ", "))
	}
	return desc + fmt.Sprintf(", expected exactly one %s layer", MediaTypeLayer)
}

// layersHint recognises the layouts Capwright can repack.
func layersHint(layers []ocispec.Descriptor) string {
	if len(layers) > 1 {
		return repackHint
	}
	for _, l := range layers {
		if strings.HasSuffix(l.MediaType, "yaml") || l.Annotations[ocispec.AnnotationTitle] != "" {
			return repackHint
		}
	}
	return ""
}
