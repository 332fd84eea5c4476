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
	auth      *basicAuth

	// The handler keeps the registry's content across Stop and Start.
	handler http.Handler
	tls     *tls.Config
	gate    gate

	mu     sync.Mutex
	server *http.Server
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
	r.gate.next = handler
	r.handler = &r.gate
	if opts.CA != nil {
		pair, err := opts.CA.servingCertificate()
		if err != nil {
			return nil, &ComponentError{Component: "registry", Cause: err}
		}
		r.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		r.CACertPEM = opts.CA.CertPEM()
	}
	if err := r.listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return r, nil
}

// listen serves the registry on addr.
func (r *Registry) listen(addr string) error {
	// ErrorLog discards the TLS handshake errors of clients that distrust
	// the CA, which some tests cause on purpose.
	srv := &http.Server{Handler: r.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), TLSConfig: r.tls}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return &ComponentError{Component: "registry", Cause: err}
	}
	if srv.TLSConfig != nil {
		go func() { _ = srv.ServeTLS(l, "", "") }()
	} else {
		go func() { _ = srv.Serve(l) }()
	}
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	if r.Host == "" {
		r.Host = l.Addr().String()
	}
	return nil
}

// Stop takes the registry off the network, as an outage does: connections
// are refused until Start. What it holds is kept.
func (r *Registry) Stop() error {
	if srv := r.takeServer(); srv != nil {
		return srv.Close()
	}
	return nil
}

// takeServer is the running server, which is no longer the registry's.
func (r *Registry) takeServer() *http.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	srv := r.server
	r.server = nil
	return srv
}

// Start serves a stopped registry again, on the same host and port.
func (r *Registry) Start() error {
	r.mu.Lock()
	running := r.server != nil
	r.mu.Unlock()
	if running {
		return nil
	}
	return r.listen(r.Host)
}

// Hang makes the registry accept connections and requests but answer
// none until Answer (a registry that is overloaded or stuck behind a
// proxy). Clients that give up get nothing.
func (r *Registry) Hang() { r.gate.hang() }

// Answer ends Hang: requests waiting are answered, new ones too.
func (r *Registry) Answer() { r.gate.answer() }

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

// Close stops the registry for good.
func (r *Registry) Close() error {
	r.gate.answer()
	srv := r.takeServer()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// gate holds requests while the registry hangs.
type gate struct {
	next http.Handler

	mu sync.Mutex
	// held is closed when the registry answers again; nil while it does.
	held chan struct{}
}

func (g *gate) hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

func (g *gate) answer() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-req.Context().Done():
			return
		}
	}
	g.next.ServeHTTP(w, req)
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
