package artifact_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// coreFiles are the real Cluster API v1.14.2 core provider release files.
func coreFiles(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"metadata.yaml":        clusterctltest.Read(t, clusterctltest.Current, "metadata.yaml"),
		"core-components.yaml": clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml"),
	}
}

func TestPushFetchRoundTrip(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	ref := reg.ref("capi/manifests/core-cluster-api", "v1.14.2")
	files := coreFiles(t)
	annotations := artifact.ProviderAnnotations("core", "cluster-api", "v1.14.2", "https://github.com/kubernetes-sigs/cluster-api")

	pushed, err := artifact.Push(ctx, ref, files, annotations, plainHTTP)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}

	pinned := ref
	pinned.Digest = pushed
	byDigest := ref
	byDigest.Tag = ""
	byDigest.Digest = pushed
	tests := []struct {
		name         string
		ref          artifact.Reference
		wantRevision string
	}{
		{"tag", ref, "v1.14.2@" + pushed},
		{"tag and digest", pinned, "v1.14.2@" + pushed},
		{"digest", byDigest, pushed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fetcher artifact.Fetcher
			got, err := fetcher.Fetch(ctx, tt.ref, plainHTTP)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got.Digest != pushed || got.Revision != tt.wantRevision {
				t.Errorf("Digest, Revision = %s, %s; want %s, %s", got.Digest, got.Revision, pushed, tt.wantRevision)
			}
			if !maps.EqualFunc(got.Files, files, bytes.Equal) {
				t.Errorf("fetched files %v differ from the pushed ones", keys(got.Files))
			}
			if !maps.Equal(got.Annotations, annotations) {
				t.Errorf("Annotations = %v, want %v", got.Annotations, annotations)
			}
			if len(got.LayerMediaTypes) != 1 || got.LayerMediaTypes[0] != artifact.MediaTypeLayer {
				t.Errorf("LayerMediaTypes = %v", got.LayerMediaTypes)
			}
			pa, err := artifact.CheckProviderArtifact(got, "core", "cluster-api", "v1.14.2")
			if err != nil {
				t.Fatalf("CheckProviderArtifact: %v", err)
			}
			if pa.ComponentsFile != "core-components.yaml" || !bytes.Equal(pa.Components, files["core-components.yaml"]) || !bytes.Equal(pa.Metadata, files["metadata.yaml"]) {
				t.Errorf("provider artifact files are wrong: %s", pa.ComponentsFile)
			}
		})
	}
}

func TestFetchTagMovedFromPinnedDigest(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	ref := reg.ref("capi/manifests/core-cluster-api", "v1.14.2")
	first, err := artifact.Push(ctx, ref, map[string][]byte{"metadata.yaml": []byte("a")}, nil, plainHTTP)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	second, err := artifact.Push(ctx, ref, map[string][]byte{"metadata.yaml": []byte("b")}, nil, plainHTTP)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got, err := (&artifact.Fetcher{}).Resolve(ctx, ref, plainHTTP); err != nil || got != second {
		t.Fatalf("Resolve = %s, %v; want the re-pushed %s", got, err, second)
	}
	pinned := ref
	pinned.Digest = first
	if _, err := (&artifact.Fetcher{}).Resolve(ctx, pinned, plainHTTP); !errors.As(err, new(*artifact.DigestMismatchError)) {
		t.Fatalf("Resolve of a moved pin = %v, want *DigestMismatchError", err)
	}
	_, err = (&artifact.Fetcher{}).Fetch(ctx, pinned, plainHTTP)
	var mismatch *artifact.DigestMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("Fetch error = %v, want *DigestMismatchError", err)
	}
	if mismatch.Expected != first || mismatch.Actual != second ||
		!strings.Contains(err.Error(), first) || !strings.Contains(err.Error(), second) {
		t.Errorf("error %q should name the pinned %s and the current %s", err, first, second)
	}
}

func TestFetchRejectsOtherLayouts(t *testing.T) {
	reg := newTestRegistry(t)
	yamlLayer := func(name string) blob {
		return blob{mediaType: "application/vnd.oci.image.layer.v1.tar", data: []byte("kind: " + name), annotations: map[string]string{"org.opencontainers.image.title": name}}
	}
	good := blob{mediaType: artifact.MediaTypeLayer, data: tarGzip(t, file("metadata.yaml", "x"))}
	tests := []struct {
		name   string
		config blob
		layers []blob
		want   []string
	}{
		{"one file per layer", emptyConfig(), []blob{yamlLayer("metadata.yaml"), yamlLayer("core-components.yaml"), yamlLayer("cluster-template.yaml")},
			[]string{"3 layers of application/vnd.oci.image.layer.v1.tar", "metadata.yaml, core-components.yaml", "--repack"}},
		{"single yaml layer", emptyConfig(), []blob{{mediaType: "application/yaml", data: []byte("a: b")}}, []string{"1 layer of application/yaml", "--repack"}},
		{"no layer", emptyConfig(), nil, []string{"no layer"}},
		{"two tarballs", emptyConfig(), []blob{good, good}, []string{"2 layers of " + artifact.MediaTypeLayer}},
		{"helm chart", blob{mediaType: "application/vnd.cncf.helm.config.v1+json", data: []byte("{}")},
			[]blob{{mediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", data: []byte("chart")}}, []string{"Helm chart", "spec.source.chart"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.ref("layouts/"+strings.ReplaceAll(tt.name, " ", "-"), "v1.0.0")
			reg.pushRaw(t, ref, tt.config, tt.layers, nil)
			_, err := (&artifact.Fetcher{}).Fetch(context.Background(), ref, plainHTTP)
			var layout *artifact.LayoutError
			if !errors.As(err, &layout) {
				t.Fatalf("Fetch error = %v, want *LayoutError", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestFetchRejectsUnsafeTarEntries(t *testing.T) {
	reg := newTestRegistry(t)
	tests := []struct {
		name  string
		entry layerEntry
		want  string
	}{
		{"parent", file("../x", "x"), `"../x", a path that leaves the archive root`},
		{"parent inside", file("a/../../x", "x"), "leaves the archive root"},
		{"absolute", file("/abs", "x"), `"/abs", an absolute path`},
		{"symlink", layerEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"}}, `"link", of type symlink`},
		{"hard link", layerEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "hard", Linkname: "metadata.yaml"}}, "of type hard link"},
		{"device", layerEntry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "dev"}}, "of type device"},
		{"duplicate", file("metadata.yaml", "again"), `"metadata.yaml", a second time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.ref("unsafe/"+strings.ReplaceAll(tt.name, " ", "-"), "v1.0.0")
			layer := tarGzip(t, file("metadata.yaml", "x"), tt.entry)
			reg.pushRaw(t, ref, emptyConfig(), []blob{{mediaType: artifact.MediaTypeLayer, data: layer}}, nil)
			_, err := (&artifact.Fetcher{}).Fetch(context.Background(), ref, plainHTTP)
			var layout *artifact.LayoutError
			if !errors.As(err, &layout) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fetch error = %v, want a *LayoutError containing %q", err, tt.want)
			}
		})
	}

	t.Run("nested directories are fine", func(t *testing.T) {
		ref := reg.ref("unsafe/nested", "v1.0.0")
		layer := tarGzip(t,
			layerEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}},
			file("./metadata.yaml", "m"),
			layerEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "docs/", Mode: 0o755}},
			file("docs/README.md", "r"))
		reg.pushRaw(t, ref, emptyConfig(), []blob{{mediaType: artifact.MediaTypeLayer, data: layer}}, nil)
		got, err := (&artifact.Fetcher{}).Fetch(context.Background(), ref, plainHTTP)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if want := []string{"docs/README.md", "metadata.yaml"}; strings.Join(keys(got.Files), ",") != strings.Join(want, ",") {
			t.Errorf("files = %v, want %v", keys(got.Files), want)
		}
	})
}

func TestFetchBounds(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	const limit = 4096
	// random is incompressible text of n bytes.
	random := func(n int) string {
		rng := rand.New(rand.NewPCG(1, 2))
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		return base64.StdEncoding.EncodeToString(raw)[:n]
	}
	tests := []struct {
		name        string
		layer       []byte
		annotations map[string]string
		what        string
	}{
		{"compressed layer", tarGzip(t, file("metadata.yaml", random(8*limit))), nil, "layer"},
		{"uncompressed layer", tarGzip(t, file("metadata.yaml", strings.Repeat("0", 4*limit))), nil, "uncompressed layer"},
		{"manifest", tarGzip(t, file("metadata.yaml", "x")), map[string]string{"padding": strings.Repeat("p", limit)}, "manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.ref("bounds/"+strings.ReplaceAll(tt.name, " ", "-"), "v1.0.0")
			reg.pushRaw(t, ref, emptyConfig(), []blob{{mediaType: artifact.MediaTypeLayer, data: tt.layer}}, tt.annotations)
			_, err := (&artifact.Fetcher{MaxArtifactSize: limit}).Fetch(ctx, ref, plainHTTP)
			var tooLarge *artifact.TooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("Fetch error = %v, want *TooLargeError", err)
			}
			if tooLarge.What != tt.what || tooLarge.Limit != limit || !strings.Contains(err.Error(), "4096 bytes") {
				t.Errorf("error %q: What=%q Limit=%d, want What=%q", err, tooLarge.What, tooLarge.Limit, tt.what)
			}
		})
	}
}

func TestFetchNotFound(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	if _, err := artifact.Push(ctx, reg.ref("capi/core", "v1.14.2"), map[string][]byte{"metadata.yaml": []byte("m")}, nil, plainHTTP); err != nil {
		t.Fatalf("Push: %v", err)
	}
	tests := []struct {
		name string
		ref  artifact.Reference
	}{
		{"tag", reg.ref("capi/core", "v9.9.9")},
		{"repository", reg.ref("capi/missing", "v1.14.2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&artifact.Fetcher{}).Fetch(ctx, tt.ref, plainHTTP)
			var notFound *artifact.NotFoundError
			if !errors.As(err, &notFound) || !strings.Contains(err.Error(), tt.ref.String()) {
				t.Fatalf("Fetch error = %v, want *NotFoundError naming %s", err, tt.ref)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	return slices.Sorted(maps.Keys(m))
}
