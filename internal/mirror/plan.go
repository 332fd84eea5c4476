package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/memory"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// plan is an artifact read from its registry, with what to copy.
type plan struct {
	result Result
	// desc is the artifact manifest to copy: the source's, or the repacked
	// one staged in memory.
	desc   ocispec.Descriptor
	staged *memory.Store
	images []imageRef
	// after are the layout entries holding the images of this one: their
	// tags go first, and their failure fails this one (RunLayout).
	after []*plan
}

// name is how events name the plan: its reference, or TYPE/NAME:VERSION
// of a provider release.
func (p *plan) name() string {
	if p.result.Provider != "" {
		return p.result.Provider + ":" + p.result.Source.Tag
	}
	return p.result.Source.String()
}

// planAll reads the artifacts, a few at a time. A reference that cannot be
// read is failed here and not copied.
func (r *runner) planAll(ctx context.Context, refs []artifact.Reference) []*plan {
	plans := make([]*plan, len(refs))
	slots := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			p := &plan{result: Result{
				Source: ref,
				Target: artifact.Reference{Host: r.opts.Target.Host, Repository: r.opts.Target.Repository(ref.Repository), Tag: ref.Tag},
			}}
			r.rec.emit(Event{Kind: RefStarted, Ref: ref.String()})
			if err := r.read(ctx, p); err != nil {
				p.result.Err = err
				r.rec.emit(Event{Kind: RefFailed, Ref: ref.String(), Err: err})
			} else {
				r.rec.emit(Event{Kind: RefPlanned, Ref: ref.String(), Images: len(p.images), ArtifactKind: p.result.Kind, Notes: p.result.Notes})
			}
			plans[i] = p
		})
	}
	wg.Wait()
	return plans
}

// read fetches the artifact (bounded by the artifact size limit), repacks
// it when asked and needed, and lists the images it runs: those of its
// components for a provider artifact, of its YAML for a Flux artifact, of
// its artifacthub.io/images annotation for a Helm chart. With a cache, an
// artifact listed before (by digest) is only resolved, not read again.
func (r *runner) read(ctx context.Context, p *plan) error {
	ref := p.result.Source
	if ref.Tag == "" && ref.Digest == "" {
		return fmt.Errorf("%s: give the artifact's tag (its version) or digest", ref)
	}
	// A reference by digest alone names content that never changes: with
	// its listing, the source is not asked.
	if ref.Tag == "" {
		if l, ok := r.opts.Cache.listing(digest.Digest(ref.Digest)); ok && l.MediaType != "" {
			return r.listed(p, ocispec.Descriptor{MediaType: l.MediaType, Digest: digest.Digest(ref.Digest), Size: l.Size}, l)
		}
	}
	desc, err := r.resolveSource(ctx, ref)
	if err != nil {
		return err
	}
	if l, ok := r.opts.Cache.listing(desc.Digest); ok {
		return r.listed(p, desc, l)
	}
	if err := r.readContent(ctx, p, desc); err != nil {
		return err
	}
	if p.staged == nil {
		l := listing{Kind: p.result.Kind, MediaType: p.desc.MediaType, Size: p.desc.Size, Images: []string{}, Notes: p.result.Notes}
		for _, img := range p.images {
			l.Images = append(l.Images, img.Written)
		}
		r.opts.Cache.putListing(p.desc.Digest, l)
	}
	return nil
}

// listed plans the artifact desc from its listing.
func (r *runner) listed(p *plan, desc ocispec.Descriptor, l *listing) error {
	p.desc = desc
	p.result.Kind = l.Kind
	p.result.SourceDigest = desc.Digest.String()
	p.result.Notes = l.Notes
	return r.addImages(p, l.Images)
}

// readContent reads the artifact desc that ref resolved to.
func (r *runner) readContent(ctx context.Context, p *plan, desc ocispec.Descriptor) error {
	ref := p.result.Source
	manifest, err := r.readManifest(ctx, ref, desc)
	if err != nil {
		return err
	}
	if kind := kindOf(desc, manifest); kind.isRelease() {
		return r.readRelease(ctx, p, desc, manifest, kind)
	}
	p.result.Kind = KindProvider
	fetched, err := r.fetcher.Fetch(ctx, ref, r.opts.SourceAccess)
	var layout *artifact.LayoutError
	var components []byte
	switch {
	case err == nil:
		if components, err = componentsOf(fetched); err != nil {
			return err
		}
		p.desc = desc
		if fetched.Digest != desc.Digest.String() {
			// The tag moved between the two reads.
			if p.desc, err = r.resolveArtifact(ctx, ref, fetched.Digest); err != nil {
				return err
			}
		}
		p.result.SourceDigest = fetched.Digest
	case errors.As(err, &layout) && layout.Repackable() && r.opts.Repack:
		if components, err = r.repack(ctx, p); err != nil {
			return err
		}
	default:
		return err
	}

	written, err := clusterctl.Images(components)
	if err != nil {
		return &artifact.LayoutError{Ref: ref.String(), Problem: fmt.Sprintf("its container images cannot be listed: %v", err)}
	}
	return r.addImages(p, written)
}

// resolveSource resolves a reference at its source. With a tag and a
// digest, the tag must still name the digest.
func (r *runner) resolveSource(ctx context.Context, ref artifact.Reference) (ocispec.Descriptor, error) {
	repo, err := r.repository(false, ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	want := ref.Tag
	if want == "" {
		want = ref.Digest
	}
	desc, err := repo.Resolve(ctx, want)
	if err != nil {
		return ocispec.Descriptor{}, artifact.RegistryError(ref, "resolving", err)
	}
	if ref.Digest != "" && desc.Digest.String() != ref.Digest {
		return ocispec.Descriptor{}, &artifact.DigestMismatchError{Ref: ref.Host + "/" + ref.Repository + ":" + ref.Tag, Expected: ref.Digest, Actual: desc.Digest.String()}
	}
	return desc, nil
}

// readManifest reads the manifest desc when it is an image manifest
// within the metadata limit (nil otherwise: the provider artifact reader
// names what it is).
func (r *runner) readManifest(ctx context.Context, ref artifact.Reference, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest || desc.Size > r.opts.MaxMetadataSize {
		return nil, nil
	}
	repo, err := r.repository(false, ref)
	if err != nil {
		return nil, err
	}
	data, err := readBlob(ctx, repo.Manifests(), ref, "manifest", desc, r.opts.MaxMetadataSize)
	if err != nil {
		return nil, err
	}
	return decodeManifest(ref.String(), desc, data)
}

// readRelease lists the images of a Flux artifact or a Helm chart, read
// from the source registry.
func (r *runner) readRelease(ctx context.Context, p *plan, desc ocispec.Descriptor, m *ocispec.Manifest, kind Kind) error {
	ref := p.result.Source
	repo, err := r.repository(false, ref)
	if err != nil {
		return err
	}
	p.desc = desc
	p.result.Kind = kind
	p.result.SourceDigest = desc.Digest.String()
	written, note, err := releaseImages(ctx, repo.Blobs(), ref, kind, m, r.opts.MaxArtifactSize)
	if err != nil {
		return err
	}
	if note != "" {
		p.result.Notes = append(p.result.Notes, note)
	}
	return r.addImages(p, written)
}

// addImages records the images an artifact runs, as written in it.
func (r *runner) addImages(p *plan, written []string) error {
	for _, w := range written {
		img, err := parseImage(w)
		if err != nil {
			if p.result.Kind == KindProvider {
				return &artifact.LayoutError{Ref: p.name(), Problem: err.Error()}
			}
			return fmt.Errorf("%s: %w", p.name(), err)
		}
		p.images = append(p.images, img)
		p.result.Images = append(p.result.Images, Image{
			Written: img.Written,
			Name:    img.Name,
			Source:  img.Source,
			Target:  r.targetOf(img.Source),
		})
	}
	return nil
}

// targetOf is where a source reference lands.
func (r *runner) targetOf(src artifact.Reference) artifact.Reference {
	return artifact.Reference{Host: r.opts.Target.Host, Repository: r.opts.Target.Repository(src.Repository), Tag: src.Tag, Digest: src.Digest}
}

// resolveArtifact returns the descriptor of the fetched artifact manifest.
func (r *runner) resolveArtifact(ctx context.Context, ref artifact.Reference, manifestDigest string) (ocispec.Descriptor, error) {
	repo, err := r.repository(false, ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := repo.Resolve(ctx, manifestDigest)
	if err != nil {
		return ocispec.Descriptor{}, artifact.RegistryError(ref, "resolving", err)
	}
	return desc, nil
}

// repack rebuilds a one-file-per-layer artifact in the contract layout and
// stages it in memory for the copier. It returns the components.
func (r *runner) repack(ctx context.Context, p *plan) ([]byte, error) {
	ref := p.result.Source
	if ref.Tag == "" {
		return nil, fmt.Errorf("%s: repacking needs the tag (the version): the repacked artifact gets a new digest and is found by its tag", ref)
	}
	rp, err := r.fetcher.Repack(ctx, ref, r.opts.SourceAccess)
	if err != nil {
		return nil, err
	}
	staged, desc, err := artifact.Stage(ctx, rp.Files, rp.Annotations, ref.Tag)
	if err != nil {
		return nil, fmt.Errorf("repacking %s: %w", ref, err)
	}
	p.staged, p.desc = staged, desc
	p.result.Repacked = true
	p.result.SourceDigest = rp.SourceDigest
	r.rec.emit(Event{Kind: Repacked, Ref: ref.String(), SourceDigest: rp.SourceDigest, Digest: p.desc.Digest.String()})
	return rp.Files[clusterctl.ComponentsFile(rp.Type)], nil
}

// componentsOf returns the components file of a contract artifact: the one
// its provider-type annotation names, else its only {type}-components.yaml.
func componentsOf(f *artifact.Fetched) ([]byte, error) {
	layoutErr := func(problem, hint string) error {
		return &artifact.LayoutError{Ref: f.Ref.String(), Problem: problem, Hint: hint}
	}
	if _, ok := f.Files[artifact.MetadataFile]; !ok {
		return nil, layoutErr("its layer lacks "+artifact.MetadataFile+" at the root", "a provider artifact holds metadata.yaml and {type}-components.yaml")
	}
	if t := f.Annotations[artifact.AnnotationProviderType]; t != "" {
		file := clusterctl.ComponentsFile(t)
		data, ok := f.Files[file]
		if file == "" || !ok {
			return nil, layoutErr(fmt.Sprintf("its annotation %s is %q but its layer holds no such components file", artifact.AnnotationProviderType, t), "")
		}
		return data, nil
	}
	var found []string
	for _, file := range slices.Sorted(maps.Keys(f.Files)) {
		if t, ok := strings.CutSuffix(file, "-components.yaml"); ok && clusterctl.IsProviderType(t) {
			found = append(found, file)
		}
	}
	if len(found) != 1 {
		return nil, layoutErr(fmt.Sprintf("its layer holds %d {type}-components.yaml files (%s), expected one", len(found), strings.Join(found, ", ")), "")
	}
	return f.Files[found[0]], nil
}

// ConflictError is two or more sources that would land in the same target
// repository (the target drops the source host), or a source that is its
// own target. Nothing was copied.
type ConflictError struct {
	// Conflicts maps a target repository to its sources (host/path).
	Conflicts map[string][]string
}

func (e *ConflictError) Error() string {
	var parts []string
	for _, target := range slices.Sorted(maps.Keys(e.Conflicts)) {
		parts = append(parts, fmt.Sprintf("%s <- %s", target, strings.Join(e.Conflicts[target], " and ")))
	}
	return fmt.Sprintf("nothing was copied: sources would share a target repository or be copied onto themselves (%s); the target keeps each source's path without its host, so mirror such sources in separate runs to different --to prefixes",
		strings.Join(parts, "; "))
}

// checkConflicts refuses a run in which two sources map to one target
// repository, or a source to itself.
func checkConflicts(target Target, plans []*plan) error {
	sources := map[string][]string{}
	add := func(src artifact.Reference, from string) {
		to := target.Host + "/" + target.Repository(src.Repository)
		if !slices.Contains(sources[to], from) {
			sources[to] = append(sources[to], from)
		}
	}
	for _, p := range plans {
		if p.result.Err != nil {
			continue
		}
		src := p.result.Source
		from := src.Host + "/" + src.Repository
		if p.result.Provider != "" && src.Host == "" {
			from = "the release of " + p.result.Provider
		}
		add(src, from)
		for _, img := range p.images {
			add(img.Source, img.Source.Host+"/"+img.Source.Repository)
		}
	}
	conflicts := map[string][]string{}
	for to, from := range sources {
		if len(from) > 1 || from[0] == to {
			slices.Sort(from)
			conflicts[to] = from
		}
	}
	if len(conflicts) > 0 {
		return &ConflictError{Conflicts: conflicts}
	}
	return nil
}
