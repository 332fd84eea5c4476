package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"oras.land/oras-go/v2/content"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// Kind is what a mirrored reference is.
type Kind string

const (
	// KindProvider is a Cluster API provider artifact (contract layout).
	KindProvider Kind = "provider artifact"
	// KindFlux is a Flux OCI artifact as `flux push artifact` writes it,
	// e.g. Capwright's own install manifests.
	KindFlux Kind = "Flux artifact"
	// KindChart is a Helm chart as `helm push` writes it.
	KindChart Kind = "Helm chart"
	// KindImage is a container image (an OCI layout entry only).
	KindImage Kind = "image"
	// KindOther is any other content (an OCI layout entry only).
	KindOther Kind = "OCI content"
)

// mediaTypeDockerImage is a Docker image config: an image, not an artifact.
const mediaTypeDockerImage = "application/vnd.docker.container.image.v1+json"

// kindOf says what a manifest (nil: not an image manifest) is, by its
// config media type.
func kindOf(desc ocispec.Descriptor, manifest *ocispec.Manifest) Kind {
	switch {
	case desc.MediaType == ocispec.MediaTypeImageIndex || desc.MediaType == mediaTypeDockerManifestList:
		return KindImage
	case manifest == nil:
		return KindOther
	}
	switch manifest.Config.MediaType {
	case artifact.FluxConfigMediaType:
		return KindFlux
	case artifact.HelmConfigMediaType:
		return KindChart
	case ocispec.MediaTypeImageConfig, mediaTypeDockerImage:
		return KindImage
	}
	if len(manifest.Layers) == 1 && manifest.Layers[0].MediaType == artifact.MediaTypeLayer {
		return KindProvider
	}
	return KindOther
}

// isRelease tells whether a kind names its images in its content, so that
// mirroring it means mirroring them.
func (k Kind) isRelease() bool { return k == KindFlux || k == KindChart }

// decodeManifest decodes an image manifest; other media types give nil.
func decodeManifest(name string, desc ocispec.Descriptor, data []byte) (*ocispec.Manifest, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest && desc.MediaType != mediaTypeDockerManifest {
		return nil, nil
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: its manifest is not valid JSON: %w", name, err)
	}
	return &m, nil
}

// releaseImages lists the container images a Flux artifact's YAML runs or
// a Helm chart's artifacthub.io/images annotation names. note, when not
// empty, is what the user should know (a chart listing no images). Blobs
// are read from store, bounded by limit.
func releaseImages(ctx context.Context, store content.Fetcher, ref artifact.Reference, kind Kind, m *ocispec.Manifest, limit int64) (images []string, note string, err error) {
	switch kind {
	case KindFlux:
		images, err = fluxImages(ctx, store, ref, m, limit)
		return images, "", err
	case KindChart:
		return chartImages(ctx, store, ref, m, limit)
	}
	return nil, "", nil
}

// fluxImages reads the one layer of a Flux artifact and lists the images
// of the pod templates of its YAML files.
func fluxImages(ctx context.Context, store content.Fetcher, ref artifact.Reference, m *ocispec.Manifest, limit int64) ([]string, error) {
	name := ref.String()
	if len(m.Layers) != 1 || m.Layers[0].MediaType != artifact.FluxContentMediaType {
		var types []string
		for _, l := range m.Layers {
			types = append(types, l.MediaType)
		}
		return nil, fmt.Errorf("%s: a Flux artifact has one %s layer, this one has %d (%s)", name, artifact.FluxContentMediaType, len(m.Layers), strings.Join(types, ", "))
	}
	layer, err := readBlob(ctx, store, ref, "layer", m.Layers[0], limit)
	if err != nil {
		return nil, err
	}
	files, err := artifact.Untar(layer, limit)
	if errors.Is(err, artifact.ErrLayerTooLarge) {
		return nil, &artifact.TooLargeError{Ref: name, What: "uncompressed layer", Size: -1, Limit: limit}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading its Flux layer: %w", name, err)
	}
	var images []string
	// Flux's kustomize build reads the YAML files; other files are not
	// objects.
	for _, file := range slices.Sorted(maps.Keys(files)) {
		if ext := path.Ext(file); ext != ".yaml" && ext != ".yml" {
			continue
		}
		found, err := clusterctl.Images(files[file])
		if err != nil {
			return nil, fmt.Errorf("%s: the container images of %s cannot be listed: %w", name, file, err)
		}
		images = append(images, found...)
	}
	slices.Sort(images)
	return slices.Compact(images), nil
}

// chartImages lists the images a chart's Chart.yaml annotation
// artifacthub.io/images names; the config blob is Chart.yaml as JSON.
func chartImages(ctx context.Context, store content.Fetcher, ref artifact.Reference, m *ocispec.Manifest, limit int64) ([]string, string, error) {
	name := ref.String()
	config, err := readBlob(ctx, store, ref, "config", m.Config, limit)
	if err != nil {
		return nil, "", err
	}
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(config, &chart); err != nil {
		return nil, "", fmt.Errorf("%s: its Helm chart config (Chart.yaml as JSON) cannot be read: %w", name, err)
	}
	listed := chart.Annotations[artifact.ChartImagesAnnotation]
	if strings.TrimSpace(listed) == "" {
		return nil, "the chart lists no images (no " + artifact.ChartImagesAnnotation + " annotation in its Chart.yaml): only the chart was copied; copy the images it runs separately", nil
	}
	var entries []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	if err := utilyaml.Unmarshal([]byte(listed), &entries); err != nil {
		return nil, "", fmt.Errorf("%s: its Chart.yaml annotation %s is not a YAML list of {name, image}: %w", name, artifact.ChartImagesAnnotation, err)
	}
	var images []string
	for _, e := range entries {
		if e.Image == "" {
			return nil, "", fmt.Errorf("%s: its Chart.yaml annotation %s has an entry without an image (name %q)", name, artifact.ChartImagesAnnotation, e.Name)
		}
		images = append(images, e.Image)
	}
	slices.Sort(images)
	return slices.Compact(images), "", nil
}

// readBlob reads a blob of ref, refusing it above limit and checking its
// digest.
func readBlob(ctx context.Context, store content.Fetcher, ref artifact.Reference, what string, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit {
		return nil, &artifact.TooLargeError{Ref: ref.String(), What: what, Size: desc.Size, Limit: limit}
	}
	rc, err := store.Fetch(ctx, desc)
	if err != nil {
		return nil, artifact.RegistryError(ref, "fetching the "+what+" of", err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s of %s: %w", what, desc.Digest, ref, err)
	}
	return data, nil
}
