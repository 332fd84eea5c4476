package build

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/resolve"
)

// maxIndexSize bounds an OCI image layout's index.json.
const maxIndexSize = 4 << 20

// layoutEntry is an artifact an OCI image layout names: its
// org.opencontainers.image.ref.name (a tag, or a whole reference
// host/repository:tag) and its manifest digest.
type layoutEntry struct {
	dir, name, digest string
}

// readLayouts lists the named artifacts of the OCI image layouts dirs.
func readLayouts(dirs []string) ([]layoutEntry, error) {
	var out []layoutEntry
	for _, dir := range dirs {
		if !artifact.IsLayout(dir) {
			return nil, &InputError{fmt.Errorf("--layout %s is not an OCI image layout (it has no %s file); write one with capwright publish --output DIR or oras cp --to-oci-layout", dir, ocispec.ImageLayoutFile)}
		}
		f, err := os.Open(filepath.Join(dir, ocispec.ImageIndexFile))
		if err != nil {
			return nil, &InputError{fmt.Errorf("--layout %s: %w", dir, err)}
		}
		data, err := io.ReadAll(io.LimitReader(f, maxIndexSize+1))
		_ = f.Close()
		if err != nil || len(data) > maxIndexSize {
			return nil, &InputError{fmt.Errorf("--layout %s: cannot read its %s (%v, at most %d MiB)", dir, ocispec.ImageIndexFile, err, maxIndexSize>>20)}
		}
		var index ocispec.Index
		if err := json.Unmarshal(data, &index); err != nil {
			return nil, &InputError{fmt.Errorf("--layout %s: %s is not an OCI image index: %w", dir, ocispec.ImageIndexFile, err)}
		}
		for _, m := range index.Manifests {
			out = append(out, layoutEntry{dir: dir, name: m.Annotations[ocispec.AnnotationRefName], digest: m.Digest.String()})
		}
	}
	return out, nil
}

// preload hands r obj's artifact from the layouts, when one holds it: an
// entry named by its whole reference (host/repository:tag, as a release
// layout names them), one whose digest spec.source.oci pins, or one named
// by its tag alone whose annotations name the provider (capwright publish
// --output). It tells where the artifact came from, "" when no layout
// holds it (the registry is asked then).
func (b *building) preload(r *resolve.Resolver, obj v1alpha1.Provider) (string, error) {
	if len(b.layouts) == 0 {
		return "", nil
	}
	ref, release, err := r.Reference(obj)
	if err != nil || release != "" || ref.Tag == "" {
		return "", nil // the facts say what is wrong, or a release is fetched
	}
	fetcher := &artifact.Fetcher{MaxArtifactSize: b.o.MaxArtifactSize}
	whole := ref.Host + "/" + ref.Repository + ":" + ref.Tag
	for _, e := range b.layouts {
		byName := e.name != "" && e.name == whole
		byDigest := ref.Digest != "" && e.digest == ref.Digest
		byTag := e.name != "" && e.name == ref.Tag
		if !byName && !byDigest && !byTag {
			continue
		}
		reference := e.name
		if reference == "" || byDigest {
			reference = e.digest
		}
		fetched, err := fetcher.FetchLayout(b.ctx, e.dir, reference)
		if err != nil {
			return "", fmt.Errorf("reading %s for %s %s/%s: %w", artifact.LayoutName(e.dir, reference), obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		if byTag && !byName && !byDigest && !namesProvider(fetched, obj) {
			continue // another provider's release of the same version
		}
		if err := r.Preload(obj, fetched); err != nil {
			return "", fmt.Errorf("%s for %s/%s: %w", artifact.LayoutName(e.dir, reference), obj.GetNamespace(), obj.GetName(), err)
		}
		return fmt.Sprintf("artifact %s read from the OCI image layout %s, not from its registry", whole, artifact.LayoutName(e.dir, reference)), nil
	}
	return "", nil
}

// namesProvider tells whether an artifact's annotations name obj's type
// and name.
func namesProvider(f *artifact.Fetched, obj v1alpha1.Provider) bool {
	return f.Annotations[artifact.AnnotationProviderType] == obj.ProviderType() && f.Annotations[artifact.AnnotationProviderName] == obj.GetName()
}
