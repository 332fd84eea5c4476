package mirror

import (
	"context"
	"slices"
	"strings"

	"github.com/capwright/capwright/internal/artifact"
)

// complete tells whether the cache's completion of a planned reference
// still holds, and then reports the reference done without walking its
// content: the artifact's tag still resolves at the source to the
// recorded digest (resolved while planning: no request here), and the
// target still holds the reference's tag, or digest, at that digest (one
// request). The artifact's tag is written only after its images and
// referrers, so a target holding it at that digest held all of it when it
// was written; a target that lost it is walked again, as is anything the
// cache has no record of.
//
// The images' tags are taken as recorded while the completion is younger
// than CompletionTTL: a release's images are promoted once and not
// re-tagged (registry.k8s.io's and the providers' registries), an image
// pinned by digest cannot move, and the next run after a day resolves
// every image tag again. A re-run within the day thus asks one question
// per reference at each end, and none per image.
func (r *runner) complete(ctx context.Context, p *plan) bool {
	if r.opts.Cache == nil || p.staged != nil {
		return false
	}
	target, source := r.opts.Target.String(), p.result.Source.String()
	done, ok := r.opts.Cache.completion(target, source)
	if !ok || done.Digest != p.desc.Digest.String() {
		return false
	}
	for _, img := range p.images {
		recorded := done.Images[img.Source.String()]
		if recorded == "" || (img.Source.Digest != "" && img.Source.Digest != recorded) {
			return false // an image the record does not name as it is named now
		}
	}
	if !r.targetHolds(ctx, p.result.Target, done.Digest) {
		r.opts.Cache.forget(target, source)
		return false
	}

	r.mu.Lock()
	for _, img := range p.images {
		r.cachedImages[img.Source.String()] = img
	}
	r.mu.Unlock()
	res := &p.result
	res.Target.Digest, res.Digest = done.Digest, done.Digest
	res.Skipped, res.Cached = true, true
	r.rec.emit(Event{Kind: RefDone, Ref: p.name(), ArtifactKind: res.Kind, Repository: res.Target.Host + "/" + res.Target.Repository,
		Digest: res.Digest, Skipped: true})
	return true
}

// targetHolds asks the target whether ref's tag, or its digest when it has
// no tag, names digest.
func (r *runner) targetHolds(ctx context.Context, ref artifact.Reference, digest string) bool {
	repo, err := r.repository(true, ref)
	if err != nil {
		return false
	}
	want := ref.Tag
	if want == "" {
		want = digest
	}
	if err := r.copier.acquire(ctx); err != nil {
		return false
	}
	defer r.copier.release()
	desc, err := repo.Resolve(ctx, want)
	return err == nil && desc.Digest.String() == digest
}

// recordCompletion records a reference mirrored completely, with the
// digests its images resolved to, for the next run.
func (r *runner) recordCompletion(p *plan) {
	if r.opts.Cache == nil || p.staged != nil {
		return
	}
	done := completion{
		Target: r.opts.Target.String(),
		Source: p.result.Source.String(),
		Digest: p.desc.Digest.String(),
		Images: map[string]string{},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, img := range p.images {
		job := r.images[img.Source.String()]
		if job == nil || job.digest == "" {
			return
		}
		done.Images[img.Source.String()] = job.digest
	}
	r.opts.Cache.putCompletion(done)
}

// countCachedImages reports the images of references the cache found
// complete as already present, once each, unless the run copied them for
// another reference.
func (r *runner) countCachedImages() {
	r.mu.Lock()
	var present []imageRef
	for source, img := range r.cachedImages {
		if _, copied := r.images[source]; !copied {
			present = append(present, img)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(present, func(a, b imageRef) int { return strings.Compare(a.Written, b.Written) })
	for _, img := range present {
		r.rec.emit(Event{Kind: ImageDone, Subject: img.Written, Repository: r.opts.Target.Host + "/" + r.opts.Target.Repository(img.Source.Repository), Skipped: true})
	}
}
