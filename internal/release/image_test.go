package release

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func standInBinaries(t *testing.T, version string, platforms []platform) []string {
	t.Helper()
	o := Options{Version: version, Log: io.Discard, build: fakeBuild}
	paths, err := buildManagers(context.Background(), o, platforms, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func testImageIndex(t *testing.T, version string) v1.ImageIndex {
	t.Helper()
	platforms, err := parsePlatforms(defaultImagePlatforms)
	if err != nil {
		t.Fatal(err)
	}
	c := commit{hash: "0123456789abcdef0123456789abcdef01234567", time: commitTime}
	idx, err := imageIndex(version, c, platforms, standInBinaries(t, version, platforms))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestImageIndexIsReproducible(t *testing.T) {
	first, err := testImageIndex(t, "v1.2.3").Digest()
	if err != nil {
		t.Fatal(err)
	}
	second, err := testImageIndex(t, "v1.2.3").Digest()
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("the same commit and version gave %s, then %s", first, second)
	}
	other, err := testImageIndex(t, "v1.2.4").Digest()
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Errorf("another version gave the same digest %s", first)
	}
}

func TestImageIndexHoldsOneStaticImagePerPlatform(t *testing.T) {
	idx := testImageIndex(t, "v1.2.3")
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.version":  "v1.2.3",
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
		"org.opencontainers.image.title":    "capwright-manager",
	}
	for k, v := range wantLabels {
		if im.Annotations[k] != v {
			t.Errorf("index annotation %s = %q, want %q", k, im.Annotations[k], v)
		}
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", d.Platform, mt)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s/%s", d.Platform, cfg.OS, cfg.Architecture)
		}
		if !cfg.Created.Equal(commitTime) {
			t.Errorf("%s: created %s, want the commit time %s", d.Platform, cfg.Created, commitTime)
		}
		if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) || cfg.Config.WorkingDir != "/" {
			t.Errorf("%s: user %q entrypoint %q workdir %q", d.Platform, cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.WorkingDir)
		}
		for k, v := range wantLabels {
			if cfg.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", d.Platform, k, cfg.Config.Labels[k], v)
			}
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Annotations["org.opencontainers.image.revision"] != wantLabels["org.opencontainers.image.revision"] {
			t.Errorf("%s: manifest annotations %v", d.Platform, m.Annotations)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers, want 1", d.Platform, len(layers))
		}
		checkManagerLayer(t, d.Platform.String(), layers[0])
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// checkManagerLayer wants exactly /manager: executable, owned by root,
// modified at the commit time, holding the platform's stand-in binary.
func checkManagerLayer(t *testing.T, platform string, l v1.Layer) {
	t.Helper()
	if mt, _ := l.MediaType(); mt != types.OCILayer {
		t.Errorf("%s: layer media type %s", platform, mt)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(commitTime) || hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s mode %o uid %d gid %d mtime %s type %c", platform, hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime, hdr.Typeflag)
		}
		data, _ := io.ReadAll(tr)
		if !bytes.Contains(data, []byte("./cmd/manager for "+platform)) {
			t.Errorf("%s: /manager holds %q", platform, data)
		}
	}
	if !slices.Equal(names, []string{"manager"}) {
		t.Errorf("%s: layer holds %v, want only manager", platform, names)
	}
}

func TestBuildManagersPassesVersionAndPlatform(t *testing.T) {
	platforms, _ := parsePlatforms([]string{"linux/arm64"})
	paths := standInBinaries(t, "v9.9.9", platforms)
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	want := "stand-in ./cmd/manager for linux/arm64 (-s -w -buildid= -X main.version=v9.9.9)\n"
	if string(data) != want {
		t.Errorf("build got %q, want %q", data, want)
	}
	if filepath.Base(paths[0]) != "manager_linux_arm64" {
		t.Errorf("binary %s", paths[0])
	}
}
