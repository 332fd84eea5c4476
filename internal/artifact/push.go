package artifact

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// Push packs files (see Pack) and pushes the artifact to ref, tagging it
// with ref.Tag (an existing tag moves to the new content). It returns the
// manifest digest. Blobs the registry already has are not uploaded again.
func Push(ctx context.Context, ref Reference, files map[string][]byte, annotations map[string]string, access Access) (string, error) {
	if err := checkPushRef(ref); err != nil {
		return "", err
	}
	staged, manifestDesc, err := Stage(ctx, files, annotations, ref.Tag)
	if err != nil {
		return "", err
	}
	return pushStaged(ctx, ref, staged, manifestDesc, access)
}

func checkPushRef(ref Reference) error {
	if ref.Tag == "" {
		return fmt.Errorf("cannot push to %s: a tag (the version) is required", ref)
	}
	if ref.Digest != "" {
		return fmt.Errorf("cannot push to %s: the digest follows from the content, give only a tag", ref)
	}
	return nil
}

// pushStaged pushes what Stage staged under ref.Tag to ref.
func pushStaged(ctx context.Context, ref Reference, staged *memory.Store, manifestDesc ocispec.Descriptor, access Access) (string, error) {
	repo, release, err := access.Repository(ref, DefaultMaxArtifactSize)
	if err != nil {
		return "", err
	}
	defer release()
	if _, err := oras.Copy(ctx, staged, ref.Tag, repo, ref.Tag, oras.DefaultCopyOptions); err != nil {
		return "", pushError(ref, err)
	}
	return manifestDesc.Digest.String(), nil
}

// Stage packs files and stages the artifact in memory, tagged with tag, so
// that a copy can write what a target lacks, blobs before the manifest.
// It returns the manifest's descriptor.
func Stage(ctx context.Context, files map[string][]byte, annotations map[string]string, tag string) (*memory.Store, ocispec.Descriptor, error) {
	layer, manifest, err := Pack(files, annotations)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	manifestDesc := ocispec.Descriptor{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Digest:       digest.FromBytes(manifest),
		Size:         int64(len(manifest)),
	}
	staged := memory.New()
	blobs := []struct {
		desc ocispec.Descriptor
		data []byte
	}{
		{emptyConfig(), []byte(emptyConfigJSON)},
		{ocispec.Descriptor{MediaType: MediaTypeLayer, Digest: digest.FromBytes(layer), Size: int64(len(layer))}, layer},
		{manifestDesc, manifest},
	}
	for _, b := range blobs {
		if err := staged.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return nil, ocispec.Descriptor{}, fmt.Errorf("staging %s: %w", b.desc.MediaType, err)
		}
	}
	if err := staged.Tag(ctx, manifestDesc, tag); err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("staging tag %s: %w", tag, err)
	}
	return staged, manifestDesc, nil
}

// pushError maps registry errors; not found on push means the repository
// cannot be created there.
func pushError(ref Reference, err error) error {
	mapped := registryError(ref, "pushing", err)
	var notFound *NotFoundError
	if errors.As(mapped, &notFound) {
		return fmt.Errorf("pushing %s: the registry reports the repository as not found; check the URL and that the credentials may create repositories: %w", ref, err)
	}
	return mapped
}
