package mirror

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/capwright/capwright/internal/artifact"
)

// blobPlace tracks a blob across the target repositories of a run.
type blobPlace struct {
	// repos hold the blob (uploaded, mounted or found there).
	repos []string
	// uploading is closed when the upload in flight ends.
	uploading chan struct{}
}

// blob copies a blob unless the target repository has it: mounted from a
// target repository that received it earlier in this run, else uploaded
// from the source. Two uploads of the same blob never run at once: the
// second waits, then mounts.
func (c *copier) blob(ctx context.Context, r route, desc ocispec.Descriptor, present bool) error {
	_, err := c.once(ctx, nodeKey{r.repo(), desc.Digest}, func(*node) error {
		event := Event{Subject: r.subject, Repository: r.repo(), Digest: desc.Digest.String(), Size: desc.Size}
		err := c.placeBlob(ctx, r, desc, present, &event)
		if err != nil {
			event.Kind, event.Err = BlobFailed, err
		}
		c.rec.emit(event)
		return err
	})
	return err
}

func (c *copier) placeBlob(ctx context.Context, r route, desc ocispec.Descriptor, present bool, event *Event) error {
	if r.maxBlob > 0 && desc.Size > r.maxBlob {
		return &artifact.TooLargeError{Ref: atDigest(r.srcRef, desc.Digest).String(), What: "blob", Size: desc.Size, Limit: r.maxBlob}
	}
	if present {
		c.placed(desc.Digest, r.repo())
		event.Kind = BlobSkipped
		return nil
	}
	for {
		from, wait := c.claim(desc.Digest)
		if wait != nil {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// Asked only now, once no upload of the blob is in flight: a
		// registry that keeps one copy of a blob for all its repositories
		// has it by now if an earlier upload of this run put it there.
		present, err := c.exists(ctx, r, desc)
		if err == nil && present {
			if from == "" {
				c.uploaded(desc.Digest, r.repo(), true)
			} else {
				c.placed(desc.Digest, r.repo())
			}
			event.Kind = BlobSkipped
			return nil
		}
		switch {
		case err != nil:
			if from == "" {
				c.uploaded(desc.Digest, r.repo(), false)
			}
			return err
		case from != "":
			uploaded, err := c.mount(ctx, r, desc, from)
			if err != nil {
				return err
			}
			c.placed(desc.Digest, r.repo())
			event.Kind = BlobMounted
			if uploaded {
				event.Kind = BlobCopied
			}
			return nil
		default:
			err := c.upload(ctx, r, desc)
			c.uploaded(desc.Digest, r.repo(), err == nil)
			if err != nil {
				return err
			}
			event.Kind = BlobCopied
			return nil
		}
	}
}

// claim returns a target repository that holds the blob, or the channel of
// the upload in flight, or neither, in which case the caller now owns the
// upload and must call uploaded.
func (c *copier) claim(d digest.Digest) (from string, wait <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	place := c.blobs[d]
	if place == nil {
		place = &blobPlace{}
		c.blobs[d] = place
	}
	switch {
	case len(place.repos) > 0:
		return place.repos[0], nil
	case place.uploading != nil:
		return "", place.uploading
	}
	place.uploading = make(chan struct{})
	return "", nil
}

func (c *copier) uploaded(d digest.Digest, repo string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	place := c.blobs[d]
	if ok {
		place.repos = append(place.repos, repo)
	}
	close(place.uploading)
	place.uploading = nil
}

func (c *copier) placed(d digest.Digest, repo string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	place := c.blobs[d]
	if place == nil {
		place = &blobPlace{}
		c.blobs[d] = place
	}
	place.repos = append(place.repos, repo)
}

// mount links the blob from another repository of the target registry
// (from is host/path). Registries that cannot mount answer by starting an
// upload, which oras-go completes with the source content; uploaded
// reports that. A failed mount falls back to an upload.
func (c *copier) mount(ctx context.Context, r route, desc ocispec.Descriptor, from string) (uploaded bool, err error) {
	if err := c.acquireTransfer(ctx); err != nil {
		return false, err
	}
	defer c.releaseTransfer()
	fromRepo := strings.TrimPrefix(from, r.dstRef.Host+"/")
	err = r.dst.Mount(ctx, desc, fromRepo, func() (io.ReadCloser, error) {
		uploaded = true
		return c.fetchBlob(ctx, r, desc)
	})
	if err != nil {
		if ctx.Err() != nil {
			return uploaded, ctx.Err()
		}
		var denied *artifact.AuthError
		if mapped := artifact.RegistryError(r.dstRef, "mounting a blob into", err); errors.As(mapped, &denied) {
			return uploaded, mapped
		}
		return true, c.pushBlob(ctx, r, desc)
	}
	r.wrote.Store(true)
	return uploaded, nil
}

func (c *copier) upload(ctx context.Context, r route, desc ocispec.Descriptor) error {
	if err := c.acquireTransfer(ctx); err != nil {
		return err
	}
	defer c.releaseTransfer()
	return c.pushBlob(ctx, r, desc)
}

// pushBlob streams a blob from the source to the target.
func (c *copier) pushBlob(ctx context.Context, r route, desc ocispec.Descriptor) error {
	rc, err := c.fetchBlob(ctx, r, desc)
	if err != nil {
		return err
	}
	defer rc.Close()
	err = r.dst.Push(ctx, desc, rc)
	if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return artifact.RegistryError(r.dstRef, "pushing blob "+desc.Digest.String()+" to", err)
	}
	r.wrote.Store(true)
	return nil
}

// fetchBlob opens a blob of the source, read no further than its size.
// The target checks the digest of what it receives (the upload names it),
// so the stream is not hashed twice.
func (c *copier) fetchBlob(ctx context.Context, r route, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := r.src.Fetch(ctx, desc)
	if err != nil {
		return nil, artifact.RegistryError(atDigest(r.srcRef, desc.Digest), "fetching blob", err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(rc, desc.Size), rc}, nil
}
