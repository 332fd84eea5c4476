package main

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/providerrelease"
)

// releaseOptions are the flags of publish --from-release.
type releaseOptions struct {
	from          string
	tokenEnv      string
	username      string
	passwordEnv   string
	caFile        string
	insecure      bool
	plainHTTP     bool
	redirectHosts []string
}

// releaseTransport, when set (by tests), sends the release requests.
var releaseTransport http.RoundTripper

// releaseFields names the CLI's flags in release errors.
var releaseFields = providerrelease.Fields{
	Version:       "--version",
	URL:           "--from-release",
	Credentials:   "--release-token-env (or --release-username and --release-password-env)",
	CA:            "--release-ca-file",
	PlainHTTP:     "--release-plain-http",
	MaxSize:       "--max-artifact-size",
	RedirectHosts: "--release-redirect-host",
}

func (o *releaseOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.from, "from-release", "", "fetch the release instead of reading files: a release URL in clusterctl's forms, or TYPE/NAME of clusterctl's well-known providers (e.g. infrastructure/aws)")
	f.StringVar(&o.tokenEnv, "release-token-env", "", "environment variable holding a bearer token for the release host (e.g. GITHUB_TOKEN); sent to the release URL's host only")
	f.StringVar(&o.username, "release-username", "", "user for basic auth to the release host, with --release-password-env")
	f.StringVar(&o.passwordEnv, "release-password-env", "", "environment variable holding the password (or deploy token) for basic auth to the release host")
	f.StringVar(&o.caFile, "release-ca-file", "", "PEM file of certificate authorities to trust for the release host, in addition to the system's")
	f.BoolVar(&o.insecure, "release-insecure-skip-tls-verify", false, "accept any TLS certificate of the release host: no verification, for testing only")
	f.BoolVar(&o.plainHTTP, "release-plain-http", false, "allow an http:// release URL")
	f.StringArrayVar(&o.redirectHosts, "release-redirect-host", nil, "also follow redirects to this HOST[:PORT] (repeatable); github.com's download hosts are always followed")
}

// resolve turns --from-release into a release source and fills --type and
// --name from it where they are not given.
func (o *releaseOptions) resolve(p *publishOptions) (providerrelease.Source, error) {
	raw := strings.TrimSpace(o.from)
	if !strings.Contains(raw, "://") {
		providerType, name, ok := strings.Cut(raw, "/")
		if !ok || providerType == "" || name == "" || strings.Contains(name, "/") {
			return providerrelease.Source{}, usageErrorf("--from-release %q: give TYPE/NAME of a provider clusterctl knows (e.g. infrastructure/aws), or a release URL (https://github.com/{owner}/{repo}/releases/latest/{type}-components.yaml)", raw)
		}
		for _, flag := range []struct{ name, given, want string }{{"--type", p.providerType, providerType}, {"--name", p.name, name}} {
			if flag.given != "" && flag.given != flag.want {
				return providerrelease.Source{}, usageErrorf("%s %s contradicts --from-release %s: drop %s", flag.name, flag.given, raw, flag.name)
			}
		}
		if !clusterctl.IsProviderType(providerType) {
			return providerrelease.Source{}, usageErrorf("--from-release %s: %q is not a provider type; use one of core, bootstrap, control-plane, infrastructure, ipam, runtime-extension, addon", raw, providerType)
		}
		url, known := catalog.ReleaseURL(providerType, name)
		if !known {
			return providerrelease.Source{}, usageErrorf("--from-release %s: clusterctl %s knows no %s provider %q (it knows %s); give the provider's release URL instead",
				raw, catalog.ClusterctlVersion, providerType, name, strings.Join(catalog.KnownReleasesOfType(providerType), ", "))
		}
		p.providerType, p.name = providerType, name
		raw = url
	}
	src, err := providerrelease.ParseURLWith(raw, providerrelease.URLOptions{AllowPlainHTTP: o.plainHTTP, Fields: releaseFields})
	if err != nil {
		return src, err
	}
	if p.providerType == "" {
		for _, t := range []string{"core", "bootstrap", "control-plane", "infrastructure", "ipam", "runtime-extension", "addon"} {
			if src.ComponentsPath == clusterctl.ComponentsFile(t) {
				p.providerType = t
			}
		}
		if p.providerType == "" {
			return src, usageErrorf("--type is required: the release URL %s names no {type}-components.yaml", src.URL)
		}
	}
	if p.name == "" {
		p.name = knownName(src, p.providerType)
		if p.name == "" {
			return src, usageErrorf("--name is required: %s is not in clusterctl's list of well-known providers", src.URL)
		}
	}
	return src, nil
}

// knownName is the name of the well-known provider of providerType whose
// release is src's GitHub repository and components file, or "".
func knownName(src providerrelease.Source, providerType string) string {
	if src.Kind != providerrelease.GitHub {
		return ""
	}
	for _, p := range catalog.ClusterctlProviders() {
		known, err := providerrelease.ParseURL(p.URL)
		if err == nil && p.Type == providerType && strings.EqualFold(known.Owner, src.Owner) &&
			strings.EqualFold(known.Repository, src.Repository) && known.ComponentsFile(p.Type) == src.ComponentsFile(providerType) {
			return p.Name
		}
	}
	return ""
}

// fetcher builds the release fetcher from the flags.
func (o *releaseOptions) fetcher(limit int64) (*providerrelease.Fetcher, error) {
	f := &providerrelease.Fetcher{
		Transport:            releaseTransport,
		InsecureSkipVerify:   o.insecure,
		MaxSize:              limit,
		AllowedRedirectHosts: providerrelease.AllowHosts(o.redirectHosts...),
		AllowPlainHTTP:       o.plainHTTP,
		UserAgent:            "capwright/" + version,
		Fields:               releaseFields,
	}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, usageErrorf("--release-ca-file: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--release-ca-file %s: no PEM certificate in it", o.caFile)
		}
		f.RootCAs = pool
	}
	env := func(flag, name string) (string, error) {
		value := os.Getenv(name)
		if value == "" {
			return "", usageErrorf("%s %s: the environment variable %s is empty or unset", flag, name, name)
		}
		return value, nil
	}
	var err error
	switch {
	case o.tokenEnv != "" && (o.username != "" || o.passwordEnv != ""):
		return nil, usageErrorf("give either --release-token-env or --release-username with --release-password-env, not both")
	case o.tokenEnv != "":
		f.Auth.BearerToken, err = env("--release-token-env", o.tokenEnv)
	case o.username != "" && o.passwordEnv != "":
		f.Auth.Username = o.username
		f.Auth.Password, err = env("--release-password-env", o.passwordEnv)
	case o.username != "" || o.passwordEnv != "":
		return nil, usageErrorf("--release-username and --release-password-env go together")
	}
	return f, err
}

// fetchRelease fetches and checks the release of --from-release and
// returns its files, named as the artifact names them. --source defaults
// to the release's project.
func fetchRelease(cmd *cobra.Command, p *publishOptions, src providerrelease.Source, limit int64) (map[string][]byte, error) {
	f, err := p.release.fetcher(limit)
	if err != nil {
		return nil, err
	}
	r, err := f.Fetch(cmd.Context(), src, p.version, p.providerType)
	if err != nil {
		return nil, err
	}
	if _, err := r.Check(p.name); err != nil {
		return nil, err
	}
	if p.source == "" {
		p.source = src.ProjectURL()
	}
	stderr := cmd.ErrOrStderr()
	for _, file := range []providerrelease.File{r.Metadata, r.Components} {
		from := file.URL
		if file.FetchedFrom != file.URL {
			from += " (via " + file.FetchedFrom + ")"
		}
		fmt.Fprintf(stderr, "Fetched %s %s from %s\n", file.Name, file.SHA256, from)
	}
	return r.Files(), nil
}
