package plane

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReleaseServer stands in for GitHub release hosting, as kwok stands in for
// nodes: Cluster API providers publish their releases as GitHub release
// assets (metadata.yaml, {type}-components.yaml), and the real github.com
// cannot be reached here. It serves published files in GitHub's URL layout
// from two local HTTPS hosts, with the hop between them that GitHub makes:
//
//   - the origin (Host, for github.com) answers
//     GET or HEAD /{owner}/{repo}/releases/download/{tag}/{file} with
//     302 Found to a signed, short-lived URL on the download host;
//     /{owner}/{repo}/releases/latest/download/{file} with 302 Found to the
//     download URL of the newest release (highest semantic version without
//     a pre-release part), as GitHub's latest release link does; and a
//     missing repository, release or asset with 404 and the small
//     "Not Found" body github.com sends (text/html);
//   - the download host (DownloadHost, for release-assets.githubusercontent.com,
//     an Azure blob store) serves the bytes of a URL the origin handed out,
//     with Content-Type application/octet-stream, Content-Length, an ETag
//     and Last-Modified (conditional and range requests work); any other
//     path is 404 with an XML BlobNotFound error, a known path with a
//     missing, wrong or expired signature 403 AuthenticationFailed, as blob
//     storage answers.
//
// One deliberate difference: clusterctl's form
// /{owner}/{repo}/releases/{tag}/{file} (what URL returns) is answered with
// a redirect to the download form. github.com has no page there
// (clusterctl turns the form into API calls); a client that knows GitHub
// only as github.com, as Capwright's release fetcher does, treats the
// stand-in's host as a plain HTTPS location and asks for exactly that
// path, and then follows the same redirects it would follow on GitHub.
//
// The download host is named localhost and the origin 127.0.0.1 (both
// certificates cover both names), so the two hops reach two host names,
// as github.com and its asset host are. Clients tell hosts apart by name:
// Go's http.Client, for one, drops the Authorization header on a redirect
// to another host name but keeps it across ports of the same name, so
// with one name for both a token would reach the download host here and
// never on GitHub.
//
// With ReleaseServerOptions.Token the origin behaves like a private
// repository: without the token every path is 404, as GitHub hides
// private repositories; Private does the same for one repository of an
// otherwise public server. The download host never asks for credentials;
// its URLs are signed.
//
// Redirect makes the origin answer one release file's download link with a
// redirect to any URL instead of its download host: a release host that
// moved its files, or one a client must not follow.
type ReleaseServer struct {
	// Host is host:port of the origin, standing in for github.com.
	Host string
	// DownloadHost is host:port of the download host, standing in for
	// GitHub's asset host (release-assets.githubusercontent.com).
	DownloadHost string
	// CACertPEM is the CA that issued both serving certificates (for
	// 127.0.0.1 and localhost): what a client trusts.
	CACertPEM []byte

	token string
	// signingKey signs the download URLs the origin hands out.
	signingKey []byte
	origin     releaseHost
	download   releaseHost

	mu sync.Mutex
	// repos are keyed by lower-case owner/repo: GitHub matches them
	// case-insensitively.
	repos map[string]*releaseRepo
	// blobs are the published assets by their download path.
	blobs    map[string]*releaseAsset
	requests []ReleaseRequest
}

// ReleaseServerOptions choose how a release server is reached.
type ReleaseServerOptions struct {
	// CA issues the serving certificates; a new CA is made when nil.
	CA *CA
	// Token, when set, is the only credential the origin accepts, as an
	// "Authorization: Bearer <Token>" (or GitHub's "token <Token>") header
	// or as the password of HTTP basic auth; requests without it are
	// answered 404, as GitHub answers for a private repository.
	Token string
}

// ReleaseRequest is one request to either host of a ReleaseServer. It
// keeps no credentials and no query (download URLs carry a signature).
type ReleaseRequest struct {
	// Host is the ReleaseServer's Host or DownloadHost, whichever served.
	Host   string
	Method string
	Path   string
	// Status is the status answered; 0 while the request is held by Hang,
	// or when it was never answered (the client gave up, the server
	// stopped).
	Status int
	At     time.Time
	// Credentials tells whether the request carried an Authorization
	// header at all, right or wrong.
	Credentials bool
	// Authorized tells whether those credentials were the origin's Token.
	Authorized bool
}

// releaseRepo is one GitHub repository's releases.
type releaseRepo struct {
	id       int
	releases map[string]map[string]*releaseAsset // tag → file name → asset
	// token, when set, is the only credential the repository answers to
	// (Private).
	token string
	// redirects are the Locations that replace the download host for some
	// release files, by tag/file (Redirect).
	redirects map[string]string
}

// releaseAsset is one uploaded file. A re-upload is a new asset with a new
// download path: the old path then answers 404, as GitHub deletes the
// replaced asset.
type releaseAsset struct {
	name     string
	data     []byte
	etag     string
	modified time.Time
	path     string
}

// releaseHost is one of the two listeners, kept across Stop and Start.
type releaseHost struct {
	addr    string // where it listens: 127.0.0.1:port
	handler http.Handler
	gate    *gate
	tls     *tls.Config

	mu       sync.Mutex
	server   *http.Server
	listener net.Listener
	closed   bool
}

const (
	// assetPathPrefix is the blob container GitHub's download URLs name.
	assetPathPrefix = "/github-production-release-asset/"
	// signedURLLifetime is how long a download URL is valid; GitHub's
	// expire within the hour.
	signedURLLifetime = time.Hour
	// maxReleaseRequests bounds the request log of a long-running server.
	maxReleaseRequests = 100_000
	// blobVersion is the storage API version the signed URLs name.
	blobVersion = "2018-11-09"
)

// StartReleaseServer starts both hosts on free loopback ports, with
// nothing published.
func StartReleaseServer(opts ReleaseServerOptions) (*ReleaseServer, error) {
	ca := opts.CA
	if ca == nil {
		var err error
		if ca, err = NewCA("release-server-ca"); err != nil {
			return nil, &ComponentError{Component: "release server", Cause: err}
		}
	}
	s := &ReleaseServer{
		CACertPEM:  ca.CertPEM(),
		token:      opts.Token,
		signingKey: make([]byte, 32),
		repos:      map[string]*releaseRepo{},
		blobs:      map[string]*releaseAsset{},
	}
	if _, err := rand.Read(s.signingKey); err != nil {
		return nil, &ComponentError{Component: "release server", Cause: err}
	}
	originPort, err := freePort()
	if err != nil {
		return nil, &ComponentError{Component: "release server", Cause: err}
	}
	downloadPort, err := freePort()
	if err != nil {
		return nil, &ComponentError{Component: "release server", Cause: err}
	}
	s.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort))
	s.DownloadHost = net.JoinHostPort("localhost", strconv.Itoa(downloadPort))
	s.origin = releaseHost{addr: s.Host, gate: &gate{next: http.HandlerFunc(s.serveOrigin)}}
	s.origin.handler = s.recorded(s.Host, s.origin.gate)
	s.download = releaseHost{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(downloadPort)), gate: &gate{next: http.HandlerFunc(s.serveDownload)}}
	s.download.handler = s.recorded(s.DownloadHost, s.download.gate)
	for _, h := range []*releaseHost{&s.origin, &s.download} {
		pair, err := ca.servingCertificate()
		if err != nil {
			return nil, &ComponentError{Component: "release server", Cause: err}
		}
		h.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		if err := h.start(); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// start serves h on its address, unless it runs.
func (h *releaseHost) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return &ComponentError{Component: "release server", Cause: errors.New("it was closed; start a new one")}
	}
	if h.server != nil {
		return nil
	}
	l, err := net.Listen("tcp", h.addr)
	if err != nil {
		return &ComponentError{Component: "release server", Cause: err}
	}
	// ErrorLog discards the TLS handshake errors of clients that distrust
	// the CA, which tests cause on purpose.
	srv := &http.Server{Handler: h.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), TLSConfig: h.tls}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	h.server, h.listener = srv, l
	return nil
}

// stop closes the listener and every connection at once, as an outage.
func (h *releaseHost) stop() error {
	srv, l := h.take()
	if srv == nil {
		return nil
	}
	// The listener is closed here, not only by srv: a Stop right after
	// start may come before the serving goroutine took it, and a
	// connection accepted by the kernel meanwhile would be reset rather
	// than refused.
	_ = l.Close()
	if err := srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// close stops h for good, letting answered requests finish.
func (h *releaseHost) close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	srv, l := h.take()
	if srv == nil {
		return nil
	}
	_ = l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// take is the running server and its listener, which are no longer h's.
func (h *releaseHost) take() (*http.Server, net.Listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	srv, l := h.server, h.listener
	h.server, h.listener = nil, nil
	return srv, l
}

// Publish adds the files of release tag of owner/repo, creating the
// repository and the release as needed. A file that exists is replaced, as
// a re-uploaded asset: new bytes, a new ETag, a new download URL.
func (s *ReleaseServer) Publish(owner, repo, tag string, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(owner, repo)
	assets := r.releases[tag]
	if assets == nil {
		assets = map[string]*releaseAsset{}
		r.releases[tag] = assets
	}
	for name, data := range files {
		if old := assets[name]; old != nil {
			delete(s.blobs, old.path)
		}
		id := newAssetID()
		sum := sha256.Sum256(append([]byte(id), data...))
		a := &releaseAsset{
			name: name,
			data: append([]byte(nil), data...),
			// Blob storage ETags look like "0x8DD4B2C6A1F3E57".
			etag:     `"0x8` + strings.ToUpper(hex.EncodeToString(sum[:8]))[:15] + `"`,
			modified: time.Now().UTC().Truncate(time.Second),
			path:     assetPathPrefix + strconv.Itoa(r.id) + "/" + id,
		}
		assets[name] = a
		s.blobs[a.path] = a
	}
}

// repoLocked is owner/repo, created empty when missing; s.mu is held.
func (s *ReleaseServer) repoLocked(owner, repo string) *releaseRepo {
	key := strings.ToLower(owner + "/" + repo)
	r := s.repos[key]
	if r == nil {
		r = &releaseRepo{id: 700000000 + len(s.repos), releases: map[string]map[string]*releaseAsset{}, redirects: map[string]string{}}
		s.repos[key] = r
	}
	return r
}

// Private makes owner/repo a private repository whose token is token:
// the origin answers its paths only to requests carrying it (as
// ReleaseServerOptions.Token, in place of the server's Token), and 404 to
// any other request, with or without credentials, as GitHub hides a
// private repository. The repository is created when missing.
func (s *ReleaseServer) Private(owner, repo, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(owner, repo).token = token
}

// Redirect makes the origin answer the download link of file in release
// tag of owner/repo (and clusterctl's form of it, which leads there) with
// 302 Found to location instead of a signed URL on the download host,
// whether or not the file is published; "" restores the download host.
func (s *ReleaseServer) Redirect(owner, repo, tag, file, location string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(owner, repo)
	if location == "" {
		delete(r.redirects, tag+"/"+file)
		return
	}
	r.redirects[tag+"/"+file] = location
}

// PublishDir publishes every regular file of dir (not its subdirectories)
// as the assets of release tag of owner/repo.
func (s *ReleaseServer) PublishDir(owner, repo, tag, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("publishing release %s of %s/%s: %w", tag, owner, repo, err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("publishing release %s of %s/%s: %w", tag, owner, repo, err)
		}
		files[e.Name()] = data
	}
	if len(files) == 0 {
		return fmt.Errorf("publishing release %s of %s/%s: %s holds no regular file", tag, owner, repo, dir)
	}
	s.Publish(owner, repo, tag, files)
	return nil
}

// URL is the release file's URL in clusterctl's form,
// https://Host/{owner}/{repo}/releases/{tag}/{file}, as clusterctl's
// provider list names GitHub releases (tag may be "latest").
func (s *ReleaseServer) URL(owner, repo, tag, file string) string {
	return "https://" + s.Host + "/" + owner + "/" + repo + "/releases/" + tag + "/" + file
}

// DownloadURL is the release file's download link,
// https://Host/{owner}/{repo}/releases/download/{tag}/{file}, as GitHub
// shows it on a release page.
func (s *ReleaseServer) DownloadURL(owner, repo, tag, file string) string {
	return "https://" + s.Host + "/" + owner + "/" + repo + "/releases/download/" + tag + "/" + file
}

// Requests are the requests to either host since since, oldest first.
func (s *ReleaseServer) Requests(since time.Time) []ReleaseRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReleaseRequest
	for _, r := range s.requests {
		if !r.At.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// Stop takes both hosts off the network, as an outage does: connections
// are refused until Start. What is published is kept.
func (s *ReleaseServer) Stop() error {
	return errors.Join(s.origin.stop(), s.download.stop())
}

// Start serves a stopped server again, on the same hosts and ports.
func (s *ReleaseServer) Start() error {
	if err := s.origin.start(); err != nil {
		return err
	}
	return s.download.start()
}

// Hang makes both hosts accept connections and requests but answer none
// until Answer (a host that is overloaded or stuck behind a proxy).
// Clients that give up get nothing.
func (s *ReleaseServer) Hang() {
	s.origin.gate.hang()
	s.download.gate.hang()
}

// Answer ends Hang: requests waiting are answered, new ones too.
func (s *ReleaseServer) Answer() {
	s.origin.gate.answer()
	s.download.gate.answer()
}

// Close stops both hosts for good.
func (s *ReleaseServer) Close() error {
	s.Answer()
	return errors.Join(s.origin.close(), s.download.close())
}

// ManagerSettings are the manager arguments and environment that make it
// take the stand-in for github.com, as a manager that reaches GitHub
// would take GitHub: the mirror rule github.com=https://<Host>, the
// stand-in's download host allowed as a redirect target, and its CA
// trusted (written to dir/release-ca.pem, named by SSL_CERT_FILE).
func (s *ReleaseServer) ManagerSettings(dir string) (args, env []string, err error) {
	caFile, err := s.WriteCA(dir)
	if err != nil {
		return nil, nil, err
	}
	return []string{
		"--registry-mirror=github.com=https://" + s.Host,
		"--release-redirect-host=" + s.DownloadHost,
	}, []string{"SSL_CERT_FILE=" + caFile}, nil
}

// WriteCA writes the stand-in's certificate authority to
// dir/release-ca.pem, for a client that trusts it as it trusts GitHub's,
// and returns the file's path.
func (s *ReleaseServer) WriteCA(dir string) (string, error) {
	caFile := filepath.Join(dir, "release-ca.pem")
	return caFile, os.WriteFile(caFile, s.CACertPEM, 0o600)
}

// StartFixtureReleases starts a stand-in for github.com serving the real
// releases make fixtures rendered into binDir/fixtures (PublishFixtures).
func StartFixtureReleases(binDir string) (*ReleaseServer, error) {
	s, err := StartReleaseServer(ReleaseServerOptions{})
	if err != nil {
		return nil, err
	}
	if err := s.PublishFixtures(binDir); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}
