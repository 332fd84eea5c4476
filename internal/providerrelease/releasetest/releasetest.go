// Package releasetest runs fake release hosts for tests: two TLS servers
// (the origin, e.g. github.com, and a download host, e.g.
// release-assets.githubusercontent.com) with a certificate of a test CA
// for the real host names, and a Transport that dials those names to them.
package releasetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Download host names: the Transport dials them to the download server,
// every other name to the origin server.
var downloadHosts = map[string]bool{
	"objects.githubusercontent.com":        true,
	"release-assets.githubusercontent.com": true,
	"evil.example":                         true,
	"storage.example":                      true,
}

// certNames are the names the servers' certificate is valid for.
var certNames = []string{
	"github.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com",
	"gitlab.example.com", "mirror.example.com", "evil.example", "storage.example",
}

// SignedQuery is the query the fake GitHub adds to its download redirects,
// as the real one signs them; it must never appear in messages.
const SignedQuery = "X-Amz-Signature=signed-secret-0123&X-Amz-Expires=300"

// Request is one request a fake host served.
type Request struct {
	Host, Path    string
	Authorization string
}

// Hosts are the fake release hosts.
type Hosts struct {
	// Origin and Download are the two servers.
	Origin, Download *httptest.Server
	// CAPEM is the test CA's certificate; RootCAs trusts it.
	CAPEM   []byte
	RootCAs *x509.CertPool

	mu       sync.Mutex
	handlers map[string]http.Handler // by host name (no port)
	requests []Request
}

// New starts the hosts; they stop when the test ends.
func New(t testing.TB) *Hosts {
	t.Helper()
	caCert, caKey := newCA(t)
	leaf := newLeaf(t, caCert, caKey)
	h := &Hosts{handlers: map[string]http.Handler{}, RootCAs: x509.NewCertPool()}
	h.RootCAs.AddCert(caCert)
	h.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})
	start := func() *httptest.Server {
		s := httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
		s.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
		s.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes refused on purpose
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	h.Origin, h.Download = start(), start()
	return h
}

// Handle serves host (a name, or "127.0.0.1:port" of a server) with handler.
func (h *Hosts) Handle(host string, handler http.Handler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handlers[strings.ToLower(host)] = handler
}

// Requests returns the requests served so far.
func (h *Hosts) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.requests...)
}

func (h *Hosts) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, Request{Host: r.Host, Path: r.URL.EscapedPath(), Authorization: r.Header.Get("Authorization")})
	handler, ok := h.handlers[strings.ToLower(r.Host)]
	if !ok {
		handler, ok = h.handlers[strings.ToLower(hostOnly(r.Host))]
	}
	h.mu.Unlock()
	if !ok {
		http.Error(w, "no such host in the test", http.StatusBadGateway)
		return
	}
	handler.ServeHTTP(w, r)
}

func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}

// OriginHost and DownloadHost are the servers' 127.0.0.1:port.
func (h *Hosts) OriginHost() string   { return h.Origin.Listener.Addr().String() }
func (h *Hosts) DownloadHost() string { return h.Download.Listener.Addr().String() }

// Transport dials the download host names to the download server and every
// other name to the origin server, and trusts the test CA.
func (h *Hosts) Transport() *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host := hostOnly(addr)
			switch {
			case host == "127.0.0.1":
			case downloadHosts[host]:
				addr = h.DownloadHost()
			default:
				addr = h.OriginHost()
			}
			return dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: h.RootCAs, MinVersion: tls.VersionTLS12},
	}
}

// CAFile writes CAPEM into a file and returns its path.
func (h *Hosts) CAFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "release-ca.pem")
	if err := os.WriteFile(p, h.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// GitHub serves a release of owner/repo at version as github.com does:
// https://github.com/{owner}/{repo}/releases/download/{version}/{file}
// answers a redirect to release-assets.githubusercontent.com with a signed
// query, which serves the file. Other versions and files are 404. When
// token is set, github.com answers 401 to requests without "Bearer token"
// (the real github.com serves public assets regardless; this checks what
// is sent).
func (h *Hosts) GitHub(owner, repo, version string, files map[string][]byte, token string) {
	prefix := "/" + owner + "/" + repo + "/releases/download/"
	h.Handle("github.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Bad credentials", http.StatusUnauthorized)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		v, file, _ := strings.Cut(rest, "/")
		if _, exists := files[file]; !ok || v != version || !exists {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, "https://release-assets.githubusercontent.com/github-production-release-asset/123/"+file+"?"+SignedQuery, http.StatusFound)
	}))
	h.Handle("release-assets.githubusercontent.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("X-Amz-Signature") == "" {
			http.Error(w, "unsigned", http.StatusForbidden)
			return
		}
		file := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		data, ok := files[file]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	}))
}

// Files serves files under prefix/{version}/{file} on host, as a GitLab
// generic package or a plain mirror does; other paths are 404. check, when
// set, may refuse a request (e.g. for its credentials) by returning false
// after writing the answer.
func (h *Hosts) Files(host, prefix, version string, files map[string][]byte, check func(w http.ResponseWriter, r *http.Request) bool) {
	h.Handle(host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil && !check(w, r) {
			return
		}
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix+"/"+version+"/")
		data, exists := files[rest]
		if !ok || !exists {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}))
}

func newCA(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "releasetest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func newLeaf(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "releasetest"},
		DNSNames:     certNames,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}
}

// String describes the hosts, for failure messages.
func (h *Hosts) String() string {
	return fmt.Sprintf("origin %s, download %s", h.OriginHost(), h.DownloadHost())
}
