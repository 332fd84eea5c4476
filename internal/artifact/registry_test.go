package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

// testRegistry is an in-process OCI registry over plain HTTP.
type testRegistry struct {
	host string
}

func newTestRegistry(t *testing.T) testRegistry {
	t.Helper()
	return testRegistry{host: registrytest.New(t, registrytest.Options{}).Host}
}

// ref is a reference to repository:tag in the registry.
func (r testRegistry) ref(repository, tag string) artifact.Reference {
	return artifact.Reference{Host: r.host, Repository: repository, Tag: tag}
}

var plainHTTP = artifact.Access{PlainHTTP: true, UserAgent: "capwright-test"}

// layerEntry is one tar entry of a hand-made layer.
type layerEntry struct {
	hdr  tar.Header
	data string
}

// tarGzip builds a layer with arbitrary (also unsafe) entries.
func tarGzip(t *testing.T, entries ...layerEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.data))
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatalf("tar header %s: %v", hdr.Name, err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatalf("tar data %s: %v", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func file(name, data string) layerEntry {
	return layerEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name}, data: data}
}

// blob is a layer or config to push as-is.
type blob struct {
	mediaType   string
	data        []byte
	annotations map[string]string
}

// pushRaw pushes a manifest with arbitrary layers and config, bypassing
// artifact.Push, to play other publishers' layouts. It returns the
// manifest digest.
func (r testRegistry) pushRaw(t *testing.T, ref artifact.Reference, config blob, layers []blob, annotations map[string]string) string {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(ref.Host + "/" + ref.Repository)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	push := func(b blob) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: b.mediaType, Digest: digest.FromBytes(b.data), Size: int64(len(b.data)), Annotations: b.annotations}
		if err := repo.Push(ctx, desc, bytes.NewReader(b.data)); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatalf("pushing %s: %v", b.mediaType, err)
		}
		return desc
	}
	m := ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      push(config),
		Layers:      []ocispec.Descriptor{},
		Annotations: annotations,
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, push(l))
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), ref.Tag); err != nil {
		t.Fatalf("pushing manifest: %v", err)
	}
	return desc.Digest.String()
}

func emptyConfig() blob {
	return blob{mediaType: ocispec.MediaTypeEmptyJSON, data: []byte("{}")}
}
