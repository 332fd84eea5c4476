package main

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/providerrelease"
)

// releaseOptions are the flags that reach a release host, shared by
// publish --from-release and mirror --provider.
type releaseOptions struct {
	tokenEnv      string
	username      string
	passwordEnv   string
	caFile        string
	insecure      bool
	plainHTTP     bool
	redirectHosts []string
	mirrors       []string
	// fields names the command's flags in release errors.
	fields providerrelease.Fields
}

// releaseTransport, when set (by tests), sends the release requests.
var releaseTransport http.RoundTripper

// releaseFields names the flags every command shares in release errors;
// each command names its own Version and URL.
var releaseFields = providerrelease.Fields{
	Credentials:   "--release-token-env (or --release-username and --release-password-env)",
	CA:            "--release-ca-file",
	PlainHTTP:     "--release-plain-http",
	MaxSize:       "--max-artifact-size",
	RedirectHosts: "--release-redirect-host",
}

// addFlags adds the release flags to cmd; version and url name where the
// command takes the version and the release URL, in release errors.
func (o *releaseOptions) addFlags(cmd *cobra.Command, version, url string) {
	o.fields = releaseFields
	o.fields.Version, o.fields.URL = version, url
	f := cmd.Flags()
	f.StringVar(&o.tokenEnv, "release-token-env", "", "environment variable holding a bearer token for the release host (e.g. GITHUB_TOKEN); sent to the release URL's host only")
	f.StringVar(&o.username, "release-username", "", "user for basic auth to the release host, with --release-password-env")
	f.StringVar(&o.passwordEnv, "release-password-env", "", "environment variable holding the password (or deploy token) for basic auth to the release host")
	f.StringVar(&o.caFile, "release-ca-file", "", "PEM file of certificate authorities to trust for the release host, in addition to the system's")
	f.BoolVar(&o.insecure, "release-insecure-skip-tls-verify", false, "accept any TLS certificate of the release host: no verification, for testing only")
	f.BoolVar(&o.plainHTTP, "release-plain-http", false, "allow an http:// release URL")
	f.StringArrayVar(&o.redirectHosts, "release-redirect-host", nil, "also follow redirects to this HOST[:PORT] (repeatable); github.com's download hosts are always followed")
	f.StringArrayVar(&o.mirrors, "release-mirror", nil, "fetch release files from a mirror, FROM=TO as the controller's --registry-mirror rules for release URLs, e.g. github.com=https://artifacts.example.com/github (repeatable; the longest FROM wins)")
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
		Fields:               o.fields,
	}
	if len(o.mirrors) > 0 {
		var rules catalog.Mirrors
		for _, m := range o.mirrors {
			rule, err := catalog.ParseMirrorRule(m)
			if err != nil {
				return nil, usageErrorf("--release-mirror: %v", err)
			}
			if rule.ForProvider() {
				return nil, usageErrorf("--release-mirror %s: a rule for a provider (TYPE/NAME) rewrites no release URL; give FROM=TO for the release host, e.g. github.com=https://artifacts.example.com/github", m)
			}
			rules = append(rules, rule)
		}
		f.Rewrite = rules.ReleaseRewrite()
	}
	if o.caFile != "" {
		pool, err := caFilePool("--release-ca-file", o.caFile)
		if err != nil {
			return nil, err
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

// fetchRelease fetches the files of one version of a provider release and
// checks them as publish checks local files (providerrelease.Release.Check),
// saying on stderr what it fetched from where.
func fetchRelease(cmd *cobra.Command, f *providerrelease.Fetcher, src providerrelease.Source, providerType, name, version string) (*providerrelease.Release, error) {
	r, err := f.Fetch(cmd.Context(), src, version, providerType)
	if err != nil {
		return nil, err
	}
	if _, err := r.Check(name); err != nil {
		return nil, err
	}
	stderr := cmd.ErrOrStderr()
	for _, file := range []providerrelease.File{r.Metadata, r.Components} {
		from := file.URL
		if file.FetchedFrom != file.URL {
			from += " (via " + file.FetchedFrom + ")"
		}
		fmt.Fprintf(stderr, "Fetched %s %s from %s\n", file.Name, file.SHA256, from)
	}
	return r, nil
}

// caFilePool is the system's certificate authorities and those of the PEM
// file a flag names (--ca-file, --release-ca-file).
func caFilePool(flag, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	pool, err := artifact.CertPool(pem)
	if err != nil {
		return nil, usageErrorf("%s %s: %v", flag, path, err)
	}
	return pool, nil
}
