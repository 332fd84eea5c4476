package artifact_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

func TestLayoutRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "layout")
	files := coreFiles(t)
	annotations := coreRelease(t).ManifestAnnotations()

	d, err := artifact.WriteLayout(ctx, dir, "v1.14.2", files, annotations)
	if err != nil {
		t.Fatalf("WriteLayout: %v", err)
	}
	if !artifact.IsLayout(dir) {
		t.Fatal("IsLayout is false for the written layout")
	}
	// The same artifact a registry gets.
	pushed, err := artifact.Push(ctx, newTestRegistry(t).ref("capi/manifests/core-cluster-api", "v1.14.2"), files, annotations, plainHTTP)
	if err != nil || pushed != d {
		t.Fatalf("Push gave %s (%v), the layout %s", pushed, err, d)
	}
	// Writing it again changes nothing.
	if again, err := artifact.WriteLayout(ctx, dir, "v1.14.2", files, annotations); err != nil || again != d {
		t.Fatalf("writing again gave %s, %v", again, err)
	}

	var fetcher artifact.Fetcher
	for _, reference := range []string{"", "v1.14.2", d} {
		f, err := fetcher.FetchLayout(ctx, dir, reference)
		if err != nil {
			t.Fatalf("FetchLayout %q: %v", reference, err)
		}
		if f.Digest != d || !maps.Equal(f.Annotations, annotations) || len(f.Files) != 2 ||
			string(f.Files["core-components.yaml"]) != string(files["core-components.yaml"]) {
			t.Errorf("FetchLayout %q: digest %s, annotations %v, %d files", reference, f.Digest, f.Annotations, len(f.Files))
		}
		if reference == d && (f.Ref.Digest != d || f.Revision != d) {
			t.Errorf("by digest: ref %+v revision %s", f.Ref, f.Revision)
		}
	}
}

func TestLayoutErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := coreFiles(t)
	if _, err := artifact.WriteLayout(ctx, dir, "v1.14.2", files, coreRelease(t).ManifestAnnotations()); err != nil {
		t.Fatal(err)
	}

	// Another provider under the same tag (version) is refused.
	bootstrap := map[string][]byte{"metadata.yaml": files["metadata.yaml"], "bootstrap-components.yaml": []byte("kind: x\n")}
	_, err := artifact.WriteLayout(ctx, dir, "v1.14.2", bootstrap, artifact.ProviderAnnotations("bootstrap", "kubeadm", "v1.14.2", ""))
	var releaseErr *artifact.ReleaseError
	if !errors.As(err, &releaseErr) || !strings.Contains(err.Error(), "already holds tag v1.14.2 for another artifact (core-cluster-api") {
		t.Errorf("writing another provider over the tag: %v", err)
	}
	// A new release of the same provider moves the tag.
	changed := maps.Clone(files)
	changed["cluster-template.yaml"] = []byte("kind: Cluster\n")
	if _, err := artifact.WriteLayout(ctx, dir, "v1.14.2", changed, coreRelease(t).ManifestAnnotations()); err != nil {
		t.Errorf("re-publishing the same provider: %v", err)
	}

	var notFound *artifact.NotFoundError
	fetcher := artifact.Fetcher{}
	_, err = fetcher.FetchLayout(ctx, dir, "v9.9.9")
	if !errors.As(err, &notFound) || !strings.Contains(err.Error(), dir+":v9.9.9 not found: the OCI image layout "+dir+" holds tags v1.14.2") {
		t.Errorf("missing tag: %v", err)
	}

	if _, err := artifact.WriteLayout(ctx, dir, "v1.13.0", files, artifact.ProviderAnnotations("core", "cluster-api", "v1.13.0", "")); err != nil {
		t.Fatal(err)
	}
	var ambiguous *artifact.AmbiguousLayoutError
	if _, err := fetcher.FetchLayout(ctx, dir, ""); !errors.As(err, &ambiguous) || !strings.Contains(err.Error(), "v1.13.0, v1.14.2") {
		t.Errorf("two tags, none chosen: %v", err)
	}

	small := artifact.Fetcher{MaxArtifactSize: 16 << 10}
	var tooLarge *artifact.TooLargeError
	if _, err := small.FetchLayout(ctx, dir, "v1.14.2"); !errors.As(err, &tooLarge) || tooLarge.Ref != dir+":v1.14.2" {
		t.Errorf("over the limit: %v", err)
	}

	// Layers gone missing: the layout is incomplete.
	blobs := filepath.Join(dir, "blobs", "sha256")
	entries, err := os.ReadDir(blobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Size() > 64<<10 {
			if err := os.Remove(filepath.Join(blobs, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := fetcher.FetchLayout(ctx, dir, "v1.13.0"); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("missing layer: %v", err)
	}
}
