package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// resolveTag is the digest tag points to in host/repository, or "" when
// the tag (or the repository) does not exist.
func resolveTag(t *testing.T, host, repository, tag string) string {
	t.Helper()
	repo, err := remote.NewRepository(host + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	desc, err := repo.Resolve(context.Background(), tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatalf("resolving %s/%s:%s: %v", host, repository, tag, err)
	}
	return desc.Digest.String()
}

func TestReleasePushesEverythingAndTagsIt(t *testing.T) {
	host := startRegistry(t, nil)
	o := testOptions(t, testRepo(t), host+"/capwright")
	res, err := Release(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		artifact Artifact
		path     string
	}{
		{res.Image, "capwright/capwright-manager"},
		{res.Chart, "capwright/charts/capwright"},
		{res.Manifests, "capwright/capwright-manifests"},
	} {
		if a.artifact.Repository != host+"/"+a.path || a.artifact.Tag != "v1.2.3" {
			t.Errorf("artifact %+v, want %s/%s:v1.2.3", a.artifact, host, a.path)
		}
		if got := resolveTag(t, host, a.path, "v1.2.3"); got != a.artifact.Digest {
			t.Errorf("%s:v1.2.3 is %q, want %s", a.path, got, a.artifact.Digest)
		}
		if want := a.artifact.Repository + ":v1.2.3@" + a.artifact.Digest; a.artifact.Ref() != want {
			t.Errorf("Ref() = %s, want %s", a.artifact.Ref(), want)
		}
	}

	// Released again from the same commit: the same digests.
	again, err := Release(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Image != res.Image || again.Chart != res.Chart || again.Manifests != res.Manifests {
		t.Errorf("not reproducible:\n%+v\n%+v", res, again)
	}
	checkCLI(t, o.CLIDir, res.CLI)
}

// checkCLI wants one binary per platform and a SHA256SUMS that sha256sum -c
// accepts.
func checkCLI(t *testing.T, dir string, files []string) {
	t.Helper()
	want := []string{
		filepath.Join(dir, "capwright_linux_amd64"),
		filepath.Join(dir, "capwright_darwin_arm64"),
		filepath.Join(dir, "SHA256SUMS"),
	}
	if fmt.Sprint(files) != fmt.Sprint(want) {
		t.Fatalf("CLI files %v, want %v", files, want)
	}
	sums, err := os.ReadFile(want[2])
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range want[:2] {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "./cmd/capwright") || !strings.Contains(string(data), "main.version=v1.2.3") {
			t.Errorf("%s built as %q", f, data)
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+filepath.Base(f)+"\n")
	}
	if string(sums) != strings.Join(lines, "") {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", sums, strings.Join(lines, ""))
	}
}

func TestReleaseThatFailsToPushTagsNothing(t *testing.T) {
	tests := map[string]struct {
		refuse func(*http.Request) bool
		what   string
	}{
		"the chart's manifest": {
			refuse: func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/charts/capwright/manifests/sha256:")
			},
			what: "chart",
		},
		"a blob of the manifests artifact": {
			refuse: func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/capwright-manifests/blobs/uploads")
			},
			what: "manifests",
		},
		"the image index": {
			refuse: func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/capwright-manager/manifests/") &&
					r.Header.Get("Content-Type") == ocispec.MediaTypeImageIndex
			},
			what: "image",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			host := startRegistry(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tt.refuse(r) {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusForbidden)
						_, _ = fmt.Fprint(w, `{"errors":[{"code":"DENIED","message":"refused by the test"}]}`)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			_, err := Release(context.Background(), testOptions(t, testRepo(t), host+"/capwright"))
			if err == nil {
				t.Fatal("the release succeeded though the registry refused a push")
			}
			for _, want := range []string{host, "pushing the " + tt.what, "nothing was tagged"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			for _, repo := range []string{"capwright/capwright-manager", "capwright/capwright-manifests", "capwright/charts/capwright"} {
				if got := resolveTag(t, host, repo, "v1.2.3"); got != "" {
					t.Errorf("%s:v1.2.3 was tagged (%s) by a failed release", repo, got)
				}
			}
		})
	}
}

func TestReleaseWritesOneNamedLayout(t *testing.T) {
	o := testOptions(t, testRepo(t), "ghcr.io/capwright")
	o.Output = filepath.Join(t.TempDir(), "out")
	o.CLIDir = ""
	res, err := Release(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(o.Output, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ghcr.io/capwright/capwright-manager:v1.2.3":   res.Image.Digest,
		"ghcr.io/capwright/capwright-manifests:v1.2.3": res.Manifests.Digest,
		"ghcr.io/capwright/charts/capwright:v1.2.3":    res.Chart.Digest,
	}
	if len(index.Manifests) != len(want) {
		t.Errorf("index.json lists %d manifests, want the %d artifacts:\n%s", len(index.Manifests), len(want), data)
	}
	for _, d := range index.Manifests {
		name := d.Annotations[ocispec.AnnotationRefName]
		if want[name] != d.Digest.String() {
			t.Errorf("entry %q is %s, want %q", name, d.Digest, want[name])
		}
	}
	// oras-go reads it back, resolving by those names, the image's
	// platforms included.
	store, err := oci.NewWithContext(context.Background(), o.Output)
	if err != nil {
		t.Fatal(err)
	}
	for name, digest := range want {
		desc, err := store.Resolve(context.Background(), name)
		if err != nil || desc.Digest.String() != digest {
			t.Errorf("resolving %s: %v %s", name, err, desc.Digest)
		}
	}
	checkCLI(t, filepath.Join(o.Output, "cli"), res.CLI)

	// A second run replaces the layout; a directory that is not one is
	// refused.
	if _, err := Release(context.Background(), o); err != nil {
		t.Errorf("writing over the earlier layout: %v", err)
	}
	o.Output = t.TempDir()
	if err := os.WriteFile(filepath.Join(o.Output, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Release(context.Background(), o); err == nil || !strings.Contains(err.Error(), "neither empty nor an OCI layout") {
		t.Errorf("got %v, want the non-empty output refused", err)
	}
}

func TestImageReleasesOnlyTheImage(t *testing.T) {
	host := startRegistry(t, nil)
	repo := testRepo(t)
	// Development images: any tag, and changes in the tree are fine.
	if err := os.WriteFile(filepath.Join(repo, "wip.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t, repo, host)
	o.Version = "1d75e73-dirty"
	res, err := Image(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Image.Repository != host+"/capwright-manager" || resolveTag(t, host, "capwright-manager", o.Version) != res.Image.Digest {
		t.Errorf("image %+v not pushed", res.Image)
	}
	if res.Chart != (Artifact{}) || res.Manifests != (Artifact{}) || res.CLI != nil {
		t.Errorf("Image released more than the image: %+v", res)
	}
	if got := resolveTag(t, host, "capwright-manifests", o.Version); got != "" {
		t.Errorf("manifests pushed by Image")
	}
}

func TestReleaseChecksBeforeBuilding(t *testing.T) {
	repo := testRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "stray.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "manifests", "default", "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		change func(*Options)
		want   []string
	}{
		"no version":        {func(o *Options) { o.Version = "" }, []string{"make release VERSION=v0.1.0 REGISTRY="}},
		"no leading v":      {func(o *Options) { o.Version = "1.2.3" }, []string{`"1.2.3"`, "vX.Y.Z"}},
		"not semver":        {func(o *Options) { o.Version = "v1.2" }, []string{`"v1.2"`}},
		"build metadata":    {func(o *Options) { o.Version = "v1.2.3+abc" }, []string{`"v1.2.3+abc"`}},
		"no registry":       {func(o *Options) { o.Registry = "" }, []string{"no registry", "REGISTRY="}},
		"bad registry":      {func(o *Options) { o.Registry = "Registry.test/UPPER" }, []string{"Registry.test/UPPER"}},
		"bad platform":      {func(o *Options) { o.ImagePlatforms = []string{"linux"} }, []string{`"linux"`, "os/arch"}},
		"uncommitted files": {func(o *Options) {}, []string{"stray.txt", "manifests/default/kustomization.yaml", "ALLOW_DIRTY=1"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t, repo, "registry.test/capwright")
			o.build = func(context.Context, buildSpec) error {
				t.Error("built before the options were checked")
				return errors.New("no build")
			}
			tt.change(&o)
			_, err := Release(context.Background(), o)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestReleaseAllowDirty(t *testing.T) {
	repo := testRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "stray.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t, repo, "registry.test/capwright")
	o.Output = filepath.Join(t.TempDir(), "out")
	o.CLIPlatforms = []string{}
	o.AllowDirty = true
	res, err := Release(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.CLI != nil {
		t.Errorf("CLI built though skipped: %v", res.CLI)
	}
}

func TestReleaseOutputInsideTheTreeIsNoChange(t *testing.T) {
	repo := testRepo(t)
	o := testOptions(t, repo, "registry.test/capwright")
	o.Output = filepath.Join(repo, "dist")
	o.CLIDir = ""
	for i := range 2 {
		if _, err := Release(context.Background(), o); err != nil {
			t.Fatalf("release %d into %s: %v", i+1, o.Output, err)
		}
	}
}
