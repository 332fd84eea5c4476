package artifact

import (
	"context"
	"errors"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// DefaultMaxArtifactSize bounds what Fetch reads when Fetcher sets no
// limit: provider artifacts are a few MiB of YAML.
const DefaultMaxArtifactSize int64 = 64 << 20

// Fetcher reads provider artifacts. The zero value is ready to use.
type Fetcher struct {
	// MaxArtifactSize bounds the manifest, the compressed layer and the
	// uncompressed layer, each; 0 means DefaultMaxArtifactSize.
	MaxArtifactSize int64
}

// Fetched is an artifact read from a registry.
type Fetched struct {
	Ref Reference
	// Digest of the manifest (sha256:…): what to pin Flux to.
	Digest string
	// Revision is "<tag>@<digest>" (only the digest without a tag), the
	// form Flux reports for an OCIRepository.
	Revision    string
	Annotations map[string]string
	// Files of the layer by clean relative path.
	Files           map[string][]byte
	LayerMediaTypes []string
}

func (f *Fetcher) limit() int64 {
	if f == nil || f.MaxArtifactSize <= 0 {
		return DefaultMaxArtifactSize
	}
	return f.MaxArtifactSize
}

// Fetch resolves ref (its tag, else its digest) to a manifest, checks that
// the manifest has the provider artifact layout, and reads the files of its
// layer. When ref has both a tag and a digest, the tag must still resolve to
// the digest (*DigestMismatchError otherwise). Errors are *AuthError,
// *NotFoundError, *TooLargeError, *LayoutError or wrapped transport errors.
func (f *Fetcher) Fetch(ctx context.Context, ref Reference, access Access) (*Fetched, error) {
	limit := f.limit()
	repo, release, desc, err := f.open(ctx, ref, access, "fetch")
	if err != nil {
		return nil, err
	}
	defer release()
	data, err := fetchBounded(ctx, repo.Manifests(), ref, "manifest", desc, limit)
	if err != nil {
		return nil, err
	}
	manifest, err := checkManifest(ref, desc, data)
	if err != nil {
		return nil, err
	}
	return unpack(ref, ref.String(), desc, manifest, limit, func(what string, d ocispec.Descriptor) ([]byte, error) {
		return fetchBounded(ctx, repo.Blobs(), ref, what, d, limit)
	})
}

// open resolves ref in its repository: its tag, else its digest; with both,
// the tag must still name the digest (*DigestMismatchError otherwise). The
// caller calls release when done with the repository.
func (f *Fetcher) open(ctx context.Context, ref Reference, access Access, action string) (repo *remote.Repository, release func(), desc ocispec.Descriptor, err error) {
	target, err := ref.reference()
	if err != nil {
		return nil, nil, desc, fmt.Errorf("cannot %s %s: %w", action, ref, err)
	}
	repo, release, err = access.Repository(ref, f.limit())
	if err != nil {
		return nil, nil, desc, err
	}
	desc, err = repo.Resolve(ctx, target)
	if err != nil {
		release()
		return nil, nil, desc, registryError(ref, "resolving", err)
	}
	if ref.Digest != "" && desc.Digest.String() != ref.Digest {
		release()
		return nil, nil, desc, &DigestMismatchError{Ref: ref.Host + "/" + ref.Repository + ":" + ref.Tag, Expected: ref.Digest, Actual: desc.Digest.String()}
	}
	return repo, release, desc, nil
}

// unpack reads the one layer of a manifest checkManifest accepted, with
// read, and returns the artifact with the files of the layer; name names
// the artifact in errors.
func unpack(ref Reference, name string, desc ocispec.Descriptor, manifest *ocispec.Manifest, limit int64, read func(what string, d ocispec.Descriptor) ([]byte, error)) (*Fetched, error) {
	layer := manifest.Layers[0]
	blob, err := read("layer", layer)
	if err != nil {
		return nil, err
	}
	files, err := untar(blob, limit)
	switch {
	case errors.Is(err, errUncompressedTooLarge):
		return nil, &TooLargeError{Ref: name, What: "uncompressed layer", Size: -1, Limit: limit}
	case err != nil:
		return nil, &LayoutError{Ref: name, Problem: err.Error()}
	}
	fetched := &Fetched{
		Ref:             ref,
		Digest:          desc.Digest.String(),
		Revision:        desc.Digest.String(),
		Annotations:     manifest.Annotations,
		Files:           files,
		LayerMediaTypes: []string{layer.MediaType},
	}
	if ref.Tag != "" {
		fetched.Revision = ref.Tag + "@" + fetched.Digest
	}
	return fetched, nil
}

// fetchBounded refuses a descriptor above limit before fetching, then reads
// the content verifying its size and digest.
func fetchBounded(ctx context.Context, store content.Fetcher, ref Reference, what string, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit {
		return nil, &TooLargeError{Ref: ref.String(), What: what, Size: desc.Size, Limit: limit}
	}
	rc, err := store.Fetch(ctx, desc)
	if err != nil {
		return nil, registryError(ref, "fetching the "+what+" of", err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s of %s: %w", what, desc.Digest, ref, err)
	}
	return data, nil
}

// Resolve returns the manifest digest that ref's tag (else its digest)
// names now, with one small request; with both a tag and a digest the tag
// must still resolve to the digest (*DigestMismatchError otherwise). It lets
// callers skip Fetch for content they already checked.
func (f *Fetcher) Resolve(ctx context.Context, ref Reference, access Access) (string, error) {
	_, release, desc, err := f.open(ctx, ref, access, "resolve")
	if err != nil {
		return "", err
	}
	release()
	return desc.Digest.String(), nil
}
