package mirror

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/artifact"
)

// DefaultConcurrency is how many blob transfers a run keeps in flight
// when Options.Concurrency is not set: like docker and containerd, a few
// parallel transfers fill a link without overwhelming a registry.
const DefaultConcurrency = 4

// DefaultMaxMetadataSize bounds each manifest read when
// Options.MaxMetadataSize is not set (oras-go's default for copies).
const DefaultMaxMetadataSize int64 = 4 << 20

// Options of a run.
type Options struct {
	Target Target
	// SourceAccess reaches the registries the artifacts and images come
	// from, TargetAccess the target; the CLI gives both the same flags and
	// credential chain.
	SourceAccess, TargetAccess artifact.Access
	// Concurrency bounds the blob transfers in flight, and
	// MetadataRequestsPerTransfer times it the other registry requests
	// (HEAD, manifests, referrers, tags); 0 means DefaultConcurrency.
	Concurrency int
	// Repack rebuilds artifacts in the one-file-per-layer layout in the
	// contract layout; without it they fail with *artifact.LayoutError.
	Repack bool
	// MaxArtifactSize bounds each provider artifact as artifact.Fetcher
	// does; 0 means artifact.DefaultMaxArtifactSize.
	MaxArtifactSize int64
	// MaxMetadataSize bounds each manifest read; 0 means
	// DefaultMaxMetadataSize.
	MaxMetadataSize int64
	// Progress, when set, receives the events of the run.
	Progress Progress
	// Cache, when set, spares a re-run the reading of artifacts listed
	// before and the walk of references completed before (see Cache); nil
	// reads and walks everything. Run uses it for references; provider
	// releases and layouts are always read and walked.
	Cache *Cache
}

// Run mirrors each artifact reference (a tag, a digest or both) with its
// referrers and the container images its components run, with theirs, into
// opts.Target. References fail independently: Run copies what it can and
// returns the Summary with an *Error listing the references that failed.
// Two sources that would land in the same target repository stop the run
// with a *ConflictError before anything is copied.
func Run(ctx context.Context, refs []artifact.Reference, opts Options) (*Summary, error) {
	r, summary := newRunner(opts)
	defer r.close()

	plans := r.planAll(ctx, dedupe(refs))
	if err := checkConflicts(r.opts.Target, plans); err != nil {
		return summary.of(plans), err
	}
	r.mirrorAll(ctx, plans)
	return summary.of(plans), summary.err()
}

// mirrorAll copies the planned artifacts that could be read, at once.
func (r *runner) mirrorAll(ctx context.Context, plans []*plan) {
	var wg sync.WaitGroup
	for _, p := range plans {
		if p.result.Err == nil {
			wg.Go(func() { r.mirror(ctx, p) })
		}
	}
	wg.Wait()
	r.countCachedImages()
}

// newRunner applies the defaults of opts and returns the runner of a run
// with the Summary it fills.
func newRunner(opts Options) (*runner, *Summary) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.MaxMetadataSize <= 0 {
		opts.MaxMetadataSize = DefaultMaxMetadataSize
	}
	if opts.MaxArtifactSize <= 0 {
		opts.MaxArtifactSize = artifact.DefaultMaxArtifactSize
	}
	summary := &Summary{Target: opts.Target}
	rec := &recorder{summary: summary, progress: opts.Progress}
	return &runner{
		opts:         opts,
		rec:          rec,
		copier:       newCopier(opts.Concurrency, opts.MaxMetadataSize, rec),
		fetcher:      &artifact.Fetcher{MaxArtifactSize: opts.MaxArtifactSize},
		repos:        map[string]*remote.Repository{},
		images:       map[string]*imageJob{},
		cachedImages: map[string]imageRef{},
	}, summary
}

// of fills the results of the plans in.
func (s *Summary) of(plans []*plan) *Summary {
	s.Results = make([]Result, len(plans))
	for i, p := range plans {
		s.Results[i] = p.result
	}
	return s
}

// err is the *Error of the failed references, nil when none failed.
func (s *Summary) err() error {
	if failed := s.Failed(); len(failed) > 0 {
		return &Error{Failed: failed, Total: len(s.Results)}
	}
	return nil
}

func dedupe(refs []artifact.Reference) []artifact.Reference {
	seen := map[string]bool{}
	var out []artifact.Reference
	for _, ref := range refs {
		if !seen[ref.String()] {
			seen[ref.String()] = true
			out = append(out, ref)
		}
	}
	return out
}

// runner holds the state of one run.
type runner struct {
	opts    Options
	rec     *recorder
	copier  *copier
	fetcher *artifact.Fetcher
	// layout, when set, is the source of every copy (RunLayout).
	layout content.ReadOnlyGraphStorage

	mu       sync.Mutex
	repos    map[string]*remote.Repository
	releases []func()
	images   map[string]*imageJob
	// cachedImages are the images of references the cache found
	// complete, by source reference and as written.
	cachedImages map[string]imageRef
}

func (r *runner) close() {
	for _, release := range r.releases {
		release()
	}
}

// repository returns the one client of a source or target repository for
// the run, so each keeps its connections and auth tokens.
func (r *runner) repository(target bool, ref artifact.Reference) (*remote.Repository, error) {
	access, side := r.opts.SourceAccess, "source "
	if target {
		access, side = r.opts.TargetAccess, "target "
	}
	key := side + ref.Host + "/" + ref.Repository
	r.mu.Lock()
	defer r.mu.Unlock()
	if repo, ok := r.repos[key]; ok {
		return repo, nil
	}
	repo, release, err := access.Repository(artifact.Reference{Host: ref.Host, Repository: ref.Repository}, r.opts.MaxMetadataSize)
	if err != nil {
		return nil, err
	}
	r.repos[key] = repo
	r.releases = append(r.releases, release)
	return repo, nil
}

// route is a copy from a source repository into its target repository.
func (r *runner) route(src artifact.Reference, subject string, wrote *atomic.Bool) (route, error) {
	from := r.layout
	if from == nil {
		repo, err := r.repository(false, src)
		if err != nil {
			return route{}, err
		}
		from = repo
	}
	return r.routeFrom(from, src, subject, wrote)
}

// routeFrom is a copy from the store from, holding src's content, into
// src's target repository.
func (r *runner) routeFrom(from content.ReadOnlyGraphStorage, src artifact.Reference, subject string, wrote *atomic.Bool) (route, error) {
	dst := artifact.Reference{Host: r.opts.Target.Host, Repository: r.opts.Target.Repository(src.Repository)}
	dstRepo, err := r.repository(true, dst)
	if err != nil {
		return route{}, err
	}
	return route{
		src:     from,
		srcRef:  artifact.Reference{Host: src.Host, Repository: src.Repository},
		dst:     dstRepo,
		dstRef:  dst,
		subject: subject,
		wrote:   wrote,
	}, nil
}

// mirror copies one planned artifact: its images and its own graph with
// referrers at once, then, when all of them are in place, its tag.
func (r *runner) mirror(ctx context.Context, p *plan) {
	if r.complete(ctx, p) {
		return
	}
	var wrote atomic.Bool
	imageErrs := make([]error, len(p.images))
	imagesWrote := make([]bool, len(p.images))
	var wg sync.WaitGroup
	for i, img := range p.images {
		wg.Go(func() { imagesWrote[i], imageErrs[i] = r.image(ctx, img) })
	}

	rt, root, err := r.copyArtifact(ctx, p, &wrote)
	wg.Wait()
	if err != nil {
		r.fail(p, err)
		return
	}
	var failedImages []string
	var firstErr error
	for i, err := range imageErrs {
		if err != nil {
			failedImages = append(failedImages, p.images[i].Written)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if len(failedImages) > 0 {
		r.fail(p, &ImageError{Images: failedImages, Err: firstErr})
		return
	}
	r.finish(ctx, p, rt, root, &wrote, slices.Contains(imagesWrote, true))
}

// fail records that a planned reference failed; its tag is not written.
func (r *runner) fail(p *plan, err error) {
	p.result.Err = err
	r.rec.emit(Event{Kind: RefFailed, Ref: p.name(), ArtifactKind: p.result.Kind, Err: err})
}

// finish writes the tag of a reference whose content is in place, and
// reports it done; skipped when neither it (wrote) nor its images wrote
// anything.
func (r *runner) finish(ctx context.Context, p *plan, rt route, root *node, wrote *atomic.Bool, imagesWrote bool) {
	res := &p.result
	if res.Target.Tag != "" {
		if err := r.copier.tag(ctx, rt, p.desc, root.data, res.Target.Tag); err != nil {
			r.fail(p, err)
			return
		}
	}
	res.Target.Digest = p.desc.Digest.String()
	res.Digest = p.desc.Digest.String()
	res.Skipped = !wrote.Load() && !imagesWrote
	r.recordCompletion(p)
	r.rec.emit(Event{Kind: RefDone, Ref: p.name(), ArtifactKind: res.Kind, Repository: rt.repo(), Digest: res.Digest, Skipped: res.Skipped})
}

// copyArtifact copies the artifact manifest with its blobs and referrers,
// untagged. A repacked artifact, or one packed from a provider release,
// comes from memory and has no referrers: signatures of the published
// digest do not sign the repacked one.
func (r *runner) copyArtifact(ctx context.Context, p *plan, wrote *atomic.Bool) (route, *node, error) {
	var rt route
	var err error
	if p.staged != nil {
		rt, err = r.routeFrom(p.staged, p.result.Source, p.name(), wrote)
	} else {
		rt, err = r.route(p.result.Source, p.name(), wrote)
	}
	if err != nil {
		return route{}, nil, err
	}
	if k := p.result.Kind; k == KindProvider || k.isRelease() {
		// Images and other content of a layout stream like image layers.
		rt.maxBlob = r.opts.MaxArtifactSize
	}
	root, err := r.copier.tree(ctx, rt, p.desc)
	return rt, root, err
}

// imageJob is one image shared by the artifacts that run it.
type imageJob struct {
	done  chan struct{}
	wrote bool
	err   error
	// digest is the manifest the image reference resolved to.
	digest string
}

// image copies an image with all its platforms and referrers and writes
// its tag, once per run however many artifacts use it. It reports whether
// anything was written.
func (r *runner) image(ctx context.Context, img imageRef) (bool, error) {
	key := img.Source.String()
	r.mu.Lock()
	job, running := r.images[key]
	if !running {
		job = &imageJob{done: make(chan struct{})}
		r.images[key] = job
	}
	r.mu.Unlock()
	if running {
		select {
		case <-job.done:
			return job.wrote, job.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	defer close(job.done)
	var wrote atomic.Bool
	job.digest, job.err = r.copyImage(ctx, img, &wrote)
	job.wrote = wrote.Load()
	r.rec.emit(Event{Kind: ImageDone, Subject: img.Written, Repository: r.opts.Target.Host + "/" + r.opts.Target.Repository(img.Source.Repository),
		Skipped: !job.wrote, Err: job.err})
	return job.wrote, job.err
}

// copyImage copies an image and returns the digest its reference
// resolved to.
func (r *runner) copyImage(ctx context.Context, img imageRef, wrote *atomic.Bool) (string, error) {
	rt, err := r.route(img.Source, img.Written, wrote)
	if err != nil {
		return "", err
	}
	desc, err := r.resolve(ctx, img.Source)
	if err != nil {
		return "", err
	}
	root, err := r.copier.tree(ctx, rt, desc)
	if err != nil {
		return "", err
	}
	if img.Source.Tag != "" {
		if err := r.copier.tag(ctx, rt, desc, root.data, img.Source.Tag); err != nil {
			return "", err
		}
	}
	return desc.Digest.String(), nil
}

// resolve finds the manifest an image reference names in the source: its
// digest when pinned, else its tag.
func (r *runner) resolve(ctx context.Context, ref artifact.Reference) (ocispec.Descriptor, error) {
	repo, err := r.repository(false, ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	want := ref.Tag
	if ref.Digest != "" {
		want = ref.Digest
	}
	if err := r.copier.acquire(ctx); err != nil {
		return ocispec.Descriptor{}, err
	}
	defer r.copier.release()
	desc, err := repo.Resolve(ctx, want)
	if err != nil {
		return ocispec.Descriptor{}, artifact.RegistryError(ref, "resolving", err)
	}
	return desc, nil
}

// Error lists the references a run could not mirror. errors.As and
// errors.Is reach each reference's error.
type Error struct {
	Failed []Result
	// Total is the number of references of the run.
	Total int
}

func (e *Error) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for _, f := range e.Failed {
		parts = append(parts, fmt.Sprintf("%s: %v", f.Name(), f.Err))
	}
	return fmt.Sprintf("%d of %d references not mirrored: %s", len(e.Failed), e.Total, strings.Join(parts, "; "))
}

func (e *Error) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed))
	for _, f := range e.Failed {
		errs = append(errs, f.Err)
	}
	return errs
}

// ImageError is an artifact whose images could not all be mirrored; its
// tag was not written. Err is the first image's error.
type ImageError struct {
	Images []string
	Err    error
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("%d image(s) not mirrored (%s), so the artifact's tag was not written: %v", len(e.Images), strings.Join(e.Images, ", "), e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

// tagOf is ":tag" and/or "@digest" of ref.
func tagOf(ref artifact.Reference) string {
	return strings.TrimPrefix(ref.String(), ref.Host+"/"+ref.Repository)
}
