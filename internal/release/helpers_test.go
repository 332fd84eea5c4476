package release

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// commitTime is the fixed time of the test repositories' commit.
var commitTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeBuild writes a small stand-in binary instead of running go build;
// its bytes follow from what would be built, as a real build's would.
func fakeBuild(_ context.Context, b buildSpec) error {
	return os.WriteFile(b.out, fmt.Appendf(nil, "stand-in %s for %s (%s)\n", b.pkg, b.platform, b.ldflags), 0o755)
}

// testRepo is a git repository with one commit at commitTime holding a
// copy of the real manifests and chart.
func testRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "..", "manifests"), filepath.Join(dir, "manifests"))
	copyDir(t, filepath.Join("..", "..", "charts", "capwright"), filepath.Join(dir, "charts", "capwright"))
	runGit(t, dir, "init", "-q")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-q", "-m", "test")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	date := commitTime.Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testOptions release the test repository with stand-in binaries and an
// isolated docker config.
func testOptions(t *testing.T, repo, registry string) Options {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	return Options{
		Version:      "v1.2.3",
		Registry:     registry,
		PlainHTTP:    true,
		RepoRoot:     repo,
		CLIPlatforms: []string{"linux/amd64", "darwin/arm64"},
		CLIDir:       filepath.Join(t.TempDir(), "cli"),
		Log:          testLog{t},
		build:        fakeBuild,
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startRegistry runs go-containerregistry's in-process registry behind
// wrap (nil: none) and returns host:port.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
