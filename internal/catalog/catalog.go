// Package catalog answers where a provider's release artifact lives: the
// provider's own source, or the built-in catalog of well-known providers,
// then rewritten by the registry mirror rules of the controller.
package catalog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
)

// upstreamRegistry is where Cluster API is to publish provider manifests as
// OCI artifacts, in the layout of the proposal
// 20260804-provider-manifests-as-oci-artifacts:
// {registry}/{project}/manifests/{type}-{name}. Nothing is published there
// yet: the manager installs these providers from their GitHub releases
// unless --catalog-oci-artifacts or a mirror rule for this path (what
// `capwright mirror --provider` writes) sends them to an OCI repository.
const upstreamRegistry = "registry.k8s.io/cluster-api/manifests"

// wellKnown lists the providers whose artifacts Cluster API is to publish.
// It is the one place that knows them.
var wellKnown = map[string]string{
	v1alpha1.CoreProviderType + "/cluster-api":     upstreamRegistry + "/core-cluster-api",
	v1alpha1.BootstrapProviderType + "/kubeadm":    upstreamRegistry + "/bootstrap-kubeadm",
	v1alpha1.ControlPlaneProviderType + "/kubeadm": upstreamRegistry + "/control-plane-kubeadm",
}

// Repository returns the repository (host/path, no scheme, no tag) of a
// well-known provider.
func Repository(providerType, name string) (string, bool) {
	repo, ok := wellKnown[providerType+"/"+name]
	return repo, ok
}

// Known lists the well-known providers as type/name.
func Known() []string {
	keys := make([]string, 0, len(wellKnown))
	for k := range wellKnown {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MirrorRule rewrites repositories starting with From to start with To
// instead (both host[:port][/path], no scheme), like a registry mirror.
// A To with an https:// (or http://) scheme is a mirror of release URLs
// only: an HTTP server holding the same files under the same paths, e.g.
// github.com=https://artifacts.example.com/github-releases.
//
// A From of the form TYPE/NAME, TYPE a provider type (core, bootstrap,
// control-plane, infrastructure, ipam, runtime-extension, addon), names a
// provider instead: that provider, when it has no spec.source, comes from
// the OCI repository To, tagged with spec.version, e.g.
// infrastructure/aws=mirror.example.com:5000/capi/manifests/infrastructure-aws
// (what `capwright mirror --provider` writes for a provider whose release
// it pushed there). Such a rule rewrites no image and no URL. A provider
// type has no dot and no port, so no registry host reads as one; a Docker
// Hub image under an account named like a provider type (core/x) must be
// written with its host (docker.io/core/x) to be mirrored.
type MirrorRule struct {
	From string
	To   string
}

// forURLs tells a rule that rewrites release URLs only.
func (r MirrorRule) forURLs() bool {
	return strings.HasPrefix(r.To, "https://") || strings.HasPrefix(r.To, "http://")
}

// ForProvider tells a rule whose From names a provider, TYPE/NAME.
func (r MirrorRule) ForProvider() bool {
	providerType, _, ok := strings.Cut(r.From, "/")
	return ok && clusterctl.IsProviderType(providerType)
}

// Mirrors is an ordered set of rules; the longest matching From wins.
type Mirrors []MirrorRule

// ParseMirrorRule parses FROM=TO.
func ParseMirrorRule(s string) (MirrorRule, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "=")
	from, to = strings.TrimSuffix(strings.TrimSpace(from), "/"), strings.TrimSuffix(strings.TrimSpace(to), "/")
	rule := MirrorRule{From: from, To: to}
	target := to
	if rule.forURLs() {
		target = to[strings.Index(to, "://")+3:]
	}
	if !ok || from == "" || target == "" || strings.Contains(from, ":/") || strings.Contains(target, ":/") {
		return MirrorRule{}, fmt.Errorf("registry mirror rule %q: want FROM=TO, e.g. registry.k8s.io=mirror.example.com:5000/k8s (host[:port][/path], no scheme) for artifacts and images, github.com=https://artifacts.example.com/github for release URLs, or infrastructure/aws=mirror.example.com:5000/capi/manifests/infrastructure-aws for a provider", s)
	}
	if rule.ForProvider() {
		if err := checkProviderRule(rule); err != nil {
			return MirrorRule{}, fmt.Errorf("registry mirror rule %q: %w", s, err)
		}
	}
	return rule, nil
}

// checkProviderRule checks a rule for a provider: TYPE/NAME, a provider
// name, to an OCI repository.
func checkProviderRule(r MirrorRule) error {
	_, name, _ := strings.Cut(r.From, "/")
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || strings.Contains(name, "/") {
		return fmt.Errorf("%q is not a provider name (lower case a-z, 0-9, - and ., as the provider's metadata.name): want TYPE/NAME=HOST[:PORT]/PATH, e.g. infrastructure/aws=mirror.example.com:5000/capi/manifests/infrastructure-aws", name)
	}
	host, path, _ := strings.Cut(r.To, "/")
	if r.forURLs() || path == "" || strings.ContainsAny(r.To, "@ ") || strings.Contains(path, ":") || host == "" {
		return fmt.Errorf("a rule for the provider %s sends it to an OCI repository HOST[:PORT]/PATH without scheme, tag or digest (the tag is spec.version), e.g. mirror.example.com:5000/capi/manifests/%s; %q is none", r.From, strings.ReplaceAll(r.From, "/", "-"), r.To)
	}
	return nil
}

// MirrorRules are the rules of a --registry-mirror-file (file, "" for
// none) followed by those of --registry-mirror flags, as the manager and
// `capwright build` take them.
func MirrorRules(flags []string, file string) (Mirrors, error) {
	var rules Mirrors
	if file != "" {
		fromFile, err := ReadMirrorFile(file)
		if err != nil {
			return nil, err
		}
		rules = append(rules, fromFile...)
	}
	for _, f := range flags {
		r, err := ParseMirrorRule(f)
		if err != nil {
			return nil, fmt.Errorf("--registry-mirror: %w", err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// ReadMirrorFile reads rules from a file, one FROM=TO per line; blank lines
// and lines starting with # are ignored. `capwright mirror` writes this
// format.
func ReadMirrorFile(path string) (Mirrors, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading registry mirror file: %w", err)
	}
	var rules Mirrors
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := ParseMirrorRule(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// Rewrite applies the longest matching rule to repo (host[:port]/path or a
// container image reference). A rule matches on a path-segment boundary.
// Rules for release URLs only are not asked.
func (m Mirrors) Rewrite(repo string) (string, bool) {
	best := m.match(repo, false)
	if best < 0 {
		return repo, false
	}
	return m[best].To + strings.TrimPrefix(repo, m[best].From), true
}

// RewriteURL applies the longest matching rule to an https:// (or
// http://) URL of a release file, matched on host[:port]/path: a rule
// with a scheme gives the new URL whole, one without keeps the URL's
// scheme.
func (m Mirrors) RewriteURL(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, false
	}
	best := m.match(rest, true)
	if best < 0 {
		return raw, false
	}
	to := m[best].To
	if !m[best].forURLs() {
		to = scheme + "://" + to
	}
	return to + strings.TrimPrefix(rest, m[best].From), true
}

// ReleaseRewrite is the rules as a release fetcher's Rewrite
// (providerrelease.Fetcher): each release file URL mapped by RewriteURL;
// nil without rules, so the fetcher asks the release host itself.
func (m Mirrors) ReleaseRewrite() func(fileURL string) string {
	if len(m) == 0 {
		return nil
	}
	return func(fileURL string) string {
		out, _ := m.RewriteURL(fileURL)
		return out
	}
}

// OCISource is where Flux pulls an oci:// repository a user named (a
// Tenant's stack, a contract backend) from: the URL after the rules, and
// whether its registry is reached over plain HTTP because the manager's
// --insecure-registry names its host (insecure).
func (m Mirrors) OCISource(url string, insecure []string) (string, bool) {
	repo, _ := m.Rewrite(strings.TrimPrefix(url, "oci://"))
	host, _, _ := strings.Cut(repo, "/")
	return "oci://" + repo, slices.Contains(insecure, host)
}

// Provider returns the OCI repository (host[:port]/path) a rule for the
// provider TYPE/NAME sends it to; the last such rule wins.
func (m Mirrors) Provider(providerType, name string) (string, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].ForProvider() && m[i].From == providerType+"/"+name {
			return m[i].To, true
		}
	}
	return "", false
}

// match is the index of the longest rule matching s, -1 if none; rules for
// release URLs only count when urls is set, rules for providers never.
func (m Mirrors) match(s string, urls bool) int {
	best := -1
	for i, r := range m {
		if (r.forURLs() && !urls) || r.ForProvider() {
			continue
		}
		if s == r.From || strings.HasPrefix(s, r.From+"/") {
			if best < 0 || len(r.From) > len(m[best].From) {
				best = i
			}
		}
	}
	return best
}

// ErrNoSource is returned for a provider with no source that the catalog
// does not know.
var ErrNoSource = errors.New("no source")

// Options are the manager's settings for where providers come from.
type Options struct {
	// Mirrors are the registry mirror rules.
	Mirrors Mirrors
	// OCIArtifacts installs the providers Cluster API is to publish as
	// provider artifacts (Repository) from their OCI repository rather
	// than from their release assets, once upstream publishes there.
	OCIArtifacts bool
}

// Location is where a provider's release manifests are read from: an OCI
// repository (a provider artifact or a chart) or a release URL.
type Location struct {
	// OCI is the oci:// repository after the mirror rules; "" for a
	// release.
	OCI string
	// Release is the release URL as spec.source.release or the catalog
	// gives it, before the mirror rules (Options.Mirrors.RewriteURL maps
	// its file URLs); "" for an OCI repository.
	Release string
	// Catalog tells that the catalog, or a mirror rule for the provider,
	// gave the location rather than spec.source.
	Catalog bool
}

// Locate tells where a provider's release manifests come from: its own
// spec.source, else a mirror rule for the provider (TYPE/NAME=REPOSITORY),
// else the catalog. A provider Cluster API publishes as a provider
// artifact comes from its OCI repository when o.OCIArtifacts is set or a
// mirror rule sends that repository to a mirror (a site that mirrored it,
// as `capwright mirror` writes its rules); every other catalog provider,
// and those without such a rule, from the release URL clusterctl installs
// it from.
func Locate(p v1alpha1.Provider, o Options) (Location, error) {
	switch src := p.GetSpec().Source; {
	case src != nil && src.OCI != nil:
		return ociLocation(src.OCI.URL, o.Mirrors, false), nil
	case src != nil && src.Chart != nil:
		return ociLocation(src.Chart.URL, o.Mirrors, false), nil
	case src != nil && src.Release != nil:
		return Location{Release: src.Release.URL}, nil
	}
	if repo, ok := o.Mirrors.Provider(p.ProviderType(), p.GetName()); ok {
		return Location{OCI: "oci://" + repo, Catalog: true}, nil
	}
	if repo, ok := Repository(p.ProviderType(), p.GetName()); ok {
		if _, mirrored := o.Mirrors.Rewrite(repo); mirrored || o.OCIArtifacts {
			return ociLocation(repo, o.Mirrors, true), nil
		}
	}
	if url, ok := ReleaseURL(p.ProviderType(), p.GetName()); ok {
		return Location{Release: url, Catalog: true}, nil
	}
	return Location{}, fmt.Errorf("%w: %s provider %q is not in the catalog of well-known providers (clusterctl %s's list: %s); set spec.source.release.url to its release URL, or spec.source.oci.url to its artifact repository (or give the manager a mirror rule %s/%s=HOST/PATH naming the repository its artifact was mirrored to)",
		ErrNoSource, p.ProviderType(), p.GetName(), ClusterctlVersion, strings.Join(KnownReleasesOfType(p.ProviderType()), ", "), p.ProviderType(), p.GetName())
}

func ociLocation(url string, mirrors Mirrors, fromCatalog bool) Location {
	repo, _ := mirrors.Rewrite(strings.TrimPrefix(url, "oci://"))
	return Location{OCI: "oci://" + repo, Catalog: fromCatalog}
}
