package resolve

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/fluxartifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/providerrelease"
	"github.com/capwright/capwright/internal/render"
)

// A provider installed from release files: the manager fetches exactly
// metadata.yaml and the components file of spec.version, checks them as
// it checks a provider artifact, and serves Flux the checked files as an
// ExternalArtifact pinned by digest. Nothing is fetched again on a resync:
// the release is fetched when the spec changes, on a reconcile request,
// and every ReleaseSettings.Recheck, which notices a file re-uploaded
// under the same version.

// ReleaseSettings are the manager's settings for release hosts.
type ReleaseSettings struct {
	// RedirectHosts are hosts a release host may redirect a download to,
	// besides GitHub's own download hosts (--release-redirect-host).
	RedirectHosts []string
	// Recheck is how often an unchanged release is fetched again to
	// notice re-uploaded files; 0 means DefaultReleaseRecheck.
	Recheck time.Duration
	// Transport sends the requests; nil is the default transport (with
	// the proxy from the environment).
	Transport http.RoundTripper
}

// DefaultReleaseRecheck is how often an unchanged release is fetched again
// when the manager sets no Recheck: GitHub serves release downloads
// outside its API rate limit, but a resync must not cost a request.
const DefaultReleaseRecheck = 6 * time.Hour

func (r *Resolver) releaseRecheck() time.Duration {
	if r.Releases.Recheck > 0 {
		return r.Releases.Recheck
	}
	return DefaultReleaseRecheck
}

// fetchRelease fetches the release of spec.version at the provider's
// release URL (before the mirror rules), checks it and keeps it in the
// artifact cache by its digest.
func (r *Resolver) fetchRelease(ctx context.Context, q *query) (providerplan.Artifact, error) {
	ca, err := r.fetchReleaseFrom(ctx, q, q.url)
	if err != nil {
		return providerplan.Artifact{}, err
	}
	return checkedArtifact(q, ca, kept{}), nil
}

// fetchReleaseFrom fetches spec.version's release at url, checks it as a
// provider artifact and keeps it in the artifact cache by its digest.
func (r *Resolver) fetchReleaseFrom(ctx context.Context, q *query, url string) (*CheckedArtifact, error) {
	version := q.version
	fetcher, err := r.releaseFetcher(ctx, q)
	if err != nil {
		return nil, err
	}
	src, err := providerrelease.ParseURLWith(url, providerrelease.URLOptions{AllowPlainHTTP: fetcher.AllowPlainHTTP})
	if err != nil {
		return nil, err
	}
	// Fetch checks that metadata.yaml maps the version to a contract; the
	// rest is the preflight of any provider artifact.
	rel, err := fetcher.Fetch(ctx, src, version, q.providerType)
	if err != nil {
		return nil, err
	}
	packed, err := render.ReleaseArtifact(rel.Metadata.Data, rel.Components.Name, rel.Components.Data)
	if err != nil {
		return nil, fmt.Errorf("packing release %s of %s: %w", version, url, err)
	}
	digest := fluxartifact.Digest(packed)
	if ca := r.Cache.Cached(digest, q.providerType, q.name, version); ca != nil && ca.Release != nil {
		return ca, nil
	}
	fetched := &artifact.Fetched{
		Ref:      artifact.Reference{Host: src.Host, Repository: strings.TrimPrefix(url, src.Scheme+"://"+src.Host+"/"), Tag: version},
		Digest:   digest,
		Revision: version + "@" + digest,
		Files:    rel.Files(),
	}
	return r.Cache.check(fetched, q.providerType, q.name, version, q.namespace, &providerplan.Release{Packed: packed, Files: []v1alpha1.ReleaseFile{
		{Name: rel.Metadata.Name, URL: rel.Metadata.FetchedFrom, SHA256: rel.Metadata.SHA256},
		{Name: rel.Components.Name, URL: rel.Components.FetchedFrom, SHA256: rel.Components.SHA256},
	}})
}
