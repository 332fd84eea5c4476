package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/internal/artifact"
)

func TestPackIsReproducible(t *testing.T) {
	files := coreFiles(t)
	annotations := artifact.ProviderAnnotations("core", "cluster-api", "v1.14.2", "")
	layer1, manifest1, err := artifact.Pack(files, annotations)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	layer2, manifest2, err := artifact.Pack(files, annotations)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	if !bytes.Equal(layer1, layer2) || !bytes.Equal(manifest1, manifest2) {
		t.Fatal("Pack gave different bytes for the same input")
	}

	ctx := context.Background()
	reg := newTestRegistry(t)
	d1, err := artifact.Push(ctx, reg.ref("a/core", "v1.14.2"), files, annotations, plainHTTP)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	d2, err := artifact.Push(ctx, reg.ref("b/core", "v1.14.2"), files, annotations, plainHTTP)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if d1 != d2 {
		t.Errorf("pushing the same files twice gave digests %s and %s", d1, d2)
	}
}

func TestPackLayout(t *testing.T) {
	files := map[string][]byte{"b.yaml": []byte("b"), "metadata.yaml": []byte("m"), "a.yaml": []byte("a")}
	layer, manifest, err := artifact.Pack(files, map[string]string{"k": "v"})
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}

	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if m.MediaType != ocispec.MediaTypeImageManifest || m.ArtifactType != artifact.ArtifactType ||
		m.Config.MediaType != ocispec.MediaTypeEmptyJSON || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != artifact.MediaTypeLayer || m.Layers[0].Size != int64(len(layer)) ||
		m.Annotations["k"] != "v" {
		t.Errorf("unexpected manifest %s", manifest)
	}
	if _, ok := m.Annotations[ocispec.AnnotationCreated]; ok {
		t.Error("the manifest has a creation timestamp")
	}

	gz, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header has name %q, mtime %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		names = append(names, hdr.Name)
		if hdr.Mode != 0o644 || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" ||
			hdr.ModTime.Unix() != 0 || hdr.Typeflag != tar.TypeReg {
			t.Errorf("entry %s: mode %o uid %d gid %d user %q group %q mtime %v type %c",
				hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname, hdr.ModTime, hdr.Typeflag)
		}
	}
	if got := strings.Join(names, ","); got != "a.yaml,b.yaml,metadata.yaml" {
		t.Errorf("entries %s, want sorted a.yaml,b.yaml,metadata.yaml", got)
	}
}

func TestPackRejectsBadNames(t *testing.T) {
	for _, name := range []string{"../x", "/abs", "./metadata.yaml", "a//b", ""} {
		if _, _, err := artifact.Pack(map[string][]byte{name: []byte("x")}, nil); err == nil {
			t.Errorf("Pack accepted file name %q", name)
		}
	}
	if _, _, err := artifact.Pack(nil, nil); err == nil {
		t.Error("Pack accepted no files")
	}
}
