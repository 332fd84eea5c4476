package plane

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// GitServer is a Git host for GitOps tests: Flux's source-controller
// clones from it, and `flux bootstrap git`, plain `git` and go-git push to
// it, over smart HTTP, both plain (HTTPURL) and TLS (HTTPSURL), with HTTP
// basic auth on every request, fetches included.
//
// It is real Git: Debian's `git http-backend` (the CGI program Git ships
// for serving repositories over HTTP) run by Go's net/http/cgi, not a Go
// implementation of the server side such as go-git's. That is the sturdier
// choice for tests that must tell whether Flux works against a real host:
// the server is the same git that users' hosts (and the Git hosting
// products built on it) run, it speaks the whole protocol, v2 included
// (ls-refs, fetch with filters, unborn HEAD of an empty repository), with
// git's own pack negotiation and receive-pack checks, and there is no
// re-implementation of the protocol here whose quirks a test could end up
// proving instead of Flux's.
//
// Two things stand between net/http and http-backend: the Authorization
// header is taken off the request before it is handed on (CGI passes every
// header to the program as an HTTP_* variable), and request bodies of
// unknown length (what git sends with Transfer-Encoding: chunked for
// pushes above its 1 MiB http.postBuffer, and HTTP/2 bodies) are spooled
// to a temporary file first, because net/http/cgi refuses chunked bodies
// and CGI wants a CONTENT_LENGTH. Bodies above maxGitRequestBody are
// refused with 413.
//
// Every request is logged to the log file (time, scheme, method, path,
// query, status, how auth was judged, duration), never with credentials.
type GitServer struct {
	// Dir is the project root on disk (GIT_PROJECT_ROOT): repository
	// <name> is the directory Dir/<name>, reached at /<name>.
	Dir string
	// HTTPHost and HTTPSHost are host:port of the plain HTTP and the TLS
	// listener, both on 127.0.0.1.
	HTTPHost, HTTPSHost string
	// Username and Password are the only credentials accepted (HTTP basic
	// auth).
	Username, Password string
	// CACertPEM is the CA that issued the HTTPS listener's certificate
	// (for 127.0.0.1 and localhost): what a client trusts, as
	// `git -c http.sslCAInfo=<file>`, the `ca.crt` of a Flux
	// GitRepository's Secret, or `flux bootstrap git --ca-file`.
	CACertPEM []byte

	git     string // the git binary
	logFile *os.File
	logMu   sync.Mutex
	servers []*http.Server

	mu       sync.Mutex
	requests []GitRequest
}

// GitServerOptions configure StartGitServer.
type GitServerOptions struct {
	// Dir is the project root; it is created if missing. Required.
	Dir string
	// LogPath receives the request log and http-backend's errors; none is
	// written when empty.
	LogPath string
	// CA issues the HTTPS certificate; a new CA is made when nil.
	CA *CA
	// Username and Password default to "capwright" and a random password.
	Username, Password string
}

// GitRequest is one request the server answered, without credentials.
type GitRequest struct {
	At     time.Time
	Scheme string // http or https
	Method string
	// Path and Query are the URL's, e.g. /fleet.git/info/refs and
	// service=git-upload-pack.
	Path, Query string
	Status      int
	Auth        AuthResult
}

// maxGitRequestBody bounds one request body (a push's pack, a fetch's
// negotiation): far above the few MiB a test pushes, low enough that a
// runaway client cannot fill the disk.
const maxGitRequestBody = 256 << 20

// maxGitRequests bounds the request record of a long-running server.
const maxGitRequests = 100_000

// gitRealm is the realm of the Basic challenge.
const gitRealm = "capwright-plane git"

// StartGitServer serves the repositories under opts.Dir on two free
// loopback ports, plain HTTP and HTTPS.
func StartGitServer(opts GitServerOptions) (*GitServer, error) {
	fail := func(err error) (*GitServer, error) {
		return nil, &ComponentError{Component: "git-server", Cause: err, LogPath: opts.LogPath}
	}
	if opts.Dir == "" {
		return fail(errors.New("GitServerOptions.Dir is required"))
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return fail(fmt.Errorf("the git binary is needed for git http-backend (Debian: apt-get install git): %w", err))
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	if opts.Username == "" {
		opts.Username = "capwright"
	}
	if opts.Password == "" {
		secret := make([]byte, 16)
		if _, err := rand.Read(secret); err != nil {
			return fail(err)
		}
		opts.Password = hex.EncodeToString(secret)
	}
	ca := opts.CA
	if ca == nil {
		if ca, err = NewCA("git-server-ca"); err != nil {
			return fail(err)
		}
	}
	pair, err := ca.servingCertificate()
	if err != nil {
		return fail(err)
	}
	g := &GitServer{
		Dir:       dir,
		Username:  opts.Username,
		Password:  opts.Password,
		CACertPEM: ca.CertPEM(),
		git:       gitPath,
	}
	if opts.LogPath != "" {
		if g.logFile, err = os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fail(err)
		}
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Dir:  dir,
		// Only what http-backend needs; net/http/cgi adds the request's
		// CGI variables, PATH and (on Linux) LD_LIBRARY_PATH. The host's
		// system and global git configuration are kept out.
		Env: []string{
			"GIT_PROJECT_ROOT=" + dir,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
		Logger: log.New(g.logWriter(), "", log.LstdFlags),
		Stderr: g.logWriter(),
	}
	g.logf("git server: project root %s, git %s", dir, gitPath)

	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	for _, scheme := range []string{"http", "https"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = g.Close()
			return fail(err)
		}
		srv := &http.Server{
			Handler:           g.handler(scheme, backend),
			ReadHeaderTimeout: 10 * time.Second,
			// A push of a large pack from a slow client, or a fetch
			// whose pack takes long to write, still fits.
			ReadTimeout:  5 * time.Minute,
			WriteTimeout: 10 * time.Minute,
			IdleTimeout:  2 * time.Minute,
			// TLS handshakes of clients that distrust the CA (tests do
			// that on purpose) go to the log, not to stderr.
			ErrorLog: log.New(g.logWriter(), "", log.LstdFlags),
		}
		g.servers = append(g.servers, srv)
		if scheme == "https" {
			srv.TLSConfig = tlsConfig
			g.HTTPSHost = l.Addr().String()
			go func() { _ = srv.ServeTLS(l, "", "") }()
		} else {
			g.HTTPHost = l.Addr().String()
			go func() { _ = srv.Serve(l) }()
		}
	}
	g.logf("git server: http://%s and https://%s", g.HTTPHost, g.HTTPSHost)
	return g, nil
}

// HTTPURL is the plain HTTP URL of repository repo, e.g.
// http://127.0.0.1:41234/fleet.git.
func (g *GitServer) HTTPURL(repo string) string {
	return "http://" + g.HTTPHost + "/" + strings.TrimPrefix(repo, "/")
}

// HTTPSURL is the HTTPS URL of repository repo, e.g.
// https://127.0.0.1:41235/fleet.git.
func (g *GitServer) HTTPSURL(repo string) string {
	return "https://" + g.HTTPSHost + "/" + strings.TrimPrefix(repo, "/")
}

// CreateRepository makes an empty bare repository name (e.g. fleet.git,
// or team/apps.git) under Dir, with default branch main and pushes over
// HTTP allowed (http.receivepack=true). It fails if name exists.
func (g *GitServer) CreateRepository(name string) error {
	if name == "" || !filepath.IsLocal(name) || filepath.Clean(name) != name {
		return fmt.Errorf("repository name %q must be a clean relative path such as fleet.git", name)
	}
	path := filepath.Join(g.Dir, name)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("repository %s exists already (%s)", name, path)
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", path},
		{"-C", path, "config", "http.receivepack", "true"},
	} {
		cmd := exec.Command(g.git, args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("creating repository %s: git %s: %w: %s", name, strings.Join(args, " "), err, out)
		}
	}
	g.logf("git server: created repository %s", name)
	return nil
}

// Requests lists the requests answered since since, oldest first.
func (g *GitServer) Requests(since time.Time) []GitRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []GitRequest
	for _, r := range g.requests {
		if !r.At.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// Close stops both listeners (waiting up to 5 s for requests under way)
// and closes the log. The repositories stay on disk.
func (g *GitServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range g.servers {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err, srv.Close())
		}
	}
	g.servers = nil
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if g.logFile != nil {
		errs = append(errs, g.logFile.Close())
		g.logFile = nil
	}
	return errors.Join(errs...)
}

// handler authenticates, logs and hands the request to http-backend.
func (g *GitServer) handler(scheme string, backend *cgi.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		auth := g.judge(req)
		switch {
		case auth != AuthAccepted:
			// As Git hosts answer: git then asks its credential helpers
			// (or the terminal) and retries; go-git reports
			// "authentication required".
			sw.Header().Set("WWW-Authenticate", `Basic realm="`+gitRealm+`"`)
			http.Error(sw, "authentication required", http.StatusUnauthorized)
		default:
			g.serveBackend(sw, req, backend)
		}
		g.record(GitRequest{At: start, Scheme: scheme, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Status: sw.status, Auth: auth}, time.Since(start))
	})
}

// serveBackend runs http-backend for an authenticated request.
func (g *GitServer) serveBackend(w http.ResponseWriter, req *http.Request, backend *cgi.Handler) {
	if req.ContentLength > maxGitRequestBody {
		http.Error(w, fmt.Sprintf("request body over %d bytes", maxGitRequestBody), http.StatusRequestEntityTooLarge)
		return
	}
	req = req.Clone(req.Context())
	req.Header.Del("Authorization")
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength < 0 {
		spooled, size, err := spoolBody(http.MaxBytesReader(w, req.Body, maxGitRequestBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, fmt.Sprintf("request body over %d bytes", maxGitRequestBody), http.StatusRequestEntityTooLarge)
				return
			}
			g.logf("git server: reading the body of %s %s: %v", req.Method, req.URL.Path, err)
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return
		}
		defer spooled.Close()
		req.Body, req.ContentLength, req.TransferEncoding = spooled, size, nil
	} else if req.Body != nil {
		req.Body = http.MaxBytesReader(w, req.Body, maxGitRequestBody)
	}
	user := *backend
	user.Env = append(append([]string(nil), backend.Env...), "REMOTE_USER="+g.Username)
	user.ServeHTTP(w, req)
}

// spoolBody copies body to an unlinked temporary file and returns it
// rewound, with its size.
func spoolBody(body io.Reader) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "capwright-git-body-")
	if err != nil {
		return nil, 0, err
	}
	_ = os.Remove(f.Name()) // gone from the directory; the file lives until Close
	size, err := io.Copy(f, body)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// judge compares the request's basic-auth credentials with the server's,
// in constant time.
func (g *GitServer) judge(req *http.Request) AuthResult {
	user, pass, ok := req.BasicAuth()
	if !ok {
		return AuthChallenged
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(g.Username)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(g.Password)) == 1
	if userOK && passOK {
		return AuthAccepted
	}
	return AuthRefused
}

func (g *GitServer) record(r GitRequest, took time.Duration) {
	g.mu.Lock()
	if len(g.requests) < maxGitRequests {
		g.requests = append(g.requests, r)
	}
	g.mu.Unlock()
	path := r.Path
	if r.Query != "" {
		path += "?" + r.Query
	}
	g.logf("%s %s %s %d auth=%s %s", r.Scheme, r.Method, path, r.Status, r.Auth, took.Round(time.Millisecond))
}

func (g *GitServer) logf(format string, args ...any) {
	fmt.Fprintf(g.logWriter(), time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// logWriter writes to the log file, one write at a time; nothing once
// closed or without a log.
func (g *GitServer) logWriter() io.Writer { return gitLog{g} }

type gitLog struct{ g *GitServer }

func (l gitLog) Write(p []byte) (int, error) {
	l.g.logMu.Lock()
	defer l.g.logMu.Unlock()
	if l.g.logFile == nil {
		return len(p), nil
	}
	return l.g.logFile.Write(p)
}

// startGit serves the plane's Git repositories under <RunDir>/git with a
// certificate of the plane's CA, logging to git-server.log, and creates
// fleet.git, the empty repository a user's Flux syncs from.
func (p *Plane) startGit(ca *CA) error {
	g, err := StartGitServer(GitServerOptions{
		Dir:     filepath.Join(p.RunDir, "git"),
		LogPath: p.LogPath("git-server"),
		CA:      ca,
	})
	if err != nil {
		return err
	}
	p.Git = g
	if err := g.CreateRepository("fleet.git"); err != nil {
		return &ComponentError{Component: "git-server", Cause: err, LogPath: p.LogPath("git-server")}
	}
	return nil
}
