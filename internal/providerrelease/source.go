package providerrelease

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/capwright/capwright/internal/clusterctl"
)

// Kind is the kind of host a release URL points to.
type Kind string

const (
	// GitHub is a github.com release:
	// https://github.com/{owner}/{repo}/releases/{latest|TAG}/{file}.
	GitHub Kind = "GitHub"
	// GitLab is a GitLab generic package:
	// https://{host}/api/v4/projects/{project}/packages/generic/{package}/{latest|TAG}/{file}.
	GitLab Kind = "GitLab"
	// Plain is any other HTTPS location serving {TAG}/metadata.yaml and
	// {TAG}/{components file} under a base URL.
	Plain Kind = "HTTPS"
)

// Latest is clusterctl's placeholder for the newest release in a URL. It is
// accepted in a URL, never as the version to fetch.
const Latest = "latest"

// MetadataFile is the release's clusterctl metadata file.
const MetadataFile = "metadata.yaml"

// urlForms lists the accepted forms, for error messages.
const urlForms = "give https://github.com/{owner}/{repo}/releases/{latest|TAG}/{type}-components.yaml (clusterctl's form), " +
	"https://{host}/api/v4/projects/{project}/packages/generic/{package}/{latest|TAG}/{type}-components.yaml (a GitLab generic package), " +
	"or an HTTPS base URL under which {TAG}/metadata.yaml and {TAG}/{type}-components.yaml are served"

// versionLike matches the version segment of a plain URL: a tag such as
// v1.14.2 (or 1.14.2).
var versionLike = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+`)

// Source is a parsed release URL.
type Source struct {
	// URL is the URL as given (normalized).
	URL  string
	Kind Kind
	// Scheme is https, or http when plain HTTP was allowed.
	Scheme string
	// Host is host[:port].
	Host string
	// Owner and Repository of a GitHub release.
	Owner, Repository string
	// Project (as escaped in the URL: an ID or group%2Fproject) and Package
	// of a GitLab generic package.
	Project, Package string
	// Version is the version the URL names: Latest, a tag, or "" for a
	// base URL.
	Version string
	// ComponentsPath is the components file the URL names, or "" when it
	// names none (the type's {type}-components.yaml is then fetched).
	ComponentsPath string

	// prefix is the URL the version and file name are appended to.
	prefix string
	fields Fields
}

// URLOptions tune ParseURLWith.
type URLOptions struct {
	// AllowPlainHTTP accepts http:// URLs.
	AllowPlainHTTP bool
	// Fields names the settings in error messages.
	Fields Fields
}

// ParseURL parses a release URL in one of clusterctl's forms (see Kind);
// http:// is refused. Errors are *Error with ReasonInvalidURL.
func ParseURL(raw string) (Source, error) {
	return ParseURLWith(raw, URLOptions{})
}

// ParseURLWith is ParseURL with options.
func ParseURLWith(raw string, o URLOptions) (Source, error) {
	fields := o.Fields.or()
	raw = strings.TrimSpace(raw)
	invalid := func(hint, format string, args ...any) (Source, error) {
		return Source{}, newError(ReasonInvalidURL, raw, hint, format, args...)
	}
	if raw == "" {
		return invalid(urlForms, "the release URL (%s) is empty", fields.URL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return invalid(urlForms, "release URL %q is not a URL", raw)
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "https" && scheme != "http" {
		return invalid("give an https:// URL (clusterctl's file:// repositories are for one machine: publish such files with `capwright publish DIR`)",
			"release URL %s has scheme %s", raw, u.Scheme)
	}
	if u.Host == "" || u.Opaque != "" {
		return invalid(urlForms, "release URL %q is not a URL", raw)
	}
	if u.User != nil {
		return Source{}, newError(ReasonInvalidURL, u.Redacted(),
			"remove them from the URL and give them with "+fields.Credentials,
			"release URL %s carries credentials", u.Redacted())
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	switch u.Scheme {
	case "https":
	case "http":
		if !o.AllowPlainHTTP {
			return invalid("use https://, or allow plain HTTP explicitly with "+fields.PlainHTTP+" (anyone on the path could then change the release)",
				"release URL %s is plain HTTP", raw)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return invalid("give the URL without ?query or #fragment: the file URLs are built from it", "release URL %s has a query or fragment", raw)
	}
	src := Source{URL: u.String(), Scheme: u.Scheme, Host: u.Host, fields: o.Fields}
	escaped := strings.Trim(u.EscapedPath(), "/")
	var segments []string
	if escaped != "" {
		segments = strings.Split(escaped, "/")
	}
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return invalid(urlForms, "release URL %s has an empty, . or .. path segment", raw)
		}
	}
	origin := u.Scheme + "://" + u.Host
	switch {
	case u.Hostname() == "github.com":
		return src.parseGitHub(origin, segments)
	case strings.HasPrefix(u.EscapedPath(), "/api/v4/projects/"):
		return src.parseGitLab(origin, segments)
	}
	return src.parsePlain(origin, segments)
}

// parseGitHub reads https://github.com/{owner}/{repo}/… in the forms
// releases/{latest|TAG}/{file} (clusterctl), releases/download/{TAG}/{file}
// and releases/latest/download/{file} (download links),
// releases/tag/{TAG} (a release page) and the bare repository.
func (s Source) parseGitHub(origin string, seg []string) (Source, error) {
	form := "a GitHub release URL has the form https://github.com/{owner}/{repo}/releases/{latest|TAG}/{type}-components.yaml, as in clusterctl's provider list"
	if len(seg) < 2 {
		return Source{}, newError(ReasonInvalidURL, s.URL, form, "release URL %s names no repository", s.URL)
	}
	s.Kind, s.Owner, s.Repository = GitHub, seg[0], seg[1]
	s.prefix = origin + "/" + seg[0] + "/" + seg[1] + "/releases/download"
	rest := seg[2:]
	switch {
	case len(rest) == 0 || (len(rest) == 1 && rest[0] == "releases"):
	case len(rest) == 3 && rest[0] == "releases" && rest[1] == "tag":
		s.Version = unescape(rest[2])
	case len(rest) == 4 && rest[0] == "releases" && rest[1] == "download":
		s.Version, s.ComponentsPath = unescape(rest[2]), unescape(rest[3])
	case len(rest) == 4 && rest[0] == "releases" && rest[1] == Latest && rest[2] == "download":
		s.Version, s.ComponentsPath = Latest, unescape(rest[3])
	case len(rest) == 3 && rest[0] == "releases" && rest[1] != "download" && rest[1] != "tag":
		s.Version, s.ComponentsPath = unescape(rest[1]), unescape(rest[2])
	default:
		return Source{}, newError(ReasonInvalidURL, s.URL, form, "release URL %s is not a GitHub release URL", s.URL)
	}
	return s, nil
}

// parseGitLab reads
// https://{host}/api/v4/projects/{project}/packages/generic/{package}[/{latest|TAG}/{file}].
func (s Source) parseGitLab(origin string, seg []string) (Source, error) {
	form := "a GitLab release URL has the form https://{host}/api/v4/projects/{project}/packages/generic/{package}/{latest|TAG}/{type}-components.yaml, as clusterctl reads it"
	if (len(seg) != 7 && len(seg) != 9) || seg[4] != "packages" || seg[5] != "generic" {
		return Source{}, newError(ReasonInvalidURL, s.URL, form, "release URL %s is not a GitLab generic package URL", s.URL)
	}
	s.Kind, s.Project, s.Package = GitLab, seg[3], unescape(seg[6])
	s.prefix = origin + "/" + strings.Join(seg[:7], "/")
	if len(seg) == 9 {
		s.Version, s.ComponentsPath = unescape(seg[7]), unescape(seg[8])
	}
	return s, nil
}

// parsePlain reads https://{host}/{path}/{latest|TAG}/{file}.yaml or the
// base https://{host}/{path}.
func (s Source) parsePlain(origin string, seg []string) (Source, error) {
	s.Kind = Plain
	n := len(seg)
	if n > 0 && (strings.HasSuffix(seg[n-1], ".yaml") || strings.HasSuffix(seg[n-1], ".yml")) {
		if n < 2 || (seg[n-2] != Latest && !versionLike.MatchString(seg[n-2])) {
			return Source{}, newError(ReasonInvalidURL, s.URL,
				"a plain HTTPS release URL has the form https://{host}/{path}/{latest|TAG}/{type}-components.yaml (the file in the version's directory, as clusterctl's local repositories), or is the base https://{host}/{path} under which {TAG}/metadata.yaml and {TAG}/{type}-components.yaml are served",
				"release URL %s names the file %s outside a version directory", s.URL, unescape(seg[n-1]))
		}
		s.Version, s.ComponentsPath = unescape(seg[n-2]), unescape(seg[n-1])
		seg = seg[:n-2]
	}
	s.prefix = origin
	if len(seg) > 0 {
		s.prefix += "/" + strings.Join(seg, "/")
	}
	return s, nil
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// ComponentsFile is the name of the components file to fetch: the one the
// URL names, else the type's {type}-components.yaml.
func (s Source) ComponentsFile(providerType string) string {
	if s.ComponentsPath != "" {
		return s.ComponentsPath
	}
	return clusterctl.ComponentsFile(providerType)
}

// ProjectURL is where the release comes from, for the artifact's source
// annotation: the GitHub repository, the GitLab project when the URL names
// it by path, else the URL's base.
func (s Source) ProjectURL() string {
	switch s.Kind {
	case GitHub:
		return "https://github.com/" + s.Owner + "/" + s.Repository
	case GitLab:
		if project := unescape(s.Project); strings.Contains(project, "/") {
			return s.Scheme + "://" + s.Host + "/" + project
		}
	}
	return s.prefix
}

// ReleasesPage is the page listing the project's releases, when known.
func (s Source) ReleasesPage() string {
	if s.Kind == GitHub {
		return s.ProjectURL() + "/releases"
	}
	return ""
}

// FileURL is the URL of one file (metadata.yaml, the components file) of
// version. version must be a release tag: "latest" is never resolved, and
// a version the URL names must agree. Errors are *Error with
// ReasonInvalidVersion.
func (s Source) FileURL(version, file string) (string, error) {
	if err := s.CheckVersion(version); err != nil {
		return "", err
	}
	if file == "" || strings.Contains(file, "/") || file == "." || file == ".." {
		return "", newError(ReasonInvalidURL, s.URL, "", "release file name %q is not a file name", file)
	}
	return s.prefix + "/" + url.PathEscape(version) + "/" + url.PathEscape(file), nil
}

// CheckVersion checks that version is a release tag the URL agrees with.
func (s Source) CheckVersion(version string) error {
	fields := s.fields.or()
	hint := fmt.Sprintf("set %s to a release tag, e.g. v1.14.2: Capwright fetches exactly the version named and never resolves %q", fields.Version, Latest)
	switch {
	case version == "":
		return newError(ReasonInvalidVersion, s.URL, hint, "no version given for the release at %s", s.URL)
	case strings.EqualFold(version, Latest):
		return newError(ReasonInvalidVersion, s.URL, hint, "version %q is not a release of %s", version, s.URL)
	}
	if v, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v")); err != nil || !strings.HasPrefix(version, "v") || v.Metadata() != "" {
		return newError(ReasonInvalidVersion, s.URL, hint+" (vMAJOR.MINOR.PATCH; pre-releases such as v1.15.0-rc.0 are fine)",
			"version %q (%s) is not a release tag", version, fields.Version)
	}
	if s.Version != "" && s.Version != Latest && s.Version != version {
		return newError(ReasonInvalidVersion, s.URL,
			fmt.Sprintf("write %q in the URL in place of %s (clusterctl's placeholder: %s picks the release), or make the two agree", Latest, s.Version, fields.Version),
			"release URL %s names version %s, but %s is %s", s.URL, s.Version, fields.Version, version)
	}
	return nil
}

// artifactName is the name a fetched file takes in the provider artifact:
// clusterctl's URL may name the components file otherwise (e.g.
// infrastructure-components-development.yaml of the Docker provider).
func artifactName(providerType, file string) string {
	if file == MetadataFile {
		return file
	}
	if name := clusterctl.ComponentsFile(providerType); name != "" {
		return name
	}
	return path.Base(file)
}
