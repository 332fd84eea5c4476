package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// staged is one artifact staged in memory, ready to be pushed or written
// to a layout: its root manifest (or index) and where it goes.
type staged struct {
	// what names it in messages: "image", "chart", "manifests".
	what string
	// path is the repository inside the registry (prefix/name).
	path     string
	artifact Artifact
	desc     ocispec.Descriptor
	// manifest is the root's bytes, pushed again under the tag.
	manifest []byte
}

// push stores a blob unless the store has it already (layers shared
// between artifacts).
func push(ctx context.Context, s content.Pusher, desc ocispec.Descriptor, r io.Reader) error {
	if err := s.Push(ctx, desc, r); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return fmt.Errorf("staging %s %s: %w", desc.MediaType, desc.Digest, err)
	}
	return nil
}

func pushBytes(ctx context.Context, s content.Pusher, mediaType string, data []byte) (ocispec.Descriptor, error) {
	desc := descriptorOf(mediaType, data)
	return desc, push(ctx, s, desc, bytes.NewReader(data))
}

// stageImage copies a go-containerregistry image into s: layers, config,
// manifest. It returns the manifest's descriptor and bytes.
func stageImage(ctx context.Context, s content.Pusher, img v1.Image) (ocispec.Descriptor, []byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	for _, l := range layers {
		if err := stageLayer(ctx, s, l); err != nil {
			return ocispec.Descriptor{}, nil, err
		}
	}
	manifest, err := img.Manifest()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	if _, err := pushBytes(ctx, s, string(manifest.Config.MediaType), config); err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	return stageRoot(ctx, s, img)
}

// stageIndex copies an image index and all its images into s.
func stageIndex(ctx context.Context, s content.Pusher, idx v1.ImageIndex) (ocispec.Descriptor, []byte, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return ocispec.Descriptor{}, nil, err
		}
		if _, _, err := stageImage(ctx, s, img); err != nil {
			return ocispec.Descriptor{}, nil, err
		}
	}
	return stageRoot(ctx, s, idx)
}

func stageLayer(ctx context.Context, s content.Pusher, l v1.Layer) error {
	mediaType, err := l.MediaType()
	if err != nil {
		return err
	}
	d, err := l.Digest()
	if err != nil {
		return err
	}
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return push(ctx, s, ocispec.Descriptor{MediaType: string(mediaType), Digest: digest.Digest(d.String()), Size: size}, rc)
}

// manifestLike is what images and indexes share.
type manifestLike interface {
	RawManifest() ([]byte, error)
	MediaType() (types.MediaType, error)
}

// stageRoot stores an image's manifest or an index itself.
func stageRoot(ctx context.Context, s content.Pusher, m manifestLike) (ocispec.Descriptor, []byte, error) {
	raw, err := m.RawManifest()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	mediaType, err := m.MediaType()
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	desc, err := pushBytes(ctx, s, string(mediaType), raw)
	return desc, raw, err
}
