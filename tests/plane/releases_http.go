package plane

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
)

// The two hosts' answers. What GitHub and its blob store send is followed
// where a client could tell the difference (status, Location, content
// types, the headers a download is checked with); the pages themselves are
// kept small.

// notFoundBody is github.com's answer to a missing release download: a
// bare "Not Found" (clients that do not check the status save it as the
// file).
const notFoundBody = "Not Found"

// blobError is blob storage's XML error document.
const blobError = `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s
RequestId:%s
Time:%s</Message></Error>`

// serveOrigin answers for github.com.
func (s *ReleaseServer) serveOrigin(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if s.token != "" && !s.authorized(req) {
		// GitHub hides a private repository: 404, never 401 or 403.
		notFound(w)
		return
	}
	seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(seg) < 4 || seg[2] != "releases" {
		notFound(w)
		return
	}
	owner, repo, rest := seg[0], seg[1], seg[3:]
	if token := s.repoToken(owner, repo); token != "" && !authorizedBy(req, token) {
		notFound(w)
		return
	}
	switch {
	case len(rest) == 3 && rest[0] == "download":
		// releases/download/{tag}/{file}: the download link.
		s.redirectToAsset(w, owner, repo, rest[1], rest[2])
	case len(rest) == 3 && rest[0] == "latest" && rest[1] == "download":
		// releases/latest/download/{file}: GitHub sends the client to the
		// latest release's download link first.
		s.redirectToLatest(w, owner, repo, rest[2])
	case len(rest) == 2 && rest[0] == "latest":
		// clusterctl's form for the latest release (see ReleaseServer).
		s.redirectToLatest(w, owner, repo, rest[1])
	case len(rest) == 2 && rest[0] != "download" && rest[0] != "tag":
		// clusterctl's form releases/{tag}/{file} (see ReleaseServer).
		found(w, "https://"+s.Host+"/"+owner+"/"+repo+"/releases/download/"+rest[0]+"/"+rest[1])
	default:
		notFound(w)
	}
}

// redirectToAsset sends the client to a signed download URL of the asset.
func (s *ReleaseServer) redirectToAsset(w http.ResponseWriter, owner, repo, tag, file string) {
	s.mu.Lock()
	var asset *releaseAsset
	var elsewhere string
	if r := s.repos[strings.ToLower(owner+"/"+repo)]; r != nil {
		asset, elsewhere = r.releases[tag][file], r.redirects[tag+"/"+file]
	}
	s.mu.Unlock()
	if elsewhere != "" {
		found(w, elsewhere)
		return
	}
	if asset == nil {
		notFound(w)
		return
	}
	found(w, "https://"+s.DownloadHost+asset.path+"?"+s.sign(asset, time.Now().Add(signedURLLifetime)))
}

// redirectToLatest sends the client to the download link of file in the
// newest release.
func (s *ReleaseServer) redirectToLatest(w http.ResponseWriter, owner, repo, file string) {
	s.mu.Lock()
	var latest *semver.Version
	var latestTag string
	if r := s.repos[strings.ToLower(owner+"/"+repo)]; r != nil {
		for tag := range r.releases {
			v, err := semver.NewVersion(tag)
			if err != nil || v.Prerelease() != "" {
				continue // GitHub's latest release is never a pre-release
			}
			if latest == nil || v.GreaterThan(latest) {
				latest, latestTag = v, tag
			}
		}
	}
	s.mu.Unlock()
	if latest == nil {
		notFound(w)
		return
	}
	found(w, "https://"+s.Host+"/"+owner+"/"+repo+"/releases/download/"+latestTag+"/"+file)
}

// repoToken is the token owner/repo answers to: its own (Private), or
// the server's.
func (s *ReleaseServer) repoToken(owner, repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repos[strings.ToLower(owner+"/"+repo)]; r != nil && r.token != "" {
		return r.token
	}
	return s.token
}

// authorized tells whether req carries the token of the repository its
// path names (repoToken), or the server's token for any other path.
func (s *ReleaseServer) authorized(req *http.Request) bool {
	token := s.token
	if seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/"); len(seg) >= 2 {
		token = s.repoToken(seg[0], seg[1])
	}
	return authorizedBy(req, token)
}

// authorizedBy tells whether req carries token.
func authorizedBy(req *http.Request, token string) bool {
	if token == "" {
		return false
	}
	got := ""
	if _, pass, ok := req.BasicAuth(); ok {
		got = pass
	} else if scheme, cred, ok := strings.Cut(req.Header.Get("Authorization"), " "); ok && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "token")) {
		got = cred
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// serveDownload answers for the asset host: only signed, unexpired URLs of
// assets that are still published.
func (s *ReleaseServer) serveDownload(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		blobFailure(w, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.")
		return
	}
	s.mu.Lock()
	asset := s.blobs[req.URL.Path]
	s.mu.Unlock()
	if asset == nil {
		blobFailure(w, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
		return
	}
	q := req.URL.Query()
	expiry, err := time.Parse(time.RFC3339, q.Get("se"))
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(s.signature(asset, q.Get("se")))) {
		blobFailure(w, http.StatusForbidden, "AuthenticationFailed", "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.")
		return
	}
	if time.Now().After(expiry) {
		blobFailure(w, http.StatusForbidden, "AuthenticationFailed", "Server failed to authenticate the request. Signed expiry time ["+q.Get("se")+"] must be after signed start time.")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", "attachment; filename="+asset.name)
	w.Header().Set("ETag", asset.etag)
	w.Header().Set("x-ms-blob-type", "BlockBlob")
	// ServeContent adds Content-Length, Last-Modified and Accept-Ranges and
	// answers HEAD, ranges and If-None-Match / If-Modified-Since.
	http.ServeContent(w, req, asset.name, asset.modified, bytes.NewReader(asset.data))
}

// sign is the query of a download URL of asset valid until expiry, shaped
// as GitHub's (a blob-store shared access signature): the response headers
// it asks for, the expiry and a signature over both.
func (s *ReleaseServer) sign(asset *releaseAsset, expiry time.Time) string {
	se := expiry.UTC().Format(time.RFC3339)
	q := url.Values{
		"sp":   {"r"},
		"sv":   {blobVersion},
		"sr":   {"b"},
		"spr":  {"https"},
		"se":   {se},
		"rscd": {"attachment; filename=" + asset.name},
		"rsct": {"application/octet-stream"},
		"sig":  {s.signature(asset, se)},
	}
	return q.Encode()
}

// signature signs an asset's download path and expiry with the server's
// key.
func (s *ReleaseServer) signature(asset *releaseAsset, se string) string {
	mac := hmac.New(sha256.New, s.signingKey)
	_, _ = io.WriteString(mac, asset.path+"\n"+se)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// found answers 302 Found to location, as github.com does: an HTML
// content type and no body.
func found(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusFound)
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(notFoundBody)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, notFoundBody)
}

func blobFailure(w http.ResponseWriter, status int, code, message string) {
	body := fmt.Sprintf(blobError, code, message, newAssetID(), time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z"))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// newAssetID is a random UUID, as GitHub names the blobs of its assets.
func newAssetID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// recorded logs every request to host, without its credentials or query,
// and the status it was answered with.
func (s *ReleaseServer) recorded(host string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		entry := ReleaseRequest{
			Host:        host,
			Method:      req.Method,
			Path:        req.URL.Path,
			At:          time.Now(),
			Credentials: req.Header.Get("Authorization") != "",
		}
		if host == s.Host {
			entry.Authorized = s.authorized(req)
		}
		s.mu.Lock()
		index := -1
		if len(s.requests) < maxReleaseRequests {
			index = len(s.requests)
			s.requests = append(s.requests, entry)
		}
		s.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, req)
		// A request that Hang held until its client gave up was never
		// answered: its status stays 0.
		if index >= 0 {
			s.mu.Lock()
			s.requests[index].Status = sw.status
			s.mu.Unlock()
		}
	})
}

// statusWriter keeps the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}
