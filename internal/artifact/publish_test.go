package artifact_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// coreRelease is the real Cluster API core provider release, ready to
// publish.
func coreRelease(t *testing.T) *artifact.Release {
	return &artifact.Release{
		Type: "core", Name: "cluster-api", Version: clusterctltest.Current,
		Source: "https://github.com/kubernetes-sigs/cluster-api",
		Files:  coreFiles(t),
	}
}

func TestReleaseCheck(t *testing.T) {
	good := coreRelease(t)
	contract, err := good.Check()
	if err != nil || contract != "v1beta2" {
		t.Fatalf("Check of the real core release: contract %q, %v", contract, err)
	}

	with := func(change func(r *artifact.Release)) *artifact.Release {
		r := coreRelease(t)
		change(r)
		return r
	}
	tests := []struct {
		name    string
		release *artifact.Release
		// want appears in the message; an empty want means no error.
		want []string
	}{
		{"with a template", with(func(r *artifact.Release) { r.Files["cluster-template-dev.yaml"] = []byte("kind: Cluster\n") }), nil},
		{"pre-release", with(func(r *artifact.Release) { r.Version = "v1.14.3-rc.0" }), nil},
		{"agreeing annotations", with(func(r *artifact.Release) {
			r.Annotations = map[string]string{artifact.AnnotationProviderType: "core", "org.opencontainers.image.licenses": "Apache-2.0"}
		}), nil},
		{"source as an annotation", with(func(r *artifact.Release) {
			r.Source = ""
			r.Annotations = map[string]string{artifact.AnnotationSource: "https://example.com"}
		}), nil},

		{"unknown type", with(func(r *artifact.Release) { r.Type = "provider" }), []string{`"provider"`, "core, bootstrap, control-plane"}},
		{"bad name", with(func(r *artifact.Release) { r.Name = "Cluster API" }), []string{`"Cluster API"`, "lower case"}},
		{"version without v", with(func(r *artifact.Release) { r.Version = "1.14.2" }), []string{`"1.14.2"`, "vMAJOR.MINOR.PATCH"}},
		{"short version", with(func(r *artifact.Release) { r.Version = "v1.14" }), []string{`"v1.14"`, "e.g. v1.14.2"}},
		{"not a version", with(func(r *artifact.Release) { r.Version = "latest" }), []string{`"latest"`}},
		{"build metadata", with(func(r *artifact.Release) { r.Version = "v1.14.2+build.1" }), []string{"build metadata", "drop the +"}},
		{"version outside the release series", with(func(r *artifact.Release) { r.Version = "v1.15.0" }), []string{"no release series for version v1.15.0", "major: 1, minor: 15"}},
		{"no metadata", with(func(r *artifact.Release) { delete(r.Files, "metadata.yaml") }), []string{"metadata.yaml is missing", "given are core-components.yaml"}},
		{"metadata of something else", with(func(r *artifact.Release) { r.Files["metadata.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\n") }), []string{"clusterctl metadata"}},
		{"components under the plain name", with(func(r *artifact.Release) {
			r.Files["components.yaml"] = r.Files["core-components.yaml"]
			delete(r.Files, "core-components.yaml")
		}), []string{"core-components.yaml is missing", "rename components.yaml to core-components.yaml"}},
		{"components of another type", with(func(r *artifact.Release) { r.Type, r.Name = "bootstrap", "kubeadm" }),
			[]string{"bootstrap-components.yaml is missing", "core-components.yaml is the components file of a provider of type core", "check --type"}},
		{"unexpected file", with(func(r *artifact.Release) { r.Files["README.md"] = []byte("hi") }),
			[]string{"unexpected README.md", "optionally cluster-template*.yaml"}},
		{"empty components", with(func(r *artifact.Release) { r.Files["core-components.yaml"] = []byte("\n") }), []string{"core-components.yaml is empty"}},
		{"components Flux cannot substitute", with(func(r *artifact.Release) {
			r.Files["core-components.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: ${A-b}\n")
		}), []string{"core-components.yaml"}},
		{"components not YAML objects", with(func(r *artifact.Release) { r.Files["core-components.yaml"] = []byte("- a\n- b\n") }), []string{"core-components.yaml"}},
		{"contradicting type annotation", with(func(r *artifact.Release) {
			r.Annotations = map[string]string{artifact.AnnotationProviderType: "infrastructure"}
		}), []string{"--annotation cluster-api.sigs.k8s.io/provider-type=infrastructure contradicts --type (core)", "drop --annotation"}},
		{"contradicting version annotation", with(func(r *artifact.Release) {
			r.Annotations = map[string]string{artifact.AnnotationVersion: "v1.14.1"}
		}), []string{"contradicts --version (v1.14.2)"}},
		{"contradicting title annotation", with(func(r *artifact.Release) {
			r.Annotations = map[string]string{artifact.AnnotationTitle: "cluster-api"}
		}), []string{"contradicts --type and --name (core-cluster-api)"}},
		{"contradicting source annotation", with(func(r *artifact.Release) {
			r.Annotations = map[string]string{artifact.AnnotationSource: "https://example.com"}
		}), []string{"contradicts --source"}},
		{"annotation without key", with(func(r *artifact.Release) { r.Annotations = map[string]string{" ": "x"} }), []string{"empty key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.release.Check()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var releaseErr *artifact.ReleaseError
			if !errors.As(err, &releaseErr) {
				t.Fatalf("Check gave %v (%T), want a *ReleaseError", err, err)
			}
			if releaseErr.Hint == "" {
				t.Errorf("no hint at how to fix %q", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestReleaseManifestAnnotations(t *testing.T) {
	r := coreRelease(t)
	r.Annotations = map[string]string{"org.opencontainers.image.licenses": "Apache-2.0", artifact.AnnotationProviderName: "cluster-api"}
	got := r.ManifestAnnotations()
	want := artifact.ProviderAnnotations("core", "cluster-api", "v1.14.2", "https://github.com/kubernetes-sigs/cluster-api")
	want["org.opencontainers.image.licenses"] = "Apache-2.0"
	if !maps.Equal(got, want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
	if r.Annotations[artifact.AnnotationTitle] != "" {
		t.Error("ManifestAnnotations changed the release's annotations")
	}

	if note := r.RepositoryNote(artifact.Reference{Repository: "capi/manifests/core-cluster-api"}); note != "" {
		t.Errorf("note for a well-named repository: %s", note)
	}
	if note := r.RepositoryNote(artifact.Reference{Repository: "capi/core"}); !strings.Contains(note, "manifests/core-cluster-api") {
		t.Errorf("note %q does not name the expected repository", note)
	}
}

// writeFiles writes files into dir with the given modification time.
func writeFiles(t *testing.T, dir string, files map[string][]byte, mtime time.Time, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPublishIsReproducible packs the same release read from disk in
// different ways: directory or files in another order, other times and
// modes. The digest must not change.
func TestPublishIsReproducible(t *testing.T) {
	files := coreFiles(t)
	files["cluster-template.yaml"] = []byte("kind: Cluster\n")
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	writeFiles(t, a, files, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), 0o644)
	writeFiles(t, b, files, time.Now(), 0o600)

	readings := map[string][]string{
		"directory":            {a},
		"files":                {filepath.Join(b, "metadata.yaml"), filepath.Join(b, "core-components.yaml"), filepath.Join(b, "cluster-template.yaml")},
		"files, another order": {filepath.Join(a, "cluster-template.yaml"), filepath.Join(b, "core-components.yaml"), filepath.Join(a, "metadata.yaml")},
	}
	annotations := coreRelease(t).ManifestAnnotations()
	var first string
	for how, paths := range readings {
		read, err := artifact.ReadReleaseFiles(paths, artifact.DefaultMaxArtifactSize)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		_, manifest, err := artifact.Pack(read, annotations)
		if err != nil {
			t.Fatalf("%s: Pack: %v", how, err)
		}
		d := digest.FromBytes(manifest).String()
		if first == "" {
			first = d
		} else if d != first {
			t.Errorf("%s gave digest %s, another reading %s", how, d, first)
		}
	}
}

func TestReadReleaseFilesRefuses(t *testing.T) {
	root := t.TempDir()
	files := coreFiles(t)
	good := filepath.Join(root, "good")
	writeFiles(t, good, files, time.Now(), 0o644)

	withLink := filepath.Join(root, "link")
	writeFiles(t, withLink, files, time.Now(), 0o644)
	if err := os.Symlink(filepath.Join(good, "metadata.yaml"), filepath.Join(withLink, "extra.yaml")); err != nil {
		t.Fatal(err)
	}
	withDir := filepath.Join(root, "dir")
	writeFiles(t, filepath.Join(withDir, "nested"), map[string][]byte{"x.yaml": []byte("x")}, time.Now(), 0o644)
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		paths []string
		limit int64
		want  []string
	}{
		{"symlink in a directory", []string{withLink}, 0, []string{"extra.yaml (a symlink)", "one by one"}},
		{"subdirectory", []string{withDir}, 0, []string{"nested/ (a directory)"}},
		{"empty directory", []string{empty}, 0, []string{"is empty"}},
		{"missing path", []string{filepath.Join(root, "nothing")}, 0, []string{"cannot read", "no such file"}},
		{"same name twice", []string{good, filepath.Join(withLink, "metadata.yaml")}, 0, []string{"have the same name"}},
		{"no paths", nil, 0, []string{"no release files"}},
		{"over the limit", []string{good}, 64 << 10, []string{"more than the artifact size limit of 65536 bytes", "--max-artifact-size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			if limit == 0 {
				limit = artifact.DefaultMaxArtifactSize
			}
			_, err := artifact.ReadReleaseFiles(tt.paths, limit)
			var releaseErr *artifact.ReleaseError
			if !errors.As(err, &releaseErr) {
				t.Fatalf("got %v (%T), want a *ReleaseError", err, err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}

	// A symlink named explicitly is followed.
	link := filepath.Join(root, "metadata.yaml")
	if err := os.Symlink(filepath.Join(good, "metadata.yaml"), link); err != nil {
		t.Fatal(err)
	}
	read, err := artifact.ReadReleaseFiles([]string{link, filepath.Join(good, "core-components.yaml")}, artifact.DefaultMaxArtifactSize)
	if err != nil || len(read) != 2 || string(read["metadata.yaml"]) != string(files["metadata.yaml"]) {
		t.Errorf("reading an explicit symlink: %d files, %v", len(read), err)
	}
}
