// Package registrytest runs in-process OCI registries (go-containerregistry's
// registry, which speaks the real distribution protocol including the
// referrers API) for tests: plain HTTP, or TLS with basic auth.
package registrytest

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/capwright/capwright/internal/artifact"
)

// Options choose how the registry is reached.
type Options struct {
	// TLS serves https with a self-signed certificate; RootCAs of the
	// Registry trusts it.
	TLS bool
	// Username and Password, when set, require basic auth on every request.
	Username, Password string
	// NoReferrers turns the referrers API off, so clients fall back to the
	// referrers tag schema.
	NoReferrers bool
}

// Registry is a running in-process registry.
type Registry struct {
	// Host is host:port, what goes into references.
	Host string
	// RootCAs trusts the registry's certificate (TLS only).
	RootCAs *x509.CertPool
	// CertPEM is the registry's certificate in PEM (TLS only), what the
	// ca.crt of a certSecretRef holds.
	CertPEM []byte
	opts    Options
	srv     *httptest.Server
	// requests counts the requests served, by method.
	gets, heads, puts, posts, patches atomic.Int64
}

// New starts a registry that stops when the test ends.
func New(t testing.TB, opts Options) *Registry {
	t.Helper()
	r := &Registry{opts: opts}
	handler := registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithReferrersSupport(!opts.NoReferrers),
	)
	counted := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet:
			r.gets.Add(1)
		case http.MethodHead:
			r.heads.Add(1)
		case http.MethodPut:
			r.puts.Add(1)
		case http.MethodPost:
			r.posts.Add(1)
		case http.MethodPatch:
			r.patches.Add(1)
		}
		handler.ServeHTTP(w, req)
	})
	var h http.Handler = counted
	if opts.Username != "" {
		h = basicAuth(counted, opts.Username, opts.Password)
	}
	if opts.TLS {
		r.srv = httptest.NewTLSServer(h)
		r.RootCAs = x509.NewCertPool()
		r.RootCAs.AddCert(r.srv.Certificate())
		r.CertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	} else {
		r.srv = httptest.NewServer(h)
	}
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
	t.Cleanup(r.Close)
	return r
}

// Close stops the registry; later requests fail to connect.
func (r *Registry) Close() { r.srv.Close() }

// Access is how to reach the registry with the right credentials.
func (r *Registry) Access() artifact.Access {
	return artifact.Access{
		PlainHTTP: !r.opts.TLS,
		RootCAs:   r.RootCAs,
		Username:  r.opts.Username,
		Password:  r.opts.Password,
		UserAgent: "capwright-test",
	}
}

// Ref is repository:tag in this registry.
func (r *Registry) Ref(repository, tag string) artifact.Reference {
	return artifact.Reference{Host: r.Host, Repository: repository, Tag: tag}
}

// Writes counts the requests that upload something (PUT, POST, PATCH).
func (r *Registry) Writes() int64 { return r.puts.Load() + r.posts.Load() + r.patches.Load() }

// Reads counts GET and HEAD requests.
func (r *Registry) Reads() int64 { return r.gets.Load() + r.heads.Load() }

// basicAuth guards a handler with one user and password, answering like a
// registry does.
func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}
