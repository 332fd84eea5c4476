package providerrelease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// latestURL is the link to metadata.yaml of the host's latest release:
// GitHub's releases/latest/download/{file}, which github.com answers with
// a redirect to the latest release's download link; {base}/latest/{file}
// for a plain HTTPS location (clusterctl's form of a local repository).
// GitLab's generic packages have no such link.
func (s Source) latestURL() (string, bool) {
	switch s.Kind {
	case GitHub:
		return strings.TrimSuffix(s.prefix, "/download") + "/" + Latest + "/download/" + MetadataFile, true
	case Plain:
		return s.prefix + "/" + Latest + "/" + MetadataFile, true
	}
	return "", false
}

// Latest is the version of the release host's latest release, as its link
// to the latest release's metadata.yaml redirects to it: one request, the
// redirect not followed, so nothing is downloaded. It never asks a host's
// API (GitHub allows 60 unauthenticated API requests an hour per address;
// release downloads have no such limit), and so learns only the latest
// release (GitHub's: the newest that is not a pre-release), not every
// version. The mirror rules (Rewrite) apply. Errors are *Error.
func (f *Fetcher) Latest(ctx context.Context, src Source) (string, error) {
	fields := f.Fields.or()
	latest, ok := src.latestURL()
	if !ok {
		return "", newError(ReasonInvalidURL, src.URL, "publish the provider's releases to an OCI repository (capwright publish or mirror) to have its newer versions listed",
			"the release host of %s has no link to its latest release (GitLab generic packages have none)", src.URL)
	}
	if f.Rewrite != nil {
		latest = f.Rewrite(latest)
	}
	u, err := url.Parse(latest)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", newError(ReasonInvalidURL, latest, "check the mirror rules for this release's host", "%s is not an http(s) URL", latest)
	}
	if u.Scheme == "http" && !f.AllowPlainHTTP && f.Rewrite == nil {
		return "", newError(ReasonInvalidURL, latest, "use https://, or allow plain HTTP explicitly with "+fields.PlainHTTP, "release URL %s is plain HTTP", latest)
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := f.client(u.Scheme, u.Host, u.Scheme == "http")
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	g := &getter{f: f, fields: fields, src: src, client: client}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, latest, http.NoBody)
	if err != nil {
		return "", newError(ReasonInvalidURL, latest, "", "release URL %s: %v", latest, err)
	}
	if f.UserAgent != "" {
		req.Header.Set("User-Agent", f.UserAgent)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", g.transportError(latest, err)
	}
	_ = resp.Body.Close()
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return "", newError(ReasonNotReleased, latest, "check the URL; if the project's releases are private, give credentials with "+fields.Credentials,
			"%s answered %s: the project has no latest release there", latest, status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", newError(ReasonUnauthorized, latest, "give or check the credentials in "+fields.Credentials, "%s answered %s", latest, status)
	case resp.StatusCode < 300 || resp.StatusCode >= 400:
		return "", newError(ReasonHTTPError, latest, "the host must answer the link to its latest release with a redirect to that release, as github.com does",
			"%s answered %s instead of a redirect naming the latest release", latest, status)
	}
	loc, err := resp.Location()
	if err != nil {
		return "", newError(ReasonHTTPError, latest, "", "%s answered %s without a valid Location: %v", latest, status, err)
	}
	version, err := versionFromDownloadLink(loc)
	if err != nil {
		return "", newError(ReasonHTTPError, latest, "the host must redirect to the latest release's own link ({TAG}/metadata.yaml), as github.com does", "%s redirects to %s: %v", latest, withoutQuery(loc), err)
	}
	return version, nil
}

// versionFromDownloadLink is TAG of a link …/{TAG}/metadata.yaml.
func versionFromDownloadLink(u *url.URL) (string, error) {
	segments := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	n := len(segments)
	if n < 2 || unescape(segments[n-1]) != MetadataFile {
		return "", errors.New("the link does not name metadata.yaml")
	}
	tag := unescape(segments[n-2])
	if !strings.HasPrefix(tag, "v") || !versionLike.MatchString(tag) {
		return "", fmt.Errorf("%q is not a release tag", tag)
	}
	return tag, nil
}

// Metadata GETs metadata.yaml of version alone, what an upgrade check needs
// of a release, and checks that it maps the version to a contract. A
// version the URL names is ignored: this is another release of the same
// project. Errors are *Error.
func (f *Fetcher) Metadata(ctx context.Context, src Source, version string) (File, error) {
	fields := f.Fields.or()
	src.fields = f.Fields
	src.Version = ""
	metadataURL, err := src.FileURL(version, MetadataFile)
	if err != nil {
		return File{}, err
	}
	scheme, host := src.Scheme, src.Host
	if f.Rewrite != nil {
		metadataURL = f.Rewrite(metadataURL)
		u, err := url.Parse(metadataURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return File{}, newError(ReasonInvalidURL, metadataURL, "check the mirror rules for this release's host", "%s is not an http(s) URL", metadataURL)
		}
		scheme, host = u.Scheme, u.Host
	} else if scheme == "http" && !f.AllowPlainHTTP {
		return File{}, newError(ReasonInvalidURL, src.URL, "use https://, or allow plain HTTP explicitly with "+fields.PlainHTTP, "release URL %s is plain HTTP", src.URL)
	}
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	g := f.newGetter(fields, src, scheme, host)
	file, err := g.get(ctx, metadataURL, MetadataFile, func(status string) *Error {
		return newError(ReasonNotReleased, metadataURL, "check the release on the host", "version %s has no %s at %s (%s)", version, MetadataFile, metadataURL, status)
	})
	if err != nil {
		return File{}, err
	}
	if _, err := checkMetadata(file, version); err != nil {
		return File{}, err
	}
	return file, nil
}
