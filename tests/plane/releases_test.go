package plane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The release server is proved over real HTTPS with clients that trust
// only its CA, as the manager will reach it.

// startReleaseServer starts a server for the test and a client that trusts
// its CA and follows redirects.
func startReleaseServer(t *testing.T, opts ReleaseServerOptions) (*ReleaseServer, *http.Client) {
	t.Helper()
	s, err := StartReleaseServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the release server: %v", err)
		}
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM) {
		t.Fatal("CACertPEM holds no certificate")
	}
	// No keep-alive: Stop must be seen by the next request, not hidden by
	// a pooled connection.
	transport := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, DisableKeepAlives: true}
	return s, &http.Client{Transport: transport, Timeout: 10 * time.Second}
}

// noRedirects is client answering each redirect to the caller.
func noRedirects(c *http.Client) *http.Client {
	return &http.Client{Transport: c.Transport, Timeout: c.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type fetched struct {
	resp *http.Response
	body []byte
}

func fetch(t *testing.T, c *http.Client, method, rawURL string, header http.Header) fetched {
	t.Helper()
	f, err := tryFetch(c, method, rawURL, header)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func tryFetch(c *http.Client, method, rawURL string, header http.Header) (fetched, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, rawURL, nil)
	if err != nil {
		return fetched{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return fetched{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return fetched{resp: resp, body: body}, err
}

func TestReleaseServerRedirectsToTheDownloadHost(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	components := []byte("kind: Namespace\n")
	s.Publish("acme", "cluster-api-provider-acme", "v1.10.0", map[string][]byte{
		"infrastructure-components.yaml": components,
		"metadata.yaml":                  []byte("kind: Metadata\n"),
	})
	s.Publish("acme", "cluster-api-provider-acme", "v1.9.0", map[string][]byte{"infrastructure-components.yaml": []byte("old\n")})
	s.Publish("acme", "cluster-api-provider-acme", "v1.11.0-rc.0", map[string][]byte{"infrastructure-components.yaml": []byte("candidate\n")})
	since := time.Now()

	// The first hop: 302 from the origin to a signed URL on the download
	// host.
	first := fetch(t, noRedirects(client), http.MethodGet, s.DownloadURL("acme", "cluster-api-provider-acme", "v1.10.0", "infrastructure-components.yaml"), nil)
	if first.resp.StatusCode != http.StatusFound {
		t.Fatalf("download link: %s, want 302 Found", first.resp.Status)
	}
	location, err := url.Parse(first.resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if location.Scheme != "https" || location.Host != s.DownloadHost || location.Query().Get("sig") == "" || location.Query().Get("se") == "" {
		t.Errorf("Location %s: want a signed https URL on the download host %s", location, s.DownloadHost)
	}

	// The whole chain, as a client follows it.
	got := fetch(t, client, http.MethodGet, s.DownloadURL("acme", "cluster-api-provider-acme", "v1.10.0", "infrastructure-components.yaml"), nil)
	if got.resp.StatusCode != http.StatusOK || !bytes.Equal(got.body, components) {
		t.Fatalf("following the download link: %s %q, want 200 with the published bytes", got.resp.Status, got.body)
	}
	if ct := got.resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q, want application/octet-stream", ct)
	}
	if got.resp.ContentLength != int64(len(components)) || got.resp.Header.Get("ETag") == "" {
		t.Errorf("Content-Length %d, ETag %q: want %d and an ETag", got.resp.ContentLength, got.resp.Header.Get("ETag"), len(components))
	}
	if got.resp.Request.URL.Host != s.DownloadHost {
		t.Errorf("the bytes came from %s, want the download host %s", got.resp.Request.URL.Host, s.DownloadHost)
	}

	// Requests sees both hops, without the signed query.
	reqs := s.Requests(since)
	want := []ReleaseRequest{
		{Host: s.Host, Method: http.MethodGet, Path: "/acme/cluster-api-provider-acme/releases/download/v1.10.0/infrastructure-components.yaml", Status: http.StatusFound},
		{Host: s.Host, Method: http.MethodGet, Path: "/acme/cluster-api-provider-acme/releases/download/v1.10.0/infrastructure-components.yaml", Status: http.StatusFound},
		{Host: s.DownloadHost, Method: http.MethodGet, Path: location.Path, Status: http.StatusOK},
	}
	if len(reqs) != len(want) {
		t.Fatalf("Requests: %+v, want %d requests (the first hop alone, then the chain)", reqs, len(want))
	}
	for i, w := range want {
		r := reqs[i]
		if r.Host != w.Host || r.Method != w.Method || r.Status != w.Status || (w.Path != "" && r.Path != w.Path) || strings.Contains(r.Path, "?") || r.At.Before(since) {
			t.Errorf("request %d: %+v, want %+v", i, r, w)
		}
	}
	if !strings.HasPrefix(reqs[2].Path, "/github-production-release-asset/") {
		t.Errorf("download path %q: want GitHub's blob path", reqs[2].Path)
	}

	// HEAD answers the same chain without the body.
	head := fetch(t, client, http.MethodHead, s.DownloadURL("acme", "cluster-api-provider-acme", "v1.10.0", "metadata.yaml"), nil)
	if head.resp.StatusCode != http.StatusOK || head.resp.ContentLength != int64(len("kind: Metadata\n")) || len(head.body) != 0 {
		t.Errorf("HEAD: %s, Content-Length %d, %d bytes of body", head.resp.Status, head.resp.ContentLength, len(head.body))
	}

	// clusterctl's form, and latest: the newest release by semantic
	// version (v1.10.0 after v1.9.0), never a pre-release.
	for _, u := range []string{
		s.URL("acme", "cluster-api-provider-acme", "v1.10.0", "infrastructure-components.yaml"),
		s.URL("acme", "cluster-api-provider-acme", "latest", "infrastructure-components.yaml"),
		"https://" + s.Host + "/acme/cluster-api-provider-acme/releases/latest/download/infrastructure-components.yaml",
		// GitHub matches owner and repository case-insensitively.
		s.DownloadURL("ACME", "Cluster-API-Provider-Acme", "v1.10.0", "infrastructure-components.yaml"),
	} {
		got := fetch(t, client, http.MethodGet, u, nil)
		if got.resp.StatusCode != http.StatusOK || !bytes.Equal(got.body, components) {
			t.Errorf("GET %s: %s %q, want the bytes of v1.10.0", u, got.resp.Status, got.body)
		}
	}
	latest := fetch(t, noRedirects(client), http.MethodGet, "https://"+s.Host+"/acme/cluster-api-provider-acme/releases/latest/download/metadata.yaml", nil)
	if want := s.DownloadURL("acme", "cluster-api-provider-acme", "v1.10.0", "metadata.yaml"); latest.resp.StatusCode != http.StatusFound || latest.resp.Header.Get("Location") != want {
		t.Errorf("latest: %s to %q, want 302 to the release's download link %s, as GitHub sends", latest.resp.Status, latest.resp.Header.Get("Location"), want)
	}
}

func TestReleaseServerNotFound(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")})
	s.Publish("acme", "candidates", "v2.0.0-beta.1", map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")})

	for name, u := range map[string]string{
		"missing asset":         s.DownloadURL("acme", "provider", "v1.0.0", "core-components.yaml"),
		"missing release":       s.DownloadURL("acme", "provider", "v1.0.1", "metadata.yaml"),
		"unknown repository":    s.DownloadURL("acme", "other", "v1.0.0", "metadata.yaml"),
		"unknown owner":         s.DownloadURL("someone", "provider", "v1.0.0", "metadata.yaml"),
		"clusterctl form":       s.URL("acme", "provider", "v1.0.1", "metadata.yaml"),
		"only pre-releases":     s.URL("acme", "candidates", "latest", "metadata.yaml"),
		"not a release path":    "https://" + s.Host + "/acme/provider",
		"release page (no API)": "https://" + s.Host + "/acme/provider/releases/tag/v1.0.0",
	} {
		got := fetch(t, client, http.MethodGet, u, nil)
		if got.resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(got.resp.Header.Get("Content-Type"), "text/html") || string(got.body) != "Not Found" {
			t.Errorf("%s (%s): %s %q %q, want 404 text/html \"Not Found\"", name, u, got.resp.Status, got.resp.Header.Get("Content-Type"), got.body)
		}
	}

	// The download host serves only the URLs the origin handed out.
	first := fetch(t, noRedirects(client), http.MethodGet, s.DownloadURL("acme", "provider", "v1.0.0", "metadata.yaml"), nil)
	handed, err := url.Parse(first.resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	unknown := *handed
	unknown.Path = "/github-production-release-asset/1/00000000-0000-4000-8000-000000000000"
	got := fetch(t, client, http.MethodGet, unknown.String(), nil)
	if got.resp.StatusCode != http.StatusNotFound || got.resp.Header.Get("Content-Type") != "application/xml" || !bytes.Contains(got.body, []byte("<Code>BlobNotFound</Code>")) {
		t.Errorf("unknown download path: %s %q %s, want 404 application/xml BlobNotFound", got.resp.Status, got.resp.Header.Get("Content-Type"), got.body)
	}
	unsigned := *handed
	q := unsigned.Query()
	q.Set("sig", "forged")
	unsigned.RawQuery = q.Encode()
	got = fetch(t, client, http.MethodGet, unsigned.String(), nil)
	if got.resp.StatusCode != http.StatusForbidden || got.resp.Header.Get("Content-Type") != "application/xml" || !bytes.Contains(got.body, []byte("<Code>AuthenticationFailed</Code>")) {
		t.Errorf("forged signature: %s %q %s, want 403 application/xml AuthenticationFailed", got.resp.Status, got.resp.Header.Get("Content-Type"), got.body)
	}
}

func TestReleaseServerReplacesAnAsset(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	u := s.DownloadURL("acme", "provider", "v1.0.0", "infrastructure-components.yaml")
	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{"infrastructure-components.yaml": []byte("first\n"), "metadata.yaml": []byte("kind: Metadata\n")})
	before := fetch(t, client, http.MethodGet, u, nil)
	oldLocation := fetch(t, noRedirects(client), http.MethodGet, u, nil).resp.Header.Get("Location")

	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{"infrastructure-components.yaml": []byte("second, re-uploaded\n")})
	after := fetch(t, client, http.MethodGet, u, nil)
	if string(before.body) != "first\n" || string(after.body) != "second, re-uploaded\n" {
		t.Errorf("bytes before and after the re-upload: %q, %q", before.body, after.body)
	}
	if before.resp.Header.Get("ETag") == after.resp.Header.Get("ETag") {
		t.Errorf("the ETag stayed %s across the re-upload", after.resp.Header.Get("ETag"))
	}
	// The replaced asset is gone, as on GitHub; the others stay.
	if got := fetch(t, client, http.MethodGet, oldLocation, nil); got.resp.StatusCode != http.StatusNotFound {
		t.Errorf("download URL of the replaced asset: %s, want 404", got.resp.Status)
	}
	if got := fetch(t, client, http.MethodGet, s.DownloadURL("acme", "provider", "v1.0.0", "metadata.yaml"), nil); string(got.body) != "kind: Metadata\n" {
		t.Errorf("metadata.yaml after the re-upload of another file: %s %q", got.resp.Status, got.body)
	}
	// The ETag answers a conditional request.
	etag := after.resp.Header.Get("ETag")
	if got := fetch(t, client, http.MethodGet, u, http.Header{"If-None-Match": {etag}}); got.resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %s, want 304", etag, got.resp.Status)
	}
}

func TestReleaseServerStopAndStart(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	u := s.URL("acme", "provider", "v1.0.0", "metadata.yaml")
	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := tryFetch(client, http.MethodGet, u, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("GET while stopped: %v, want connection refused", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if got := fetch(t, client, http.MethodGet, u, nil); got.resp.StatusCode != http.StatusOK || string(got.body) != "kind: Metadata\n" {
		t.Errorf("GET after Start: %s %q, want the published bytes", got.resp.Status, got.body)
	}
}

func TestReleaseServerHangs(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	u := s.URL("acme", "provider", "v1.0.0", "metadata.yaml")
	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")})
	since := time.Now()
	s.Hang()
	impatient := &http.Client{Transport: client.Transport, Timeout: 300 * time.Millisecond}
	if _, err := tryFetch(impatient, http.MethodGet, u, nil); err == nil || !strings.Contains(err.Error(), "Client.Timeout") {
		t.Fatalf("GET while hanging: %v, want the client's timeout", err)
	}

	// A patient client is answered once the server answers again.
	done := make(chan error, 1)
	go func() {
		got, err := tryFetch(client, http.MethodGet, u, nil)
		if err == nil && got.resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %s", got.resp.Status)
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a request was answered while hanging: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	s.Answer()
	if err := <-done; err != nil {
		t.Fatalf("GET after Answer: %v", err)
	}
	reqs := s.Requests(since)
	if len(reqs) != 4 || reqs[0].Status != 0 || reqs[1].Status != http.StatusFound || reqs[2].Status != http.StatusFound || reqs[3].Status != http.StatusOK {
		t.Errorf("Requests: %+v; want the abandoned request with status 0, then 302, 302 and 200", reqs)
	}
}

func TestReleaseServerRequiresTheToken(t *testing.T) {
	const token = "ghp_plane-test-token-0123456789"
	s, client := startReleaseServer(t, ReleaseServerOptions{Token: token})
	u := s.URL("acme", "private-provider", "v1.0.0", "metadata.yaml")
	s.Publish("acme", "private-provider", "v1.0.0", map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")})
	since := time.Now()
	basic := func(user, pass string) http.Header {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.SetBasicAuth(user, pass)
		return req.Header
	}
	for _, c := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no credentials", nil, http.StatusNotFound},
		{"a wrong token", http.Header{"Authorization": {"Bearer not-the-token"}}, http.StatusNotFound},
		{"a wrong password", basic("x-access-token", "not-the-token"), http.StatusNotFound},
		{"the bearer token", http.Header{"Authorization": {"Bearer " + token}}, http.StatusOK},
		{"the token as the basic-auth password", basic("x-access-token", token), http.StatusOK},
	} {
		got := fetch(t, client, http.MethodGet, u, c.header)
		if got.resp.StatusCode != c.want {
			t.Errorf("%s: %s, want %d", c.name, got.resp.Status, c.want)
		}
	}
	reqs := s.Requests(since)
	var origin, download []ReleaseRequest
	for _, r := range reqs {
		if strings.Contains(fmt.Sprintf("%#v", r), token) {
			t.Errorf("a request record holds the token: %+v", r)
		}
		if r.Host == s.Host {
			origin = append(origin, r)
		} else {
			download = append(download, r)
		}
	}
	// clusterctl's form redirects to the download link on the origin: two
	// origin requests for each accepted client.
	wantAuthorized := []bool{false, false, false, true, true, true, true}
	if len(origin) != len(wantAuthorized) {
		t.Fatalf("origin requests: %+v, want %d", origin, len(wantAuthorized))
	}
	for i, r := range origin {
		if r.Authorized != wantAuthorized[i] || r.Credentials != (i > 0) {
			t.Errorf("origin request %d: %+v; want Authorized %v, Credentials %v", i, r, wantAuthorized[i], i > 0)
		}
	}
	// The download host is another host name: Go's client drops the
	// credentials on the way there, and the signed URL needs none.
	if len(download) != 2 {
		t.Fatalf("download requests: %+v, want 2", download)
	}
	for _, r := range download {
		if r.Credentials || r.Authorized || r.Status != http.StatusOK {
			t.Errorf("download request %+v: want 200 without credentials", r)
		}
	}
}

// TestReleaseServerPublishesTheFixtures serves the real provider releases
// `make fixtures` renders and fetches components through the real
// clusterctl URLs, moved to the stand-in's host.
func TestReleaseServerPublishesTheFixtures(t *testing.T) {
	bin, err := DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "fixtures")); errors.Is(err, os.ErrNotExist) {
		t.Skipf("no fixtures in %s: run `make fixtures` at the repository root to render the provider releases", bin)
	}
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	if err := s.PublishFixtures(bin); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url, file string
	}{
		// clusterctl's provider list: https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml
		{s.URL("kubernetes-sigs", "cluster-api-provider-aws", "latest", "infrastructure-components.yaml"), filepath.Join("capa", CAPAVersion, "infrastructure-components.yaml")},
		{s.URL("kubernetes-sigs", "cluster-api-provider-aws", CAPAVersion, "metadata.yaml"), filepath.Join("capa", CAPAVersion, "metadata.yaml")},
		{s.URL("kubernetes-sigs", "cluster-api", CAPIVersion, "core-components.yaml"), filepath.Join("capi", CAPIVersion, "core-components.yaml")},
		{s.DownloadURL("kubernetes-sigs", "cluster-api", "v1.13.6", "control-plane-components.yaml"), filepath.Join("capi", "v1.13.6", "control-plane-components.yaml")},
	} {
		want, err := os.ReadFile(filepath.Join(bin, "fixtures", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got := fetch(t, client, http.MethodGet, c.url, nil)
		if got.resp.StatusCode != http.StatusOK || !bytes.Equal(got.body, want) {
			t.Errorf("GET %s: %s, %d bytes; want the %d bytes of bin/fixtures/%s", c.url, got.resp.Status, len(got.body), len(want), c.file)
		}
	}
	for _, fr := range FixtureReleases {
		for _, file := range fr.Files {
			u := s.URL(fr.Owner, fr.Repo, "latest", file)
			if got := fetch(t, client, http.MethodHead, u, nil); got.resp.StatusCode != http.StatusOK {
				t.Errorf("HEAD %s: %s", u, got.resp.Status)
			}
		}
	}
}

// TestReleaseServerPrivateRepository hides one repository of a public
// server from requests without its token, wrong tokens included, and
// leaves the others public.
func TestReleaseServerPrivateRepository(t *testing.T) {
	const token = "ghp_private-repository-token-0123"
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	files := map[string][]byte{"metadata.yaml": []byte("kind: Metadata\n")}
	s.Publish("acme", "private-provider", "v1.0.0", files)
	s.Publish("acme", "public-provider", "v1.0.0", files)
	s.Private("acme", "private-provider", token)
	private := s.URL("acme", "private-provider", "v1.0.0", "metadata.yaml")
	since := time.Now()
	for _, c := range []struct {
		name, url string
		header    http.Header
		want      int
	}{
		{"the private repository without credentials", private, nil, http.StatusNotFound},
		{"the private repository with a wrong token", private, http.Header{"Authorization": {"Bearer not-the-token"}}, http.StatusNotFound},
		{"the private repository's latest release with a wrong token", s.URL("acme", "private-provider", "latest", "metadata.yaml"), http.Header{"Authorization": {"Bearer not-the-token"}}, http.StatusNotFound},
		{"the private repository with its token", private, http.Header{"Authorization": {"Bearer " + token}}, http.StatusOK},
		{"the public repository without credentials", s.URL("acme", "public-provider", "v1.0.0", "metadata.yaml"), nil, http.StatusOK},
	} {
		got := fetch(t, client, http.MethodGet, c.url, c.header)
		if got.resp.StatusCode != c.want {
			t.Errorf("%s: %s, want %d", c.name, got.resp.Status, c.want)
		}
		if c.want == http.StatusNotFound && string(got.body) != notFoundBody {
			t.Errorf("%s: body %q, want GitHub's %q", c.name, got.body, notFoundBody)
		}
	}
	var authorized []bool
	for _, r := range s.Requests(since) {
		if r.Host == s.Host && strings.Contains(r.Path, "/private-provider/") {
			authorized = append(authorized, r.Authorized)
		}
	}
	// The accepted request reaches the origin twice (clusterctl's form,
	// then the download link).
	if want := []bool{false, false, false, true, true}; fmt.Sprint(authorized) != fmt.Sprint(want) {
		t.Errorf("Authorized of the private repository's origin requests: %v, want %v", authorized, want)
	}
}

// TestReleaseServerRedirectsElsewhere answers one file's download link
// with a redirect to another host, for clusterctl's form too, and only for
// that file; "" restores the download host.
func TestReleaseServerRedirectsElsewhere(t *testing.T) {
	s, client := startReleaseServer(t, ReleaseServerOptions{})
	s.Publish("acme", "provider", "v1.0.0", map[string][]byte{
		"metadata.yaml":                  []byte("kind: Metadata\n"),
		"infrastructure-components.yaml": []byte("kind: Namespace\n"),
	})
	const elsewhere = "https://downloads.example.net/acme/provider/v1.0.0/infrastructure-components.yaml"
	s.Redirect("acme", "provider", "v1.0.0", "infrastructure-components.yaml", elsewhere)
	follow := func(u string) string {
		t.Helper()
		for range 3 {
			got := fetch(t, noRedirects(client), http.MethodGet, u, nil)
			if got.resp.StatusCode != http.StatusFound {
				t.Fatalf("%s: %s, want 302 Found", u, got.resp.Status)
			}
			u = got.resp.Header.Get("Location")
			if !strings.HasPrefix(u, "https://"+s.Host+"/") {
				return u
			}
		}
		t.Fatalf("%s: the origin keeps redirecting to itself", u)
		return ""
	}
	for _, u := range []string{
		s.DownloadURL("acme", "provider", "v1.0.0", "infrastructure-components.yaml"),
		s.URL("acme", "provider", "v1.0.0", "infrastructure-components.yaml"),
		s.URL("acme", "provider", "latest", "infrastructure-components.yaml"),
	} {
		if got := follow(u); got != elsewhere {
			t.Errorf("%s leads to %s, want %s", u, got, elsewhere)
		}
	}
	if got := follow(s.URL("acme", "provider", "v1.0.0", "metadata.yaml")); !strings.HasPrefix(got, "https://"+s.DownloadHost+"/") {
		t.Errorf("metadata.yaml leads to %s, want the download host", got)
	}
	// A file never published is redirected too: the host answers for it.
	s.Redirect("acme", "provider", "v2.0.0", "metadata.yaml", elsewhere)
	if got := follow(s.DownloadURL("acme", "provider", "v2.0.0", "metadata.yaml")); got != elsewhere {
		t.Errorf("an unpublished file leads to %s, want %s", got, elsewhere)
	}
	s.Redirect("acme", "provider", "v1.0.0", "infrastructure-components.yaml", "")
	got := fetch(t, client, http.MethodGet, s.URL("acme", "provider", "v1.0.0", "infrastructure-components.yaml"), nil)
	if got.resp.StatusCode != http.StatusOK || string(got.body) != "kind: Namespace\n" || got.resp.Request.URL.Host != s.DownloadHost {
		t.Errorf("after Redirect with \"\": %s %q from %s, want the published file from the download host", got.resp.Status, got.body, got.resp.Request.URL.Host)
	}
}
