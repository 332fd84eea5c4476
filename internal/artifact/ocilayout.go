package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
)

// WriteLayout packs files (see Pack) into the OCI image layout directory
// dir, creating it when needed, and tags the artifact with tag. It returns
// the manifest digest, the same Push gives. The tag may move to a new
// release of the same provider (same title annotation), not to another
// provider: tags are versions, so providers need a layout each
// (*ReleaseError otherwise).
func WriteLayout(ctx context.Context, dir, tag string, files map[string][]byte, annotations map[string]string) (string, error) {
	staged, manifestDesc, err := Stage(ctx, files, annotations, tag)
	if err != nil {
		return "", err
	}
	return writeStaged(ctx, dir, tag, staged, manifestDesc, annotations[AnnotationTitle])
}

// writeStaged writes what Stage staged under tag into the layout dir; title
// is the artifact's title annotation.
func writeStaged(ctx context.Context, dir, tag string, staged *memory.Store, manifestDesc ocispec.Descriptor, title string) (string, error) {
	store, err := oci.NewWithContext(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("opening the OCI image layout %s: %w", dir, err)
	}
	if existing, err := store.Resolve(ctx, tag); err == nil && existing.Digest != manifestDesc.Digest {
		other := layoutTitle(ctx, store, existing)
		if other != title {
			return "", releaseError("write each provider into a layout directory of its own, or remove the directory first",
				"the OCI image layout %s already holds tag %s for another artifact (%s, %s)", dir, tag, orUnknown(other), existing.Digest)
		}
	}
	if _, err := oras.Copy(ctx, staged, tag, store, tag, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("writing the artifact into the OCI image layout %s: %w", dir, err)
	}
	return manifestDesc.Digest.String(), nil
}

// layoutTitle is the title annotation of a manifest in a layout, "" when
// it cannot be read.
func layoutTitle(ctx context.Context, store content.Fetcher, desc ocispec.Descriptor) string {
	data, err := readLayoutBlob(ctx, store, "", "manifest", desc, DefaultMaxArtifactSize)
	if err != nil {
		return ""
	}
	var manifest ocispec.Manifest
	if json.Unmarshal(data, &manifest) != nil {
		return ""
	}
	return manifest.Annotations[AnnotationTitle]
}

func orUnknown(title string) string {
	if title == "" {
		return "no title annotation"
	}
	return title
}

// IsLayout tells whether dir is an OCI image layout (it has an oci-layout
// file).
func IsLayout(dir string) bool {
	info, err := os.Stat(filepath.Join(dir, ocispec.ImageLayoutFile))
	return err == nil && info.Mode().IsRegular()
}

// LayoutName names an artifact in an OCI image layout in messages, the way
// oras's --oci-layout does: dir:tag or dir@digest.
func LayoutName(dir, reference string) string {
	if strings.Contains(reference, ":") {
		return dir + "@" + reference
	}
	return dir + ":" + reference
}

// FetchLayout reads a provider artifact from the OCI image layout in dir,
// with the checks and bounds of Fetch. reference is a tag or a digest; ""
// picks the layout's only tag. The returned Fetched has a Reference with
// only the tag or digest set. Errors are as Fetch's, naming the artifact
// LayoutName(dir, reference).
func (f *Fetcher) FetchLayout(ctx context.Context, dir, reference string) (*Fetched, error) {
	limit := f.limit()
	store, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("reading the OCI image layout %s: %w", dir, err)
	}
	if reference == "" {
		if reference, err = onlyTag(ctx, store, dir); err != nil {
			return nil, err
		}
	}
	name := LayoutName(dir, reference)
	desc, err := store.Resolve(ctx, reference)
	if errors.Is(err, errdef.ErrNotFound) || errors.Is(err, errdef.ErrInvalidReference) {
		tags, _ := layoutTags(ctx, store)
		return nil, &layoutNotFoundError{NotFoundError{Ref: name}, dir, reference, tags}
	}
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", name, err)
	}
	data, err := readLayoutBlob(ctx, store, name, "manifest", desc, limit)
	if err != nil {
		return nil, err
	}
	if desc.MediaType == "" || desc.MediaType == "application/octet-stream" {
		// A digest that no tag names resolves to a plain blob: the
		// manifest says what it is.
		var probe struct {
			MediaType string `json:"mediaType"`
		}
		_ = json.Unmarshal(data, &probe)
		desc.MediaType = probe.MediaType
	}
	ref := Reference{Tag: reference}
	if strings.Contains(reference, ":") {
		ref = Reference{Digest: reference}
	}
	manifest, err := checkManifest(ref, desc, data)
	if err != nil {
		return nil, renamed(err, name)
	}
	return unpack(ref, name, desc, manifest, limit, func(what string, d ocispec.Descriptor) ([]byte, error) {
		return readLayoutBlob(ctx, store, name, what, d, limit)
	})
}

// onlyTag is the tag of a layout holding exactly one.
func onlyTag(ctx context.Context, store *oci.ReadOnlyStore, dir string) (string, error) {
	tags, err := layoutTags(ctx, store)
	if err != nil {
		return "", fmt.Errorf("listing the tags of the OCI image layout %s: %w", dir, err)
	}
	switch len(tags) {
	case 1:
		return tags[0], nil
	case 0:
		return "", &layoutNotFoundError{NotFoundError{Ref: dir}, dir, "", nil}
	}
	return "", &AmbiguousLayoutError{Dir: dir, Tags: tags}
}

func layoutTags(ctx context.Context, store *oci.ReadOnlyStore) ([]string, error) {
	var tags []string
	err := store.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		return nil
	})
	return tags, err
}

// layoutNotFoundError is a *NotFoundError (errors.As finds it) worded for
// a layout rather than a registry.
type layoutNotFoundError struct {
	NotFoundError
	dir, reference string
	tags           []string
}

func (e *layoutNotFoundError) Error() string {
	if e.reference == "" {
		return fmt.Sprintf("the OCI image layout %s has no tagged artifact: give the artifact's digest", e.dir)
	}
	held := "no tags"
	if len(e.tags) > 0 {
		held = "tags " + strings.Join(e.tags, ", ")
	}
	return fmt.Sprintf("%s not found: the OCI image layout %s holds %s", LayoutName(e.dir, e.reference), e.dir, held)
}

func (e *layoutNotFoundError) Unwrap() error { return &e.NotFoundError }

// AmbiguousLayoutError is an OCI image layout holding several tags when
// the caller did not say which one to read.
type AmbiguousLayoutError struct {
	Dir  string
	Tags []string
}

func (e *AmbiguousLayoutError) Error() string {
	return fmt.Sprintf("the OCI image layout %s holds several tags (%s): say which artifact to read", e.Dir, strings.Join(e.Tags, ", "))
}

// readLayoutBlob reads content of a layout, refusing it above limit and
// verifying its size and digest.
func readLayoutBlob(ctx context.Context, store content.Fetcher, name, what string, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit {
		return nil, &TooLargeError{Ref: name, What: what, Size: desc.Size, Limit: limit}
	}
	rc, err := store.Fetch(ctx, desc)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("the OCI image layout lacks the %s %s of %s: it is incomplete", what, desc.Digest, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s of %s: %w", what, name, err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s of %s: %w", what, desc.Digest, name, err)
	}
	return data, nil
}

// renamed points a *LayoutError at name, for errors of helpers that name
// artifacts by their registry reference.
func renamed(err error, name string) error {
	var layoutErr *LayoutError
	if errors.As(err, &layoutErr) {
		layoutErr.Ref = name
	}
	return err
}
