package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/capwright/capwright/internal/artifact"
)

// RunLayout mirrors an OCI image layout bundle, such as `make release
// OUTPUT=dir` writes: every index.json entry named (annotation
// org.opencontainers.image.ref.name) by a full reference host[:port]/path:tag
// is copied with everything it references and its referrers in the layout
// to TARGET/PREFIX/path:tag, as Run maps registry sources, digests
// unchanged. Entries without a name are not copied as such: oras and other
// writers list there the platform manifests and referrers of named
// entries, which are copied with them.
//
// Images are not discovered: the bundle holds the images of its artifacts
// as entries of their own. An image a Flux artifact or a Helm chart of the
// bundle names but the bundle lacks is reported in the Notes of its Result;
// it does not fail the run.
//
// Tags are written last, once every entry's content is in place, images
// and other content before the artifacts that name them; an artifact whose
// images failed is not tagged. An interrupted run writes no tag. An
// unreadable layout, or an entry named by something else than a full
// reference, is a *BundleError before anything is copied.
func RunLayout(ctx context.Context, dir string, opts Options) (*Summary, error) {
	// A layout is local: reading it again costs no registry requests.
	opts.Cache = nil
	r, summary := newRunner(opts)
	defer r.close()
	store, entries, err := openBundle(ctx, dir, r.opts.MaxMetadataSize)
	if err != nil {
		return summary.of(nil), err
	}
	r.layout = store

	plans := r.planLayout(ctx, store, entries)
	if err := checkConflicts(r.opts.Target, plans); err != nil {
		return summary.of(plans), err
	}
	r.mirrorLayout(ctx, plans)
	return summary.of(plans), summary.err()
}

// BundleError is an OCI image layout that cannot be mirrored: not a
// layout, or with entries not named by a full reference. Nothing was
// copied.
type BundleError struct {
	Dir      string
	Problems []string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("nothing was copied from the OCI image layout %s: %s", e.Dir, strings.Join(e.Problems, "; "))
}

// bundleEntry is a named entry of a layout's index.json.
type bundleEntry struct {
	ref  artifact.Reference
	desc ocispec.Descriptor
}

// layoutStore is an OCI image layout as a copy source, saying so when it
// lacks content.
type layoutStore struct {
	*oci.ReadOnlyStore
	dir string
}

func (s layoutStore) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.ReadOnlyStore.Fetch(ctx, desc)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("the OCI image layout %s lacks %s %s: it is incomplete; write it again", s.dir, desc.MediaType, desc.Digest)
	}
	return rc, err
}

// openBundle opens the layout and lists its named entries, refusing
// entries whose name is not a full reference.
func openBundle(ctx context.Context, dir string, maxIndex int64) (layoutStore, []bundleEntry, error) {
	bundleErr := func(format string, args ...any) error {
		return &BundleError{Dir: dir, Problems: []string{fmt.Sprintf(format, args...)}}
	}
	if !artifact.IsLayout(dir) {
		return layoutStore{}, nil, bundleErr("it is not an OCI image layout (it has no %s file); write one with make release OUTPUT=%s", ocispec.ImageLayoutFile, dir)
	}
	index, err := readIndex(filepath.Join(dir, ocispec.ImageIndexFile), maxIndex)
	if err != nil {
		return layoutStore{}, nil, bundleErr("%v", err)
	}
	var entries []bundleEntry
	var problems []string
	seen := map[string]bool{}
	for i, desc := range index.Manifests {
		name := desc.Annotations[ocispec.AnnotationRefName]
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		ref, err := parseFullReference(name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("entry %d (%s %s) is named %q, not a full reference host[:port]/path:tag (%v)", i+1, desc.MediaType, desc.Digest, name, err))
			continue
		}
		entries = append(entries, bundleEntry{ref: ref, desc: desc})
	}
	switch {
	case len(problems) > 0:
		problems = append(problems, "mirror copies each entry to TARGET/PREFIX/path:tag, so it needs the full reference of each; make release OUTPUT=dir writes them")
		return layoutStore{}, nil, &BundleError{Dir: dir, Problems: problems}
	case len(entries) == 0:
		return layoutStore{}, nil, bundleErr("no entry of its index.json is named (%s) by a full reference host[:port]/path:tag", ocispec.AnnotationRefName)
	}
	store, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		return layoutStore{}, nil, bundleErr("it cannot be read: %v", err)
	}
	return layoutStore{ReadOnlyStore: store, dir: dir}, entries, nil
}

// readIndex reads a layout's index.json, bounded by limit.
func readIndex(path string, limit int64) (*ocispec.Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("its %s exceeds the limit of %d bytes", ocispec.ImageIndexFile, limit)
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("its %s is not a valid OCI index: %w", ocispec.ImageIndexFile, err)
	}
	return &index, nil
}

// parseFullReference parses host[:port]/path:tag.
func parseFullReference(name string) (artifact.Reference, error) {
	host, rest, ok := strings.Cut(name, "/")
	if !ok || !looksLikeHost(host) {
		return artifact.Reference{}, errors.New("it does not start with a registry host")
	}
	colon := strings.LastIndex(rest, ":")
	if colon < 0 || strings.Contains(rest, "@") {
		return artifact.Reference{}, errors.New("it has no tag, or has a digest")
	}
	ref := artifact.Reference{Host: host, Repository: rest[:colon], Tag: rest[colon+1:]}
	return ref, validate(ref)
}

// planLayout reads each entry's manifest, says what it is and, for a Flux
// artifact or a Helm chart, which images it runs and whether the bundle
// holds them. An entry that cannot be read is failed here.
func (r *runner) planLayout(ctx context.Context, store layoutStore, entries []bundleEntry) []*plan {
	plans := make([]*plan, len(entries))
	for i, e := range entries {
		plans[i] = &plan{desc: e.desc, result: Result{
			Source:       e.ref,
			Target:       r.targetOf(e.ref),
			SourceDigest: e.desc.Digest.String(),
		}}
	}
	for _, p := range plans {
		name := p.result.Source.String()
		r.rec.emit(Event{Kind: RefStarted, Ref: name})
		if err := r.readEntry(ctx, store, p, plans); err != nil {
			p.result.Err = err
			r.rec.emit(Event{Kind: RefFailed, Ref: name, ArtifactKind: p.result.Kind, Err: err})
			continue
		}
		// Images: 0, as the images of a layout are entries of their own.
		r.rec.emit(Event{Kind: RefPlanned, Ref: name, ArtifactKind: p.result.Kind, Notes: p.result.Notes})
	}
	return plans
}

// readEntry reads one entry of the layout.
func (r *runner) readEntry(ctx context.Context, store layoutStore, p *plan, plans []*plan) error {
	name := p.result.Source.String()
	data, err := readBlob(ctx, store, p.result.Source, "manifest", p.desc, r.opts.MaxMetadataSize)
	if err != nil {
		return err
	}
	m, err := decodeManifest(name, p.desc, data)
	if err != nil {
		return err
	}
	p.result.Kind = kindOf(p.desc, m)
	if !p.result.Kind.isRelease() {
		return nil
	}
	written, note, err := releaseImages(ctx, store, p.result.Source, p.result.Kind, m, r.opts.MaxArtifactSize)
	if err != nil {
		// The check is a courtesy: the entry is copied all the same.
		p.result.Notes = append(p.result.Notes, fmt.Sprintf("its images could not be listed to check that the bundle holds them: %v", err))
		return nil
	}
	if note != "" {
		p.result.Notes = append(p.result.Notes, note)
	}
	for _, w := range written {
		img, err := parseImage(w)
		if err != nil {
			p.result.Notes = append(p.result.Notes, err.Error())
			continue
		}
		held := heldImage(plans, img.Source)
		if held == nil {
			p.result.Notes = append(p.result.Notes, fmt.Sprintf("it runs the image %s, which the bundle does not hold: copy that image to %s as well, or the cluster cannot pull it from the mirror",
				w, r.targetOf(img.Source)))
			continue
		}
		p.after = append(p.after, held)
		p.result.Images = append(p.result.Images, Image{Written: w, Name: img.Name, Source: img.Source, Target: r.targetOf(img.Source)})
	}
	return nil
}

// heldImage is the entry that holds an image: same repository, and the
// image's digest, else its tag.
func heldImage(plans []*plan, img artifact.Reference) *plan {
	for _, p := range plans {
		src := p.result.Source
		if src.Host != img.Host || src.Repository != img.Repository {
			continue
		}
		if (img.Digest != "" && p.desc.Digest.String() == img.Digest) || (img.Digest == "" && src.Tag == img.Tag) {
			return p
		}
	}
	return nil
}

// mirrorLayout copies the content of every entry, then writes the tags:
// images and other content first, then the artifacts that name them.
func (r *runner) mirrorLayout(ctx context.Context, plans []*plan) {
	routes := make([]route, len(plans))
	roots := make([]*node, len(plans))
	wrote := make([]atomic.Bool, len(plans))
	var wg sync.WaitGroup
	for i, p := range plans {
		if p.result.Err != nil {
			continue
		}
		wg.Go(func() {
			var err error
			if routes[i], roots[i], err = r.copyArtifact(ctx, p, &wrote[i]); err != nil {
				r.fail(p, err)
			}
		})
	}
	wg.Wait()
	for _, release := range []bool{false, true} {
		for i, p := range plans {
			if p.result.Err == nil && p.result.Kind.isRelease() == release {
				wg.Go(func() { r.tagEntry(ctx, p, routes[i], roots[i], &wrote[i]) })
			}
		}
		wg.Wait()
	}
}

// tagEntry writes an entry's tag unless the run was interrupted or the
// images it names failed.
func (r *runner) tagEntry(ctx context.Context, p *plan, rt route, root *node, wrote *atomic.Bool) {
	if err := ctx.Err(); err != nil {
		r.fail(p, err)
		return
	}
	var failed []string
	var firstErr error
	for _, img := range p.after {
		if img.result.Err != nil {
			failed = append(failed, img.result.Source.String())
			if firstErr == nil {
				firstErr = img.result.Err
			}
		}
	}
	if len(failed) > 0 {
		r.fail(p, &ImageError{Images: failed, Err: firstErr})
		return
	}
	r.finish(ctx, p, rt, root, wrote, false)
}
