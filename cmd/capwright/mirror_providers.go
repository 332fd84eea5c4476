package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/providerrelease"
)

// providerSpec is one provider of --provider or --providers-file:
// TYPE/NAME:VERSION, from the catalog's release URL or the one given.
type providerSpec struct {
	providerType, name, version string
	src                         providerrelease.Source
}

func (p providerSpec) String() string { return p.providerType + "/" + p.name + ":" + p.version }

// providerSpecForm is what a provider line looks like, for messages.
const providerSpecForm = "TYPE/NAME:VERSION, e.g. infrastructure/aws:v2.13.0"

// parseProviderSpec parses TYPE/NAME:VERSION, followed by a release URL
// when withURL (a --providers-file line). Errors do not name where the
// spec came from; the caller adds it.
func (o *mirrorOptions) parseProviderSpec(s string, withURL bool) (providerSpec, error) {
	fields := strings.Fields(s)
	switch {
	case len(fields) == 0:
		return providerSpec{}, fmt.Errorf("empty: want %s", providerSpecForm)
	case len(fields) == 2 && !withURL:
		return providerSpec{}, fmt.Errorf("want %s; a release URL for a provider outside clusterctl's list goes after it in --providers-file", providerSpecForm)
	case len(fields) > 2:
		return providerSpec{}, fmt.Errorf("want %s, optionally followed by the provider's release URL, and nothing else", providerSpecForm)
	}
	typeName, version, hasVersion := strings.Cut(fields[0], ":")
	providerType, name, ok := strings.Cut(typeName, "/")
	if !ok || providerType == "" || name == "" || strings.Contains(name, "/") {
		return providerSpec{}, fmt.Errorf("%q: want %s", fields[0], providerSpecForm)
	}
	if !hasVersion || version == "" {
		return providerSpec{}, fmt.Errorf("%q has no version: want %s (the release tag; \"latest\" is never resolved)", fields[0], providerSpecForm)
	}
	if err := catalog.CheckProviderType(providerType); err != nil {
		return providerSpec{}, err
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return providerSpec{}, fmt.Errorf("%q is not a provider name: lower case a-z, 0-9, - and ., as the provider's metadata.name", name)
	}
	spec := providerSpec{providerType: providerType, name: name, version: version}
	url := ""
	if len(fields) == 2 {
		url = fields[1]
	} else {
		known, err := catalog.ReleaseOf(providerType, name)
		if err != nil {
			return providerSpec{}, fmt.Errorf("%w; for another provider give its release URL after it in --providers-file: %s:%s https://github.com/{owner}/{repo}/releases/latest/%s",
				err, typeName, version, clusterctl.ComponentsFile(providerType))
		}
		url = known
	}
	src, err := providerrelease.ParseURLWith(url, providerrelease.URLOptions{AllowPlainHTTP: o.release.plainHTTP, Fields: o.release.fields})
	if err != nil {
		return providerSpec{}, err
	}
	if err := src.CheckVersion(version); err != nil {
		return providerSpec{}, err
	}
	spec.src = src
	return spec, nil
}

// providerSpecs reads --provider and --providers-file.
func (o *mirrorOptions) providerSpecs(cmd *cobra.Command) ([]providerSpec, error) {
	var specs []providerSpec
	seen := map[string]string{}
	add := func(spec providerSpec, where string) error {
		if url, dup := seen[spec.String()]; dup {
			if url != spec.src.URL {
				return usageErrorf("%s: %s is given twice, from %s and from %s: give it once", where, spec, url, spec.src.URL)
			}
			return nil
		}
		seen[spec.String()] = spec.src.URL
		specs = append(specs, spec)
		return nil
	}
	for _, p := range o.providers {
		spec, err := o.parseProviderSpec(p, false)
		if err != nil {
			return nil, usageError{fmt.Errorf("--provider %s: %w", p, err)}
		}
		if err := add(spec, "--provider "+p); err != nil {
			return nil, err
		}
	}
	if o.providersFile == "" {
		return specs, nil
	}
	data, err := readInput(cmd.InOrStdin(), "--providers-file", o.providersFile)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if before, _, ok := strings.Cut(line, "#"); ok {
			line = strings.TrimSpace(before)
		}
		if line == "" {
			continue
		}
		where := fmt.Sprintf("--providers-file %s:%d", o.providersFile, n)
		spec, err := o.parseProviderSpec(line, true)
		if err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", where, err)}
		}
		if err := add(spec, where); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("--providers-file %s: %v", o.providersFile, err)
	}
	return specs, nil
}

// fetchReleases fetches and checks the release of each provider, as
// publish --from-release does, before anything is copied: a release that
// cannot be fetched stops the run.
func (o *mirrorOptions) fetchReleases(cmd *cobra.Command, specs []providerSpec, limit int64) ([]mirror.ProviderRelease, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	f, err := o.release.fetcher(limit)
	if err != nil {
		return nil, err
	}
	releases := make([]mirror.ProviderRelease, 0, len(specs))
	for _, spec := range specs {
		r, err := fetchRelease(cmd, f, spec.src, spec.providerType, spec.name, spec.version)
		if err != nil {
			return nil, fmt.Errorf("%s (nothing was copied): %w", spec, err)
		}
		releases = append(releases, mirror.ProviderRelease{
			Type: spec.providerType, Name: spec.name, Version: spec.version,
			URL:         r.Components.URL,
			Files:       r.Files(),
			Annotations: r.Artifact(spec.name, spec.src.ProjectURL(), nil).ManifestAnnotations(),
		})
	}
	return releases, nil
}
