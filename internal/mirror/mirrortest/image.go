// Package mirrortest pushes what `capwright mirror` copies to test
// registries: synthetic multi-platform container images with deterministic
// content, provider artifacts built from the real Cluster API release
// files with their image references pointing at a test registry, artifacts
// in the older one-file-per-layer layout, and referrers (SBOMs) attached to
// a manifest. Unit tests, benchmarks and the e2e suite share it.
package mirrortest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/artifact"
)

// maxMetadata bounds what the helpers read back.
const maxMetadata = 4 << 20

// Layer is a layer of random bytes: the same Seed and Size give the same
// content, so reruns push the same digests.
type Layer struct {
	Seed uint64
	Size int64
}

// Image is a synthetic container image: an OCI index with one image
// manifest per platform, each with its config and layers.
type Image struct {
	// Seed derives the content of every layer and config; the same Image
	// always has the same digests.
	Seed uint64
	// Platforms as os/arch; nil means linux/amd64 and linux/arm64.
	Platforms []string
	// LayerSizes are the sizes of each platform's own layers.
	LayerSizes []int64
	// Base, when its Size is not 0, is the first layer of every platform,
	// shared with every image that has the same Base.
	Base Layer
}

// SharedBase is a 16 KiB base layer for SmallImage.
var SharedBase = Layer{Seed: 0x6261_7365, Size: 16 << 10}

// SmallImage is an image for tests: amd64 and arm64, three small layers
// each over SharedBase.
func SmallImage(seed uint64) Image {
	return Image{Seed: seed, LayerSizes: []int64{40 << 10, 24 << 10, 8 << 10}, Base: SharedBase}
}

// RealSizeBase is the 2 MiB base layer RealSizeImage shares.
var RealSizeBase = Layer{Seed: 0x6261_7365_5f32, Size: 2 << 20}

// RealSizeImage is an image of the size of a provider controller image:
// amd64 and arm64, each with RealSizeBase and four layers of its own of
// about 14, 9, 4 and 1 MiB (±15 %, from the seed): 27–36 MB per platform.
func RealSizeImage(seed uint64) Image {
	r := rand.New(rand.NewPCG(seed, 0x7369_7a65))
	sizes := []int64{14 << 20, 9 << 20, 4 << 20, 1 << 20}
	for i := range sizes {
		sizes[i] += (r.Int64N(sizes[i]*3/10) - sizes[i]*3/20) &^ 0xfff
	}
	return Image{Seed: seed, LayerSizes: sizes, Base: RealSizeBase}
}

// SeedOf is a stable seed for a name.
func SeedOf(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// ImageSeed is the seed of an image reference without its registry host,
// so that an image gets the same content, digests and sizes whichever
// test registry (and port) it is pushed to.
func ImageSeed(reference string) uint64 {
	if _, path, ok := strings.Cut(reference, "/"); ok {
		reference = path
	}
	return SeedOf(reference)
}

// PushedImage is what PushImage pushed.
type PushedImage struct {
	Ref artifact.Reference
	// Index is the OCI index the tag points to.
	Index ocispec.Descriptor
	// Manifests are the per-platform manifests, in Platforms order.
	Manifests []ocispec.Descriptor
	// Blobs are the configs and layers of all platforms, each once.
	Blobs []ocispec.Descriptor
}

// Bytes is the size of everything pushed: blobs and manifests.
func (p PushedImage) Bytes() int64 {
	n := p.Index.Size
	for _, d := range slices.Concat(p.Manifests, p.Blobs) {
		n += d.Size
	}
	return n
}

// PushImage pushes img to ref (repository and tag) with access.
func PushImage(t testing.TB, access artifact.Access, ref artifact.Reference, img Image) PushedImage {
	t.Helper()
	ctx := context.Background()
	repo := repository(t, access, ref)
	platforms := img.Platforms
	if len(platforms) == 0 {
		platforms = []string{"linux/amd64", "linux/arm64"}
	}
	pushed := PushedImage{Ref: ref}
	seen := map[digest.Digest]bool{}
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := pushBlob(ctx, repo, desc, data); err != nil {
			t.Fatalf("pushing %s to %s: %v", mediaType, ref, err)
		}
		if !seen[desc.Digest] && mediaType != ocispec.MediaTypeImageManifest {
			seen[desc.Digest] = true
			pushed.Blobs = append(pushed.Blobs, desc)
		}
		return desc
	}

	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for p, platform := range platforms {
		osName, arch, _ := strings.Cut(platform, "/")
		var layers []ocispec.Descriptor
		if img.Base.Size > 0 {
			layers = append(layers, push(ocispec.MediaTypeImageLayerGzip, img.Base.Bytes()))
		}
		for l, size := range img.LayerSizes {
			seed := img.Seed ^ uint64(p+1)<<48 ^ uint64(l+1)<<32
			layers = append(layers, push(ocispec.MediaTypeImageLayerGzip, RandomBytes(seed, size)))
		}
		config := ocispec.Image{
			Platform: ocispec.Platform{OS: osName, Architecture: arch},
			RootFS:   ocispec.RootFS{Type: "layers"},
			Config:   ocispec.ImageConfig{Labels: map[string]string{"seed": fmt.Sprint(img.Seed)}},
		}
		for _, l := range layers {
			config.RootFS.DiffIDs = append(config.RootFS.DiffIDs, l.Digest)
		}
		configDesc := push(ocispec.MediaTypeImageConfig, mustJSON(t, config))
		manifest := ocispec.Manifest{
			Versioned: specs.Versioned{SchemaVersion: 2},
			MediaType: ocispec.MediaTypeImageManifest,
			Config:    configDesc,
			Layers:    layers,
		}
		desc := push(ocispec.MediaTypeImageManifest, mustJSON(t, manifest))
		desc.Platform = &ocispec.Platform{OS: osName, Architecture: arch}
		pushed.Manifests = append(pushed.Manifests, desc)
		index.Manifests = append(index.Manifests, desc)
	}
	data := mustJSON(t, index)
	pushed.Index = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, pushed.Index, bytes.NewReader(data), ref.Tag); err != nil {
		t.Fatalf("pushing the index of %s: %v", ref, err)
	}
	return pushed
}

// RandomBytes returns size deterministic pseudo-random bytes for seed:
// incompressible, like compressed layers.
func RandomBytes(seed uint64, size int64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], uint64(size))
	data := make([]byte, size)
	_, _ = rand.NewChaCha8(key).Read(data)
	return data
}

// repository is a client of ref's repository.
func repository(t testing.TB, access artifact.Access, ref artifact.Reference) *remote.Repository {
	t.Helper()
	repo, release, err := access.Repository(ref, maxMetadata)
	if err != nil {
		t.Fatalf("repository %s: %v", ref, err)
	}
	t.Cleanup(release)
	return repo
}

// pushBlob pushes a blob or manifest unless the repository has it.
func pushBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte) error {
	if ok, err := repo.Exists(ctx, desc); err != nil || ok {
		return err
	}
	if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	return nil
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Bytes is the layer's content.
func (l Layer) Bytes() []byte { return RandomBytes(l.Seed, l.Size) }

// Digest is the layer's digest.
func (l Layer) Digest() digest.Digest { return digest.FromBytes(l.Bytes()) }
