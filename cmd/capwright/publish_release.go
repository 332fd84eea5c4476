package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/providerrelease"
)

// addFromReleaseFlag adds --from-release to publish; the other release
// flags are releaseOptions'.
func (o *publishOptions) addFromReleaseFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.fromRelease, "from-release", "", "fetch the release instead of reading files: a release URL in clusterctl's forms, or TYPE/NAME of clusterctl's well-known providers (e.g. infrastructure/aws)")
	o.release.addFlags(cmd, "--version", "--from-release")
}

// resolve turns --from-release into a release source and fills --type and
// --name from it where they are not given.
func (p *publishOptions) resolve() (providerrelease.Source, error) {
	raw := strings.TrimSpace(p.fromRelease)
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
		url, err := catalog.ReleaseOf(providerType, name)
		var unknown *catalog.UnknownReleaseError
		switch {
		case errors.As(err, &unknown):
			return providerrelease.Source{}, usageErrorf("--from-release %s: %v; give the provider's release URL instead", raw, err)
		case err != nil:
			return providerrelease.Source{}, usageErrorf("--from-release %s: %v", raw, err)
		}
		p.providerType, p.name = providerType, name
		raw = url
	}
	src, err := providerrelease.ParseURLWith(raw, providerrelease.URLOptions{AllowPlainHTTP: p.release.plainHTTP, Fields: p.release.fields})
	if err != nil {
		return src, err
	}
	if p.providerType == "" {
		for _, t := range clusterctl.ProviderTypes() {
			if src.ComponentsPath == clusterctl.ComponentsFile(t) {
				p.providerType = t
			}
		}
		if p.providerType == "" {
			return src, usageErrorf("--type is required: the release URL %s names no {type}-components.yaml", src.URL)
		}
	}
	if p.name == "" {
		p.name = catalog.ReleaseName(src, p.providerType)
		if p.name == "" {
			return src, usageErrorf("--name is required: %s is not in clusterctl's list of well-known providers", src.URL)
		}
	}
	return src, nil
}

// fetchPublished fetches and checks the release of --from-release and
// returns its files, named as the artifact names them. --source defaults
// to the release's project.
func fetchPublished(cmd *cobra.Command, p *publishOptions, src providerrelease.Source, limit int64) (map[string][]byte, error) {
	f, err := p.release.fetcher(limit)
	if err != nil {
		return nil, err
	}
	r, err := fetchRelease(cmd, f, src, p.providerType, p.name, p.version)
	if err != nil {
		return nil, err
	}
	if p.source == "" {
		p.source = src.ProjectURL()
	}
	return r.Files(), nil
}
