package providerrelease

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxSize bounds the release files together when Fetcher sets no
// limit; the same default as the provider artifacts of a registry.
const DefaultMaxSize int64 = 64 << 20

// DefaultTimeout bounds one Fetch when Fetcher sets no timeout.
const DefaultTimeout = 2 * time.Minute

// maxRedirects bounds a redirect chain.
const maxRedirects = 5

// githubDownloadHosts are where github.com redirects release downloads.
var githubDownloadHosts = map[string]bool{
	"github.com":                           true,
	"objects.githubusercontent.com":        true,
	"release-assets.githubusercontent.com": true,
}

// DefaultRedirectHosts allows the redirects of github.com to its download
// hosts. The same host is always allowed, before the rules are asked.
func DefaultRedirectHosts(from, to string) bool {
	return hostname(from) == "github.com" && githubDownloadHosts[hostname(to)]
}

// AllowHosts returns rules allowing the defaults and redirects to any of
// hosts (host or host:port).
func AllowHosts(hosts ...string) func(from, to string) bool {
	return func(from, to string) bool {
		if DefaultRedirectHosts(from, to) {
			return true
		}
		for _, h := range hosts {
			h = strings.ToLower(h)
			if h == strings.ToLower(to) || (!strings.Contains(h, ":") && h == hostname(to)) {
				return true
			}
		}
		return false
	}
}

// hostname drops the port of host[:port].
func hostname(host string) string {
	return strings.ToLower((&url.URL{Host: host}).Hostname())
}

// Auth is the credentials for the release URL's host: a bearer token, or
// basic auth. They are sent to that host only, never after a redirect to
// another, and never printed.
type Auth struct {
	BearerToken        string
	Username, Password string
}

func (a Auth) set() bool { return a.BearerToken != "" || a.Username != "" || a.Password != "" }

// describe says which credentials were sent, without them.
func (a Auth) describe() string {
	switch {
	case a.BearerToken != "":
		return "a bearer token"
	case a.Username != "" || a.Password != "":
		return fmt.Sprintf("basic auth for user %q", a.Username)
	}
	return "no credentials"
}

func (a Auth) String() string { return a.describe() }

// Fetcher reads provider releases over HTTPS. The zero value is usable.
type Fetcher struct {
	// Transport sends the requests; nil builds one from RootCAs and
	// InsecureSkipVerify, with the proxy from the environment.
	Transport http.RoundTripper
	// RootCAs trusts the hosts' certificates; nil means the system's.
	RootCAs *x509.CertPool
	// InsecureSkipVerify accepts any TLS certificate (testing only).
	InsecureSkipVerify bool
	// Timeout bounds one Fetch; 0 means DefaultTimeout.
	Timeout time.Duration
	// Auth is sent to the release URL's host only.
	Auth Auth
	// MaxSize bounds the release files together; 0 means DefaultMaxSize.
	MaxSize int64
	// AllowedRedirectHosts tells whether a redirect from one host to
	// another may be followed; nil means DefaultRedirectHosts. The same
	// host is always allowed; HTTPS to plain HTTP never is.
	AllowedRedirectHosts func(from, to string) bool
	// AllowPlainHTTP accepts http:// release URLs.
	AllowPlainHTTP bool
	// UserAgent of the requests.
	UserAgent string
	// Rewrite, when set, maps each file URL before it is requested: the
	// manager's mirror rules sending a release host to an internal
	// mirror. Auth then goes to the mirror's host, the first one asked.
	// A plain http:// URL it returns is the operator's own choice and is
	// allowed.
	Rewrite func(fileURL string) string
	// Fields names the settings in error messages.
	Fields Fields
}

// File is one fetched release file.
type File struct {
	// Name in the provider artifact: metadata.yaml or {type}-components.yaml.
	Name string
	// URL requested.
	URL string
	// FetchedFrom is the URL the content came from, after redirects,
	// without its query (download hosts sign URLs in it).
	FetchedFrom string
	// SHA256 is "sha256:<hex>" of Data.
	SHA256 string
	Data   []byte
}

// Release is a fetched provider release: exactly metadata.yaml and the
// components file of one version.
type Release struct {
	Source  Source
	Type    string
	Version string
	// Contract is the Cluster API contract metadata.yaml maps the version to.
	Contract   string
	Metadata   File
	Components File
}

// Files are the release files by their name in the provider artifact.
func (r *Release) Files() map[string][]byte {
	return map[string][]byte{r.Metadata.Name: r.Metadata.Data, r.Components.Name: r.Components.Data}
}

// Fetch GETs metadata.yaml of version, checks that it maps the version to
// a contract, then GETs the components file of providerType. Errors are
// *Error.
func (f *Fetcher) Fetch(ctx context.Context, src Source, version, providerType string) (*Release, error) {
	fields := f.Fields.or()
	src.fields = f.Fields
	if src.Scheme == "http" && !f.AllowPlainHTTP {
		return nil, newError(ReasonInvalidURL, src.URL, "use https://, or allow plain HTTP explicitly with "+fields.PlainHTTP,
			"release URL %s is plain HTTP", src.URL)
	}
	componentsFile := src.ComponentsFile(providerType)
	if componentsFile == "" {
		return nil, newError(ReasonInvalidRelease, src.URL, "use one of core, bootstrap, control-plane, infrastructure, ipam, runtime-extension, addon",
			"provider type %q is not a clusterctl provider type", providerType)
	}
	metadataURL, err := src.FileURL(version, MetadataFile)
	if err != nil {
		return nil, err
	}
	componentsURL, err := src.FileURL(version, componentsFile)
	if err != nil {
		return nil, err
	}
	scheme, host := src.Scheme, src.Host
	if f.Rewrite != nil {
		metadataURL, componentsURL = f.Rewrite(metadataURL), f.Rewrite(componentsURL)
		u, err := url.Parse(metadataURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, newError(ReasonInvalidURL, metadataURL, "check the manager's mirror rules for this release's host", "the mirror rules rewrite %s to %s, which is not an http(s) URL", src.URL, metadataURL)
		}
		scheme, host = u.Scheme, u.Host
	}
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	g := f.newGetter(fields, src, scheme, host)
	r := &Release{Source: src, Type: providerType, Version: version}
	if r.Metadata, err = g.get(ctx, metadataURL, MetadataFile, func(status string) *Error {
		versionHint := fields.Version + " against the project's releases"
		if page := src.ReleasesPage(); page != "" {
			versionHint += " at " + page
		}
		// GitHub answers 404, not 401, for a private project's files to
		// a request without credentials it accepts: the 404 cannot tell
		// an unreleased version from refused credentials.
		if f.Auth.set() {
			return newError(ReasonNotReleased, metadataURL,
				fmt.Sprintf("check the credentials in %s and that they may read this project's releases, and %s", fields.Credentials, versionHint),
				"version %s was never released at %s (%s), or the host does not accept the credentials sent (%s): hosts such as GitHub answer 404 to them for a private project",
				version, metadataURL, status, f.Auth.describe())
		}
		return newError(ReasonNotReleased, metadataURL,
			fmt.Sprintf("check %s; if the project's releases are private (hosts such as GitHub then answer 404 without credentials), give credentials with %s", versionHint, fields.Credentials),
			"version %s was never released at %s (%s)", version, metadataURL, status)
	}); err != nil {
		return nil, err
	}
	if r.Contract, err = checkMetadata(r.Metadata, version); err != nil {
		return nil, err
	}
	if r.Components, err = g.get(ctx, componentsURL, artifactName(providerType, componentsFile), func(status string) *Error {
		return newError(ReasonNotReleased, componentsURL,
			fmt.Sprintf("check the provider type (%s) and the components file the URL names (%s)", providerType, fields.URL),
			"the release %s has no %s: %s answered %s, while its %s is there", version, componentsFile, componentsURL, status, MetadataFile)
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// getter GETs the files of one release within one byte budget.
type getter struct {
	f           *Fetcher
	fields      Fields
	src         Source
	client      *http.Client
	limit, left int64
}

func (g *getter) get(ctx context.Context, fileURL, name string, notFound func(status string) *Error) (File, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fileURL, http.NoBody)
	if err != nil {
		return File{}, newError(ReasonInvalidURL, fileURL, "", "release file URL %s: %v", fileURL, err)
	}
	req.Header.Set("Accept", "application/octet-stream, application/yaml, text/plain, */*")
	if g.f.UserAgent != "" {
		req.Header.Set("User-Agent", g.f.UserAgent)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return File{}, g.transportError(fileURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	final := withoutQuery(resp.Request.URL)
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if final != fileURL {
		status += " from " + final
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return File{}, notFound(status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if g.f.Auth.set() {
			return File{}, newError(ReasonUnauthorized, fileURL,
				fmt.Sprintf("check the credentials in %s and that they may read this project's releases", g.fields.Credentials),
				"%s answered %s: the host refused the credentials sent (%s)", fileURL, status, g.f.Auth.describe())
		}
		return File{}, newError(ReasonUnauthorized, fileURL,
			fmt.Sprintf("give a token or basic auth with %s", g.fields.Credentials),
			"%s answered %s: the host requires credentials", fileURL, status)
	case resp.StatusCode == http.StatusTooManyRequests:
		return File{}, newError(ReasonHTTPError, fileURL, "retry later, or give credentials ("+g.fields.Credentials+"), which hosts usually allow more requests",
			"%s answered %s: the host limits the rate of requests", fileURL, status)
	case resp.StatusCode != http.StatusOK:
		return File{}, newError(ReasonHTTPError, fileURL, "check the URL, or retry later if the host is failing", "%s answered %s", fileURL, status)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "text/html" || mediaType == "application/xhtml+xml" {
		return File{}, g.htmlError(fileURL, "Content-Type "+mediaType)
	}
	if resp.ContentLength > g.left {
		return File{}, g.tooLarge(fileURL, fmt.Sprintf("its Content-Length is %d bytes", resp.ContentLength))
	}
	// One byte over the budget tells "exactly at the limit" from "beyond".
	data, err := io.ReadAll(io.LimitReader(resp.Body, g.left+1))
	if err != nil {
		return File{}, g.transportError(fileURL, err)
	}
	if int64(len(data)) > g.left {
		return File{}, g.tooLarge(fileURL, "it is larger")
	}
	g.left -= int64(len(data))
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if bytes.HasPrefix(trimmed, []byte("<")) {
		return File{}, g.htmlError(fileURL, "its body starts with <")
	}
	if mediaType == "application/json" || mediaType == "application/problem+json" {
		var body map[string]any
		if json.Unmarshal(data, &body) == nil && (body["message"] != nil || body["error"] != nil) {
			return File{}, newError(ReasonNotYAML, fileURL,
				"check the URL and the credentials ("+g.fields.Credentials+")",
				"%s answered with a JSON error response instead of YAML: %s", fileURL, shorten(string(bytes.TrimSpace(data))))
		}
	}
	sum := sha256.Sum256(data)
	return File{Name: name, URL: fileURL, FetchedFrom: final, SHA256: "sha256:" + hex.EncodeToString(sum[:]), Data: data}, nil
}

func (g *getter) tooLarge(fileURL, why string) *Error {
	return newError(ReasonTooLarge, fileURL,
		fmt.Sprintf("provider releases hold a few MiB of YAML; raise %s if this release is really that large", g.fields.MaxSize),
		"%s does not fit the size limit of %d bytes for the release files together (%d bytes left for it): %s",
		fileURL, g.limit, g.left, why)
}

func (g *getter) htmlError(fileURL, why string) *Error {
	return newError(ReasonNotYAML, fileURL,
		"check the URL: it must name the release file itself, not a web page (a login page means the host wants credentials: "+g.fields.Credentials+")",
		"%s answered with an HTML page, not the release's YAML (%s)", fileURL, why)
}

// transportError wraps a failed request: a refused redirect, TLS, network.
func (g *getter) transportError(fileURL string, err error) error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		verify    *tls.CertificateVerificationError
		recordHdr tls.RecordHeaderError
	)
	hint := "check that the host is reachable from here (HTTPS_PROXY and NO_PROXY are honoured)"
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &verify):
		hint = "trust the host's certificate authority with " + g.fields.CA
	case errors.As(err, &hostErr):
		hint = "the host's certificate is not valid for its name: check the URL's host"
	case errors.As(err, &recordHdr):
		hint = "the host does not speak TLS: check the URL"
	case errors.Is(err, context.DeadlineExceeded):
		hint = "the host did not answer in time: check that it serves and that the network path from here reaches it (HTTPS_PROXY and NO_PROXY are honoured), or retry later"
	}
	// *url.Error repeats the URL, with its query: keep the cause only.
	var uerr *url.Error
	cause := err
	if errors.As(err, &uerr) {
		cause = uerr.Err
	}
	return &Error{Reason: ReasonUnreachable, URL: fileURL, Problem: fmt.Sprintf("fetching %s: %v", fileURL, cause), Hint: hint, Err: err}
}

// client builds the HTTP client for one release: credentials only to the
// host first asked (scheme://host), redirects by the rules; plainHTTP
// allows redirects between http:// URLs.
func (f *Fetcher) client(scheme, host string, plainHTTP bool) *http.Client {
	base := f.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{
			RootCAs:            f.RootCAs,
			InsecureSkipVerify: f.InsecureSkipVerify, //nolint:gosec // explicit opt-in, for testing only
			MinVersion:         tls.VersionTLS12,
		}
		base = t
	}
	allowed := f.AllowedRedirectHosts
	if allowed == nil {
		allowed = DefaultRedirectHosts
	}
	fields := f.Fields.or()
	return &http.Client{
		Transport: &authTransport{base: base, scheme: scheme, host: host, auth: f.Auth},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first, prev, to := via[0].URL, via[len(via)-1].URL, req.URL
			from := withoutQuery(first)
			if len(via) >= maxRedirects {
				return newError(ReasonRedirectRefused, from, "check the URL", "%s redirects more than %d times", from, maxRedirects)
			}
			if to.Scheme != "https" && (to.Scheme != "http" || prev.Scheme != "http" || (!f.AllowPlainHTTP && !plainHTTP)) {
				return newError(ReasonRedirectRefused, from, "the release must stay on HTTPS: check the URL or the host's configuration",
					"%s redirects to %s, refused", from, withoutQuery(to))
			}
			if strings.EqualFold(to.Host, prev.Host) || allowed(prev.Host, to.Host) {
				return nil
			}
			return newError(ReasonRedirectRefused, from,
				fmt.Sprintf("if %s is the project's download host, allow it with %s; otherwise check the URL", to.Host, fields.RedirectHosts),
				"%s redirects to %s, a host the redirect rules do not allow", from, withoutQuery(to))
		},
	}
}

// authTransport adds the credentials to requests for the release URL's own
// scheme and host only: a redirect to another host never carries them,
// whatever net/http would forward.
type authTransport struct {
	base         http.RoundTripper
	scheme, host string
	auth         Auth
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Del("Authorization")
	if t.auth.set() && req.URL.Scheme == t.scheme && strings.EqualFold(req.URL.Host, t.host) {
		if t.auth.BearerToken != "" {
			req.Header.Set("Authorization", "Bearer "+t.auth.BearerToken)
		} else {
			req.SetBasicAuth(t.auth.Username, t.auth.Password)
		}
	}
	return t.base.RoundTrip(req)
}

// withoutQuery is u without query and fragment: download hosts sign URLs in
// the query.
func withoutQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment, c.User = "", false, "", "", nil
	return c.String()
}

func shorten(s string) string {
	const limit = 200
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}

// withTimeout bounds a fetch by f.Timeout (DefaultTimeout when unset).
func (f *Fetcher) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

// newGetter fetches the files of src from scheme://host within f.MaxSize
// (DefaultMaxSize when unset) in all.
func (f *Fetcher) newGetter(fields Fields, src Source, scheme, host string) *getter {
	budget := f.MaxSize
	if budget <= 0 {
		budget = DefaultMaxSize
	}
	return &getter{f: f, fields: fields, src: src, client: f.client(scheme, host, scheme == "http"), limit: budget, left: budget}
}
