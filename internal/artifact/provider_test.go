package artifact_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

func TestCheckProviderArtifact(t *testing.T) {
	annotated := artifact.ProviderAnnotations("bootstrap", "kubeadm", "v1.14.2", "")
	with := func(key, value string) map[string]string {
		a := map[string]string{}
		for k, v := range annotated {
			a[k] = v
		}
		a[key] = value
		return a
	}
	complete := map[string][]byte{
		"metadata.yaml":              []byte("m"),
		"bootstrap-components.yaml":  []byte("c"),
		"cluster-template.yaml":      []byte("t"),
		"cluster-template-ha.yaml":   []byte("ha"),
		"docs/cluster-template.yaml": []byte("not a root template"),
	}
	tests := []struct {
		name        string
		files       map[string][]byte
		annotations map[string]string
		want        []string // error substrings; none means valid
	}{
		{"annotated", complete, annotated, nil},
		{"no annotations", complete, nil, nil},
		{"version without v", complete, with(artifact.AnnotationVersion, "1.14.2"), nil},
		{"missing components", map[string][]byte{"metadata.yaml": nil, "core-components.yaml": nil, "README.md": nil}, nil,
			[]string{"lacks bootstrap-components.yaml", "it holds README.md, core-components.yaml, metadata.yaml"}},
		{"missing both", map[string][]byte{}, nil, []string{"lacks metadata.yaml and bootstrap-components.yaml", "no files"}},
		{"other name", complete, with(artifact.AnnotationProviderName, "talos"),
			[]string{`annotation cluster-api.sigs.k8s.io/provider-name is "talos", expected "kubeadm"`}},
		{"other type", complete, with(artifact.AnnotationProviderType, "control-plane"),
			[]string{`provider-type is "control-plane", expected "bootstrap"`}},
		{"other version", complete, with(artifact.AnnotationVersion, "v1.13.6"),
			[]string{`org.opencontainers.image.version is "v1.13.6", expected "v1.14.2"`}},
		{"other title", complete, with(artifact.AnnotationTitle, "bootstrap-talos"),
			[]string{`org.opencontainers.image.title is "bootstrap-talos", expected "bootstrap-kubeadm"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &artifact.Fetched{
				Ref:         artifact.Reference{Host: "registry.example", Repository: "capi/bootstrap-kubeadm", Tag: "v1.14.2"},
				Files:       tt.files,
				Annotations: tt.annotations,
			}
			pa, err := artifact.CheckProviderArtifact(f, "bootstrap", "kubeadm", "v1.14.2")
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("CheckProviderArtifact: %v", err)
				}
				if string(pa.Components) != "c" || string(pa.Metadata) != "m" || len(pa.Templates) != 2 || pa.Templates["cluster-template-ha.yaml"] == nil {
					t.Errorf("unexpected provider artifact %+v", pa)
				}
				return
			}
			var layout *artifact.LayoutError
			if !errors.As(err, &layout) {
				t.Fatalf("CheckProviderArtifact error = %v, want *LayoutError", err)
			}
			for _, want := range append(tt.want, "registry.example/capi/bootstrap-kubeadm:v1.14.2") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}

	if _, err := artifact.CheckProviderArtifact(&artifact.Fetched{}, "nonsense", "x", "v1"); err == nil {
		t.Error("an unknown provider type was accepted")
	}
}
