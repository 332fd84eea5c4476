package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/artifact"
)

// Media types of manifests, whose successors are copied before them, and
// of foreign (non-distributable) layers, which registries do not hold and
// oras-go does not copy either.
const (
	mediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeArtifactManifest   = "application/vnd.oci.artifact.manifest.v1+json"
	mediaTypeDockerForeignLayer = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
	mediaTypeOCIForeignPrefix   = "application/vnd.oci.image.layer.nondistributable."
)

func isManifest(desc ocispec.Descriptor) bool {
	switch desc.MediaType {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		mediaTypeDockerManifest, mediaTypeDockerManifestList, mediaTypeArtifactManifest:
		return true
	}
	return false
}

func isForeignLayer(desc ocispec.Descriptor) bool {
	return desc.MediaType == mediaTypeDockerForeignLayer || strings.HasPrefix(desc.MediaType, mediaTypeOCIForeignPrefix)
}

// copier copies content graphs into target repositories. Each (target
// repository, digest) is handled once per run, whoever asks for it; a blob
// that reached another target repository earlier in the run is mounted
// from there instead of uploaded again. Every blob transfer holds one of
// the transfer slots, so Concurrency bounds the transfers in flight across
// the run; every other request (a HEAD, a manifest, a referrers list, a
// tag) holds one of MetadataRequestsPerTransfer times as many request
// slots: they move next to no bytes, and a run of three providers makes
// ten of them per transfer, each waiting a round trip. Nobody holds a slot
// while waiting for other work.
type copier struct {
	transfers   chan struct{}
	slots       chan struct{}
	maxMetadata int64
	rec         *recorder

	mu    sync.Mutex
	nodes map[nodeKey]*node
	blobs map[digest.Digest]*blobPlace
}

func newCopier(concurrency int, maxMetadata int64, rec *recorder) *copier {
	return &copier{
		transfers:   make(chan struct{}, concurrency),
		slots:       make(chan struct{}, concurrency*MetadataRequestsPerTransfer),
		maxMetadata: maxMetadata,
		rec:         rec,
		nodes:       map[nodeKey]*node{},
		blobs:       map[digest.Digest]*blobPlace{},
	}
}

type nodeKey struct {
	repo   string
	digest digest.Digest
}

// node is the shared outcome of copying one manifest or blob into one
// target repository.
type node struct {
	done chan struct{}
	err  error
	// data of a manifest, and its child manifests (an index's platforms).
	data     []byte
	children []ocispec.Descriptor
}

// route is one copy: content of a source store into a target repository.
type route struct {
	src content.ReadOnlyGraphStorage
	// srcRef names the source in errors (host and repository).
	srcRef artifact.Reference
	dst    *remote.Repository
	// dstRef is the target host and repository.
	dstRef artifact.Reference
	// subject is the artifact or image being copied, for events.
	subject string
	// maxBlob bounds each blob of the root (the artifact's layer); 0 leaves
	// blobs bounded by their descriptors only, which are digest-checked.
	maxBlob int64
	// wrote records that something was written for the subject.
	wrote *atomic.Bool
}

func (r route) repo() string { return r.dstRef.Host + "/" + r.dstRef.Repository }

// atDigest is ref's repository at digest d, for errors.
func atDigest(ref artifact.Reference, d digest.Digest) artifact.Reference {
	ref.Tag, ref.Digest = "", d.String()
	return ref
}

// MetadataRequestsPerTransfer is how many requests that move no blob may
// be in flight per blob transfer (Options.Concurrency).
const MetadataRequestsPerTransfer = 4

// acquire takes a request slot.
func (c *copier) acquire(ctx context.Context) error { return take(ctx, c.slots) }

func (c *copier) release() { <-c.slots }

// acquireTransfer takes a transfer slot, for a request that moves a blob.
func (c *copier) acquireTransfer(ctx context.Context) error { return take(ctx, c.transfers) }

func (c *copier) releaseTransfer() { <-c.transfers }

func take(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// once runs fn for key unless another caller did or does; all callers get
// the same outcome.
func (c *copier) once(ctx context.Context, key nodeKey, fn func(n *node) error) (*node, error) {
	c.mu.Lock()
	if n, ok := c.nodes[key]; ok {
		c.mu.Unlock()
		select {
		case <-n.done:
			return n, n.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n := &node{done: make(chan struct{})}
	c.nodes[key] = n
	c.mu.Unlock()
	n.err = fn(n)
	close(n.done)
	return n, n.err
}

// tree copies root with everything below it, then the referrers of root
// and of its child manifests (signatures and SBOMs of an index or of one
// platform), recursively. It returns the root's node.
func (c *copier) tree(ctx context.Context, r route, root ocispec.Descriptor) (*node, error) {
	n, err := c.manifest(ctx, r, root, false)
	if err != nil {
		return nil, err
	}
	// The blob bound is for the root's own content: referrers (an SBOM)
	// may be larger, and are streamed like image layers.
	r.maxBlob = 0
	subjects := append([]ocispec.Descriptor{root}, n.children...)
	err = parallel(len(subjects), func(i int) error {
		if err := c.referrers(ctx, r, subjects[i]); err != nil {
			return err
		}
		return c.cosignTags(ctx, r, subjects[i])
	})
	return n, err
}

// cosignSuffixes are the suffixes of the tags cosign keeps a subject's
// signatures, attestations and SBOMs under when it does not use the
// referrers API (its default): <algorithm>-<hex>.sig, .att and .sbom, in
// the subject's repository. Verification at the target (Flux's
// OCIRepository verify, cosign verify) looks them up by the same names.
var cosignSuffixes = []string{"sig", "att", "sbom"}

// cosignTags copies the manifests cosign tagged for subject in the source,
// under the same tags. A source that cannot resolve tags has none to copy.
func (c *copier) cosignTags(ctx context.Context, r route, subject ocispec.Descriptor) error {
	resolver, ok := r.src.(content.Resolver)
	if !ok {
		return nil
	}
	return parallel(len(cosignSuffixes), func(i int) error {
		tag := artifact.CosignTag(subject.Digest, cosignSuffixes[i])
		if err := c.acquire(ctx); err != nil {
			return err
		}
		desc, err := resolver.Resolve(ctx, tag)
		c.release()
		ref := r.srcRef
		ref.Tag = tag
		switch {
		case errors.Is(err, errdef.ErrNotFound):
			return nil
		case err != nil:
			return artifact.RegistryError(ref, "resolving", err)
		case !isManifest(desc):
			return fmt.Errorf("%s is a %s, not the manifest cosign stores there", ref, desc.MediaType)
		}
		n, err := c.manifest(ctx, r, desc, false)
		if err != nil {
			return err
		}
		return c.tag(ctx, r, desc, n.data, tag)
	})
}

// manifest copies a manifest after its successors. present says that an
// ancestor exists in the target, so this one does too: registries keep a
// manifest only with what it references, and this copier pushes children
// first. Its successors are still walked, to count them and to find child
// manifests with referrers, reading a manifest the target has from the
// target (pulls from public registries may be rate-limited).
func (c *copier) manifest(ctx context.Context, r route, desc ocispec.Descriptor, present bool) (*node, error) {
	return c.once(ctx, nodeKey{r.repo(), desc.Digest}, func(n *node) error {
		var err error
		if !present {
			if present, err = c.exists(ctx, r, desc); err != nil {
				return err
			}
		}
		from, ref := r.src, r.srcRef
		if present {
			from, ref = r.dst, r.dstRef
		}
		data, err := c.fetchManifest(ctx, from, atDigest(ref, desc.Digest), desc)
		if err != nil {
			return err
		}
		n.data = data
		successors, err := content.Successors(ctx, staticFetcher(data), desc)
		if err != nil {
			return fmt.Errorf("reading manifest %s of %s: %w", desc.Digest, r.subject, err)
		}
		successors = withoutSubject(successors, data)
		for _, s := range successors {
			if isManifest(s) {
				n.children = append(n.children, s)
			}
		}
		err = parallel(len(successors), func(i int) error {
			s := successors[i]
			if isManifest(s) {
				_, err := c.manifest(ctx, r, s, present)
				return err
			}
			return c.blob(ctx, r, s, present)
		})
		if err != nil {
			return err
		}
		if present {
			c.rec.emit(Event{Kind: ManifestSkipped, Subject: r.subject, Repository: r.repo(), Digest: desc.Digest.String(), Size: desc.Size})
			return nil
		}
		if err := c.pushManifest(ctx, r, desc, data); err != nil {
			return err
		}
		c.rec.emit(Event{Kind: ManifestCopied, Subject: r.subject, Repository: r.repo(), Digest: desc.Digest.String(), Size: desc.Size})
		return nil
	})
}

// withoutSubject drops the subject from a referrer's successors: the
// subject is copied as what it is (an artifact or image), and the referrer
// after it.
func withoutSubject(successors []ocispec.Descriptor, data []byte) []ocispec.Descriptor {
	var subject struct {
		Subject *ocispec.Descriptor `json:"subject"`
	}
	_ = json.Unmarshal(data, &subject) // content.Successors decoded it already
	out := successors[:0]
	for _, s := range successors {
		if (subject.Subject != nil && s.Digest == subject.Subject.Digest) || isForeignLayer(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// referrers copies the manifests that refer to subject in the source
// (through the referrers API, or the referrers tag schema where the source
// lacks it, as oras-go falls back), and their own referrers.
func (c *copier) referrers(ctx context.Context, r route, subject ocispec.Descriptor) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	found, err := registry.Referrers(ctx, r.src, subject, "")
	c.release()
	if err != nil {
		return artifact.RegistryError(atDigest(r.srcRef, subject.Digest), "listing the referrers of", err)
	}
	return parallel(len(found), func(i int) error {
		if _, err := c.manifest(ctx, r, found[i], false); err != nil {
			return err
		}
		return c.referrers(ctx, r, found[i])
	})
}

// fetchManifest reads a manifest, bounded by the metadata limit and
// checked against its digest; ref names it in errors.
func (c *copier) fetchManifest(ctx context.Context, from content.Fetcher, ref artifact.Reference, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size > c.maxMetadata {
		return nil, &artifact.TooLargeError{Ref: ref.String(), What: "manifest", Size: desc.Size, Limit: c.maxMetadata}
	}
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.release()
	rc, err := from.Fetch(ctx, desc)
	if err != nil {
		return nil, artifact.RegistryError(ref, "fetching manifest", err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", ref, err)
	}
	return data, nil
}

// exists asks the target for a manifest or blob by digest (HEAD).
func (c *copier) exists(ctx context.Context, r route, desc ocispec.Descriptor) (bool, error) {
	if err := c.acquire(ctx); err != nil {
		return false, err
	}
	defer c.release()
	ok, err := r.dst.Exists(ctx, desc)
	if err != nil {
		return false, artifact.RegistryError(atDigest(r.dstRef, desc.Digest), "checking", err)
	}
	return ok, nil
}

func (c *copier) pushManifest(ctx context.Context, r route, desc ocispec.Descriptor, data []byte) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	err := r.dst.Push(ctx, desc, bytes.NewReader(data))
	if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return artifact.RegistryError(r.dstRef, "pushing manifest "+desc.Digest.String()+" to", err)
	}
	r.wrote.Store(true)
	return nil
}

// tag points tag at desc in the target unless it already does; data is the
// manifest, pushed again under the tag.
func (c *copier) tag(ctx context.Context, r route, desc ocispec.Descriptor, data []byte, tag string) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	ref := r.dstRef
	ref.Tag = tag
	current, err := r.dst.Resolve(ctx, tag)
	switch {
	case err == nil && current.Digest == desc.Digest:
		return nil
	case err != nil && !errors.Is(err, errdef.ErrNotFound):
		return artifact.RegistryError(ref, "resolving", err)
	}
	if err := r.dst.PushReference(ctx, desc, bytes.NewReader(data), tag); err != nil {
		return artifact.RegistryError(ref, "tagging", err)
	}
	r.wrote.Store(true)
	c.rec.emit(Event{Kind: TagWritten, Subject: r.subject, Repository: r.repo(), Digest: desc.Digest.String(), Tag: tag})
	return nil
}

// parallel runs fn for 0..n-1 at once and returns the first error.
func parallel(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// staticFetcher serves one manifest already read, so content.Successors
// decodes it without another request.
type staticFetcher []byte

func (f staticFetcher) Fetch(context.Context, ocispec.Descriptor) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(f)), nil
}
