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
	"sort"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// upstreamRegistry is where Cluster API publishes provider manifests as OCI
// artifacts, in the layout of the proposal
// 20260804-provider-manifests-as-oci-artifacts:
// {registry}/{project}/manifests/{type}-{name}.
const upstreamRegistry = "registry.k8s.io/cluster-api/manifests"

// wellKnown lists the providers whose artifacts Cluster API itself publishes.
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
type MirrorRule struct {
	From string
	To   string
}

// Mirrors is an ordered set of rules; the longest matching From wins.
type Mirrors []MirrorRule

// ParseMirrorRule parses FROM=TO.
func ParseMirrorRule(s string) (MirrorRule, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "=")
	from, to = strings.TrimSuffix(strings.TrimSpace(from), "/"), strings.TrimSuffix(strings.TrimSpace(to), "/")
	if !ok || from == "" || to == "" || strings.Contains(from, "://") || strings.Contains(to, "://") {
		return MirrorRule{}, fmt.Errorf("registry mirror rule %q: want FROM=TO, e.g. registry.k8s.io=mirror.example.com:5000/k8s (host[:port][/path], no scheme)", s)
	}
	return MirrorRule{From: from, To: to}, nil
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
func (m Mirrors) Rewrite(repo string) (string, bool) {
	best := -1
	for i, r := range m {
		if repo == r.From || strings.HasPrefix(repo, r.From+"/") {
			if best < 0 || len(r.From) > len(m[best].From) {
				best = i
			}
		}
	}
	if best < 0 {
		return repo, false
	}
	return m[best].To + strings.TrimPrefix(repo, m[best].From), true
}

// ErrNoSource is returned for a provider with no source that the catalog
// does not know.
var ErrNoSource = errors.New("no source")

// ArtifactURL returns the oci:// URL of a provider's artifact repository:
// spec.source.oci.url (or chart url), else the catalog's, after the mirror
// rules.
func ArtifactURL(p v1alpha1.Provider, mirrors Mirrors) (string, error) {
	var repo string
	switch src := p.GetSpec().Source; {
	case src != nil && src.OCI != nil:
		repo = strings.TrimPrefix(src.OCI.URL, "oci://")
	case src != nil && src.Chart != nil:
		repo = strings.TrimPrefix(src.Chart.URL, "oci://")
	default:
		known, ok := Repository(p.ProviderType(), p.GetName())
		if !ok {
			return "", fmt.Errorf("%w: %s provider %q is not in the catalog of well-known providers (%s); set spec.source.oci.url to its artifact repository",
				ErrNoSource, p.ProviderType(), p.GetName(), strings.Join(Known(), ", "))
		}
		repo = known
	}
	repo, _ = mirrors.Rewrite(repo)
	return "oci://" + repo, nil
}
