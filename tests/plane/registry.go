package plane

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI distribution registry served in-process on loopback,
// with the referrers API. The plane's own registry speaks plain HTTP
// without auth (Flux reaches it with `spec.insecure: true`); one started
// with RegistryOptions may speak TLS and require basic auth, as a private
// registry does.
type Registry struct {
	// Host is host:port, e.g. 127.0.0.1:41234.
	Host string
	// CACertPEM is the certificate authority that issued the registry's
	// serving certificate (what a client trusts: ca.crt); nil for plain
	// HTTP.
	CACertPEM []byte
	server    *http.Server
	auth      *basicAuth
}

// RegistryOptions choose how a registry is reached. The zero value is the
// plane's own registry: plain HTTP, anyone may read and write.
type RegistryOptions struct {
	// CA, when set, makes the registry speak TLS only, with a serving
	// certificate for 127.0.0.1 and localhost issued by CA.
	CA *CA
	// Username and Password, when Username is set, are the only
	// credentials the registry accepts: every request, the /v2/ probe
	// included, needs them as HTTP basic auth. SetCredentials changes them
	// while it runs.
	Username, Password string
}

// StartRegistry serves a new in-memory registry on a free loopback port
// (plain HTTP, no auth).
func StartRegistry() (*Registry, error) { return startRegistry(RegistryOptions{}) }

// StartRegistryWith serves a new in-memory registry on a free loopback
// port, reached as opts say.
func StartRegistryWith(opts RegistryOptions) (*Registry, error) { return startRegistry(opts) }

func startRegistry(opts RegistryOptions) (*Registry, error) {
	r := &Registry{}
	handler := registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithReferrersSupport(true),
	)
	if opts.Username != "" {
		r.auth = &basicAuth{next: handler, username: opts.Username, password: opts.Password}
		handler = r.auth
	}
	// ErrorLog discards the TLS handshake errors of clients that distrust
	// the CA, which some tests cause on purpose.
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if opts.CA != nil {
		pair, err := opts.CA.servingCertificate()
		if err != nil {
			return nil, &ComponentError{Component: "registry", Cause: err}
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		r.CACertPEM = opts.CA.CertPEM()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, &ComponentError{Component: "registry", Cause: err}
	}
	if srv.TLSConfig != nil {
		go func() { _ = srv.ServeTLS(l, "", "") }()
	} else {
		go func() { _ = srv.Serve(l) }()
	}
	r.Host, r.server = l.Addr().String(), srv
	return r, nil
}

// SetCredentials makes username and password the only credentials the
// registry accepts from now on (a password rotation).
func (r *Registry) SetCredentials(username, password string) error {
	if r.auth == nil {
		return errors.New("registry " + r.Host + " was started without basic auth: set RegistryOptions.Username")
	}
	r.auth.set(username, password)
	return nil
}

// AuthLog is what a registry with basic auth saw since since: one entry
// per request, oldest first. It keeps no credentials.
func (r *Registry) AuthLog(since time.Time) []AuthEntry {
	if r.auth == nil {
		return nil
	}
	return r.auth.entries(since)
}

// Close stops the registry.
func (r *Registry) Close() error { return r.close() }

func (r *Registry) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.server.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// AuthResult is how a registry with basic auth judged a request.
type AuthResult string

const (
	// AuthChallenged: the request carried no credentials and was answered
	// 401 with the Basic challenge, as clients expect before they send
	// any (go-containerregistry probes /v2/, oras-go retries the request).
	AuthChallenged AuthResult = "challenged"
	// AuthAccepted: the credentials were the current ones.
	AuthAccepted AuthResult = "accepted"
	// AuthRefused: credentials were sent, but not the current ones.
	AuthRefused AuthResult = "refused"
)

// AuthEntry is one request to a registry with basic auth.
type AuthEntry struct {
	At        time.Time
	Method    string
	Path      string
	UserAgent string
	Result    AuthResult
}

// maxAuthLog bounds the log of a long-running registry.
const maxAuthLog = 100_000

// basicAuth guards a registry with one username and password that can
// change while it serves. It answers like a registry does: 401 with
// `WWW-Authenticate: Basic realm=…` and the distribution spec's error body.
// Both clients that reach the registry understand a Basic challenge without
// a token service: oras-go (the manager's preflight, the test's pushes)
// retries the refused request with the credentials, and
// go-containerregistry (source-controller) probes /v2/ and, on any
// challenge other than Bearer, sends basic auth on every request.
type basicAuth struct {
	next http.Handler

	mu                 sync.Mutex
	username, password string
	log                []AuthEntry
}

func (a *basicAuth) set(username, password string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.username, a.password = username, password
}

func (a *basicAuth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	result := a.judge(req)
	if result != AuthAccepted {
		w.Header().Set("WWW-Authenticate", `Basic realm="capwright-plane"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}`)
		return
	}
	a.next.ServeHTTP(w, req)
}

// judge compares the request's credentials with the current ones (in
// constant time) and logs the outcome.
func (a *basicAuth) judge(req *http.Request) AuthResult {
	user, pass, ok := req.BasicAuth()
	a.mu.Lock()
	defer a.mu.Unlock()
	result := AuthChallenged
	if ok {
		result = AuthRefused
		userOK := subtle.ConstantTimeCompare([]byte(user), []byte(a.username)) == 1
		passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(a.password)) == 1
		if userOK && passOK {
			result = AuthAccepted
		}
	}
	if len(a.log) < maxAuthLog {
		a.log = append(a.log, AuthEntry{At: time.Now(), Method: req.Method, Path: req.URL.Path, UserAgent: req.UserAgent(), Result: result})
	}
	return result
}

func (a *basicAuth) entries(since time.Time) []AuthEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []AuthEntry
	for _, e := range a.log {
		if !e.At.Before(since) {
			out = append(out, e)
		}
	}
	return out
}
