package artifact_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

// perFile is a one-file-per-layer artifact as cluster-api-operator's
// publish pushes it: a layer per file, named by its title annotation.
func perFile(files map[string]string) []blob {
	var layers []blob
	for _, name := range slices.Sorted(maps.Keys(files)) {
		layers = append(layers, blob{mediaType: "application/vnd.test.file", data: []byte(files[name]),
			annotations: map[string]string{"org.opencontainers.image.title": name}})
	}
	return layers
}

func TestRepack(t *testing.T) {
	reg := newTestRegistry(t)
	tests := []struct {
		name        string
		repository  string
		tag         string
		files       map[string]string
		annotations map[string]string
		wantType    string
		wantName    string
		wantVersion string
		wantFiles   map[string]string
	}{
		{
			name:       "typed components file, name from the repository",
			repository: "capi/infrastructure-docker", tag: "v1.14.2",
			files:    map[string]string{"metadata.yaml": "m", "infrastructure-components.yaml": "c", "cluster-template.yaml": "t"},
			wantType: "infrastructure", wantName: "docker", wantVersion: "v1.14.2",
			wantFiles: map[string]string{"metadata.yaml": "m", "infrastructure-components.yaml": "c", "cluster-template.yaml": "t"},
		},
		{
			name:       "full file names",
			repository: "ttl.sh/providers", tag: "v1.14.2",
			files:    map[string]string{"bootstrap-kubeadm-v1.14.2-components.yaml": "c", "bootstrap-kubeadm-v1.14.2-metadata.yaml": "m"},
			wantType: "bootstrap", wantName: "kubeadm", wantVersion: "v1.14.2",
			wantFiles: map[string]string{"metadata.yaml": "m", "bootstrap-components.yaml": "c"},
		},
		{
			name:       "plain components.yaml, type and name from the repository",
			repository: "capi/control-plane-kubeadm", tag: "v1.14.2",
			files:    map[string]string{"metadata.yaml": "m", "components.yaml": "c"},
			wantType: "control-plane", wantName: "kubeadm", wantVersion: "v1.14.2",
			wantFiles: map[string]string{"metadata.yaml": "m", "control-plane-components.yaml": "c"},
		},
		{
			name:       "annotations name the provider",
			repository: "mirror/whatever", tag: "v0.5.0",
			files:       map[string]string{"metadata.yaml": "m", "components.yaml": "c"},
			annotations: map[string]string{"cluster-api.sigs.k8s.io/provider-type": "ipam", "cluster-api.sigs.k8s.io/provider-name": "in-cluster", "org.opencontainers.image.source": "https://example.com/src"},
			wantType:    "ipam", wantName: "in-cluster", wantVersion: "v0.5.0",
			wantFiles: map[string]string{"metadata.yaml": "m", "ipam-components.yaml": "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.ref(tt.repository, tt.tag)
			source := reg.pushRaw(t, ref, emptyConfig(), perFile(tt.files), tt.annotations)

			// Fetch refuses the layout and says it can be repacked.
			_, err := (&artifact.Fetcher{}).Fetch(context.Background(), ref, plainHTTP)
			var layout *artifact.LayoutError
			if !errors.As(err, &layout) || !layout.Repackable() || !strings.Contains(err.Error(), "--repack") {
				t.Fatalf("Fetch error = %v, want a repackable *LayoutError suggesting --repack", err)
			}

			got, err := (&artifact.Fetcher{}).Repack(context.Background(), ref, plainHTTP)
			if err != nil {
				t.Fatalf("Repack: %v", err)
			}
			if got.Type != tt.wantType || got.Name != tt.wantName || got.Version != tt.wantVersion || got.SourceDigest != source {
				t.Errorf("Repack = %s %s %s from %s, want %s %s %s from %s", got.Type, got.Name, got.Version, got.SourceDigest, tt.wantType, tt.wantName, tt.wantVersion, source)
			}
			gotFiles := map[string]string{}
			for name, data := range got.Files {
				gotFiles[name] = string(data)
			}
			if !maps.Equal(gotFiles, tt.wantFiles) {
				t.Errorf("Files = %v, want %v", gotFiles, tt.wantFiles)
			}
			want := artifact.ProviderAnnotations(tt.wantType, tt.wantName, tt.wantVersion, tt.annotations["org.opencontainers.image.source"])
			if !maps.Equal(got.Annotations, want) {
				t.Errorf("Annotations = %v, want %v", got.Annotations, want)
			}
			// The result is a contract artifact.
			if _, _, err := artifact.Pack(got.Files, got.Annotations); err != nil {
				t.Errorf("Pack of the repacked files: %v", err)
			}
		})
	}
}

func TestRepackRefuses(t *testing.T) {
	reg := newTestRegistry(t)
	titled := func(name, data string) blob {
		return blob{mediaType: "application/vnd.test.file", data: []byte(data), annotations: map[string]string{"org.opencontainers.image.title": name}}
	}
	good := []blob{titled("metadata.yaml", "m"), titled("core-components.yaml", "c")}
	tests := []struct {
		name       string
		repository string
		layers     []blob
		want       string
	}{
		{"parent directory", "parent/core-cluster-api", append(good, titled("../escape.yaml", "x")), "leaves the archive root"},
		{"absolute path", "absolute/core-cluster-api", append(good, titled("/etc/passwd", "x")), "absolute path"},
		{"file in a directory", "subdir/core-cluster-api", append(good, titled("dir/x.yaml", "x")), "in a directory"},
		{"oras directory", "orasdir/core-cluster-api", append(good, blob{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", data: []byte("t"),
			annotations: map[string]string{"org.opencontainers.image.title": "templates", "io.deis.oras.content.unpack": "true"}}), "directory"},
		{"untitled layer", "untitled/core-cluster-api", append(good, blob{mediaType: "application/yaml", data: []byte("x")}), "no org.opencontainers.image.title"},
		{"same name twice", "twice/core-cluster-api", append(good, titled("metadata.yaml", "other")), "two layers"},
		{"two provider types", "types/core-cluster-api", append(good, titled("bootstrap-components.yaml", "b")), "several provider types"},
		{"no name", "noname/providers", good, "provider name"},
		{"no components", "nocomponents/core-cluster-api", []blob{titled("metadata.yaml", "m"), titled("readme.md", "r")}, "lacks core-components.yaml"},
		{"no type", "notype/providers", []blob{titled("metadata.yaml", "m"), titled("components.yaml", "c")}, "provider type"},
		{"no metadata", "nometadata/core-cluster-api", []blob{titled("core-components.yaml", "c")}, "lacks metadata.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.ref(tt.repository, "v1.0.0")
			reg.pushRaw(t, ref, emptyConfig(), tt.layers, nil)
			_, err := (&artifact.Fetcher{}).Repack(context.Background(), ref, plainHTTP)
			var layout *artifact.LayoutError
			if !errors.As(err, &layout) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Repack error = %v, want a *LayoutError saying %q", err, tt.want)
			}
		})
	}
}

func TestRepackBounds(t *testing.T) {
	reg := newTestRegistry(t)
	ref := reg.ref("bounds/core-cluster-api", "v1.0.0")
	reg.pushRaw(t, ref, emptyConfig(), perFile(map[string]string{
		"metadata.yaml": "m", "core-components.yaml": strings.Repeat("c", 3000), "cluster-template.yaml": strings.Repeat("t", 3000),
	}), nil)
	for _, tt := range []struct {
		limit int64
		what  string
	}{{2048, "layer cluster-template.yaml"}, {4096, "sum of the layers"}} {
		_, err := (&artifact.Fetcher{MaxArtifactSize: tt.limit}).Repack(context.Background(), ref, plainHTTP)
		var tooLarge *artifact.TooLargeError
		if !errors.As(err, &tooLarge) || tooLarge.What != tt.what {
			t.Errorf("Repack with limit %d: error %v, want *TooLargeError about the %s", tt.limit, err, tt.what)
		}
	}
}

func TestRepackableOnlyForPerFileLayouts(t *testing.T) {
	reg := newTestRegistry(t)
	ref := reg.ref("charts/core-cluster-api", "v1.0.0")
	reg.pushRaw(t, ref, blob{mediaType: "application/vnd.cncf.helm.config.v1+json", data: []byte("{}")},
		[]blob{{mediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", data: []byte("chart")}}, nil)
	_, err := (&artifact.Fetcher{}).Fetch(context.Background(), ref, plainHTTP)
	var layout *artifact.LayoutError
	if !errors.As(err, &layout) || layout.Repackable() {
		t.Errorf("Fetch of a Helm chart: %v, want a *LayoutError that is not repackable", err)
	}
	if _, err := (&artifact.Fetcher{}).Repack(context.Background(), ref, plainHTTP); !errors.As(err, &layout) || !strings.Contains(err.Error(), "Helm chart") {
		t.Errorf("Repack of a Helm chart: %v, want a *LayoutError naming it", err)
	}
}
