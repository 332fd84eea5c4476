package plane

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startTestGitServer serves a new project root with fleet.git, on a CA of
// its own.
func startTestGitServer(t *testing.T) *GitServer {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary:", err)
	}
	ca, err := NewCA("git-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g, err := StartGitServer(GitServerOptions{Dir: filepath.Join(dir, "git"), LogPath: filepath.Join(dir, "git-server.log"), CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("closing the git server: %v", err)
		}
	})
	if err := g.CreateRepository("fleet.git"); err != nil {
		t.Fatal(err)
	}
	return g
}

// gitClient runs the real git binary as a user would, kept away from the
// host's git configuration and credential helpers, never prompting.
type gitClient struct {
	t    *testing.T
	home string
	env  []string
}

func newGitClient(t *testing.T) *gitClient {
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "SSH_ASKPASS=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Plane Test", "GIT_AUTHOR_EMAIL=test@plane.invalid",
		"GIT_COMMITTER_NAME=Plane Test", "GIT_COMMITTER_EMAIL=test@plane.invalid")
	return &gitClient{t: t, home: home, env: env}
}

// run runs git in dir and returns its combined output and error.
func (c *gitClient) run(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs git and fails the test if it fails.
func (c *gitClient) must(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, args...)
	if err != nil {
		c.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// withCredentials is rawURL with user and password as its userinfo.
func withCredentials(t *testing.T, rawURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// pushAndCloneAgain clones the empty fleet.git from remote, commits a
// manifest and a 3 MiB file (above git's 1 MiB http.postBuffer, so the
// pack goes up with Transfer-Encoding: chunked), pushes to main, clones
// again and checks the commit and both files came back.
func pushAndCloneAgain(t *testing.T, c *gitClient, remote string, config ...string) {
	t.Helper()
	work := t.TempDir()
	out := c.must(work, append(config, "clone", remote, "first")...)
	if !strings.Contains(out, "empty repository") {
		t.Logf("clone of the empty repository said: %s", out)
	}
	first := filepath.Join(work, "first")
	if branch := c.must(first, "symbolic-ref", "--short", "HEAD"); branch != "main" {
		t.Errorf("the empty clone's branch is %q, want main (the server's default branch)", branch)
	}
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fleet\n")
	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	if err := os.WriteFile(filepath.Join(first, "namespace.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first, "blob.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must(first, "add", ".")
	c.must(first, "commit", "--quiet", "-m", "Add the fleet namespace")
	commit := c.must(first, "rev-parse", "HEAD")
	c.must(first, append(config, "push", "origin", "HEAD:main")...)

	c.must(work, append(config, "clone", remote, "second")...)
	second := filepath.Join(work, "second")
	if got := c.must(second, "rev-parse", "HEAD"); got != commit {
		t.Errorf("the second clone is at %s, want the pushed commit %s", got, commit)
	}
	if got, err := os.ReadFile(filepath.Join(second, "namespace.yaml")); err != nil || !bytes.Equal(got, manifest) {
		t.Errorf("namespace.yaml in the second clone: %q, %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(second, "blob.bin")); err != nil || !bytes.Equal(got, big) {
		t.Errorf("blob.bin in the second clone differs (%d bytes, %v)", len(got), err)
	}
}

// TestGitServerHTTPS clones, pushes and clones again with the real git
// over HTTPS, trusting only the server's CA, with protocol v2.
func TestGitServerHTTPS(t *testing.T) {
	g := startTestGitServer(t)
	c := newGitClient(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, g.CACertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	remote := withCredentials(t, g.HTTPSURL("fleet.git"), g.Username, g.Password)
	pushAndCloneAgain(t, c, remote, "-c", "http.sslCAInfo="+caFile, "-c", "protocol.version=2")

	// git sends its first request of each command without credentials
	// and repeats it with those of the URL after the 401; a push above
	// http.postBuffer is two POSTs, a tiny probe and the pack.
	var pushes int
	for _, r := range g.Requests(since) {
		if r.Scheme != "https" {
			t.Errorf("request %s %s came in over %s", r.Method, r.Path, r.Scheme)
		}
		if r.Path == "/fleet.git/git-receive-pack" && r.Status == http.StatusOK && r.Auth == AuthAccepted {
			pushes++
		}
	}
	if pushes == 0 {
		t.Errorf("saw no accepted push: %+v", g.Requests(since))
	}

	// Without the CA the certificate is not trusted.
	out, err := c.run(t.TempDir(), "clone", remote, "untrusted")
	if err == nil || !strings.Contains(out, "certificate") {
		t.Errorf("clone without the CA: err %v, output %s; want a certificate error", err, out)
	}

	log, err := os.ReadFile(filepath.Join(filepath.Dir(g.Dir), "git-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "https POST /fleet.git/git-receive-pack 200 auth=accepted") {
		t.Errorf("git-server.log lacks the push:\n%s", log)
	}
	if strings.Contains(string(log), g.Password) {
		t.Error("git-server.log holds the password")
	}
}

// TestGitServerPlainHTTP does the same over plain HTTP.
func TestGitServerPlainHTTP(t *testing.T) {
	g := startTestGitServer(t)
	pushAndCloneAgain(t, newGitClient(t), withCredentials(t, g.HTTPURL("fleet.git"), g.Username, g.Password))
}

// TestGitServerRefusesWithoutCredentials proves every request needs the
// credentials, a fetch as much as a push, and that refusals carry the
// Basic challenge git and go-git act on.
func TestGitServerRefusesWithoutCredentials(t *testing.T) {
	g := startTestGitServer(t)
	c := newGitClient(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, g.CACertPEM, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		remote string
		want   AuthResult
	}{
		{"wrong password", withCredentials(t, g.HTTPSURL("fleet.git"), g.Username, "not-"+g.Password), AuthRefused},
		{"wrong username", withCredentials(t, g.HTTPSURL("fleet.git"), "someone", g.Password), AuthRefused},
		{"no credentials", g.HTTPSURL("fleet.git"), AuthChallenged},
		{"no credentials, plain HTTP", g.HTTPURL("fleet.git"), AuthChallenged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			since := time.Now()
			out, err := c.run(t.TempDir(), "-c", "http.sslCAInfo="+caFile, "clone", tc.remote, "refused")
			if err == nil {
				t.Fatalf("clone succeeded:\n%s", out)
			}
			requests := g.Requests(since)
			if len(requests) == 0 {
				t.Fatalf("the server saw no request; git said: %s", out)
			}
			// git asks without credentials first, then (if it has any)
			// with them: every answer is 401, the last judged tc.want.
			for _, r := range requests {
				if r.Status != http.StatusUnauthorized {
					t.Errorf("%s %s?%s answered %d (auth %s), want 401; git said: %s", r.Method, r.Path, r.Query, r.Status, r.Auth, out)
				}
			}
			if last := requests[len(requests)-1]; last.Auth != tc.want {
				t.Errorf("the last request was judged %s, want %s; git said: %s", last.Auth, tc.want, out)
			}
		})
	}

	// The challenge itself, for a fetch's first request and for a push.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(g.CACertPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}}}
	for _, tc := range []struct{ method, url, user, pass string }{
		{http.MethodGet, g.HTTPSURL("fleet.git/info/refs?service=git-upload-pack"), "", ""},
		{http.MethodGet, g.HTTPURL("fleet.git/info/refs?service=git-receive-pack"), g.Username, "wrong"},
		{http.MethodPost, g.HTTPSURL("fleet.git/git-receive-pack"), "", ""},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("%s %s: %d, WWW-Authenticate %q; want 401 with a Basic challenge", tc.method, tc.url, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// TestGitServerCreateRepository checks the bare repository's settings and
// that names outside the project root are refused.
func TestGitServerCreateRepository(t *testing.T) {
	g := startTestGitServer(t)
	c := newGitClient(t)
	if err := g.CreateRepository("team/apps.git"); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(g.Dir, "team", "apps.git")
	if got := c.must(repo, "config", "--bool", "core.bare"); got != "true" {
		t.Errorf("core.bare = %s", got)
	}
	if got := c.must(repo, "config", "--bool", "http.receivepack"); got != "true" {
		t.Errorf("http.receivepack = %s", got)
	}
	if got := c.must(repo, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD = %s, want refs/heads/main", got)
	}
	for _, name := range []string{"fleet.git", "", "../escape.git", "/abs.git", "team/../x.git"} {
		if err := g.CreateRepository(name); err == nil {
			t.Errorf("CreateRepository(%q) succeeded", name)
		}
	}
	// A nested repository is served at its path.
	out := c.must(t.TempDir(), "ls-remote", withCredentials(t, g.HTTPURL("team/apps.git"), g.Username, g.Password))
	if out != "" {
		t.Errorf("ls-remote of the empty repository: %q", out)
	}
}

// TestPlaneStartsGit starts the plane's Git part on its own: fleet.git
// under <RunDir>/git, requests in git-server.log.
func TestPlaneStartsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary:", err)
	}
	ca, err := NewCA("plane-ca")
	if err != nil {
		t.Fatal(err)
	}
	p := &Plane{RunDir: t.TempDir()}
	if err := p.startGit(ca); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Git.Close() }()
	if p.Git.Dir != filepath.Join(p.RunDir, "git") {
		t.Errorf("Dir = %s", p.Git.Dir)
	}
	if !bytes.Equal(p.Git.CACertPEM, ca.CertPEM()) {
		t.Error("the git server's CA is not the one given")
	}
	if _, err := os.Stat(filepath.Join(p.RunDir, "git", "fleet.git", "HEAD")); err != nil {
		t.Errorf("fleet.git: %v", err)
	}
	c := newGitClient(t)
	c.must(t.TempDir(), "ls-remote", withCredentials(t, p.Git.HTTPURL("fleet.git"), p.Git.Username, p.Git.Password))
	log, err := os.ReadFile(p.LogPath("git-server"))
	if err != nil || !strings.Contains(string(log), "GET /fleet.git/info/refs?service=git-upload-pack 200") {
		t.Errorf("git-server.log: %v\n%s", err, log)
	}
}
