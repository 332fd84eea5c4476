// Package framework holds what the e2e suites and the demo share: pushing
// artifacts to the plane's registry and waiting for Flux objects.
package framework

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"sort"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
)

// TarGz packs files at the root of a gzip-compressed tarball with sorted
// entries and fixed times and owners, so equal inputs give equal bytes.
func TarGz(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		hdr := &tar.Header{
			Name:    name,
			Mode:    0o644,
			Size:    int64(len(files[name])),
			ModTime: time.Unix(0, 0),
			Format:  tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PushedArtifact is where an artifact landed.
type PushedArtifact struct {
	// URL is oci://host/repository, as an OCIRepository wants it.
	URL    string
	Tag    string
	Digest string
}

// PushFiles pushes files as an OCI artifact with one tar+gzip layer to
// host/repository:tag over plain HTTP (the plane's registry).
func PushFiles(ctx context.Context, host, repository, tag string, files map[string][]byte, annotations map[string]string) (PushedArtifact, error) {
	layer, err := TarGz(files)
	if err != nil {
		return PushedArtifact{}, err
	}
	store := memory.New()
	layerDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageLayerGzip, layer)
	if err := store.Push(ctx, layerDesc, bytes.NewReader(layer)); err != nil {
		return PushedArtifact{}, err
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.capwright.test.v1", oras.PackManifestOptions{
		Layers:              []ocispec.Descriptor{layerDesc},
		ManifestAnnotations: annotations,
	})
	if err != nil {
		return PushedArtifact{}, err
	}
	if err := store.Tag(ctx, manifest, tag); err != nil {
		return PushedArtifact{}, err
	}
	repo, err := remote.NewRepository(host + "/" + repository)
	if err != nil {
		return PushedArtifact{}, err
	}
	repo.PlainHTTP = true
	if _, err := oras.Copy(ctx, store, tag, repo, tag, oras.DefaultCopyOptions); err != nil {
		return PushedArtifact{}, fmt.Errorf("pushing %s/%s:%s: %w", host, repository, tag, err)
	}
	return PushedArtifact{URL: "oci://" + host + "/" + repository, Tag: tag, Digest: manifest.Digest.String()}, nil
}
