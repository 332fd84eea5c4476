package artifact

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/memory"
)

// Prepared is a checked release packed in memory, ready to be pushed or
// written into a layout: what `capwright publish` writes.
type Prepared struct {
	// Contract is the Cluster API contract of the version (see Check).
	Contract string
	release  *Release
	staged   *memory.Store
	desc     ocispec.Descriptor
}

// Digest is the manifest digest of the artifact.
func (p *Prepared) Digest() string { return p.desc.Digest.String() }

// Prepare checks the release (Check) and packs it with its manifest
// annotations (Stage, tagged with the version) at the same time: the
// check's decoding of the components and the compression of the layer
// are each about half of publish's time, and neither needs the other.
// Nothing is written here; a release that fails the check is never
// pushed. Check's errors come first.
func (r *Release) Prepare(ctx context.Context) (*Prepared, error) {
	type staging struct {
		store *memory.Store
		desc  ocispec.Descriptor
		err   error
	}
	packed := make(chan staging, 1)
	annotations := r.ManifestAnnotations()
	go func() {
		store, desc, err := Stage(ctx, r.Files, annotations, r.Version)
		packed <- staging{store, desc, err}
	}()
	contract, err := r.Check()
	staged := <-packed
	if err != nil {
		return nil, err
	}
	if staged.err != nil {
		return nil, staged.err
	}
	return &Prepared{Contract: contract, release: r, staged: staged.store, desc: staged.desc}, nil
}

// Push pushes the artifact to the repository ref, tagged with the
// version, and returns the manifest digest; see Push.
func (p *Prepared) Push(ctx context.Context, ref Reference, access Access) (string, error) {
	ref.Tag = p.release.Version
	if err := checkPushRef(ref); err != nil {
		return "", err
	}
	return pushStaged(ctx, ref, p.staged, p.desc, access)
}

// WriteLayout writes the artifact into the OCI image layout directory
// dir, tagged with the version, and returns the manifest digest; see
// WriteLayout.
func (p *Prepared) WriteLayout(ctx context.Context, dir string) (string, error) {
	return writeStaged(ctx, dir, p.release.Version, p.staged, p.desc, p.release.ManifestAnnotations()[AnnotationTitle])
}
