package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/plan"
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

// release fetches and checks the release of spec.version at the
// provider's release URL (before the mirror rules), or takes it from memory when it was fetched within
// the recheck interval for the same spec and no reconcile was requested
// since.
func (r *Resolver) release(ctx context.Context, q *query) (providerplan.Artifact, *plan.Refusal) {
	url, version := q.url, q.version
	key := "release " + url + "@" + version
	if digest, kept, ok := r.Resolutions.get(q, key, r.releaseRecheck(), time.Now()); ok {
		if ca := r.Cache.Cached(digest, q.providerType, q.name, version); ca != nil && ca.Release != nil {
			return releaseArtifact(url, version, ca, kept), nil
		}
	}
	timeout := r.Timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ca, err := r.fetchRelease(ctx, q, url)
	if err != nil {
		msg := err.Error()
		if releaseUnreachable(err) {
			r.unreached(q, err)
			if errors.Is(err, context.DeadlineExceeded) {
				msg += fmt.Sprintf("; the release host did not answer within %s (the manager's --registry-timeout)", timeout)
			}
			held := kept{reason: v1alpha1.ReleaseUnreachableReason, message: fmt.Sprintf(
				"cannot reach the release host to check release %s of %s again (%s); the revision checked when it was installed stays installed, and the release is checked again within %s",
				version, url, msg, min(time.Minute, q.interval))}
			if a, ok := r.keepInstalled(ctx, q, url, held); ok {
				// Remembered for a retry's time only: the host is asked
				// again within a minute.
				r.Resolutions.put(q, key, a.Digest, held, time.Now(), releaseRetry(q, err))
				return a, nil
			}
		}
		return providerplan.Artifact{}, unresolved(releaseReason(err), msg, releaseRetry(q, err))
	}
	digest := ca.Fetched.Digest
	pin := q.pin
	if pin != "" && pin != digest {
		return providerplan.Artifact{}, unresolved(v1alpha1.DigestMismatchReason, fmt.Sprintf(
			"release %s of %s (%s) packs to %s, but spec.source.release.digest pins %s; if these files are intended, set the digest to %s",
			version, url, providerplan.DescribeFiles(ca.Release.Files), digest, pin, digest), 0)
	}
	if changed := releaseChanges(q, ca.Release.Files); changed != "" && pin != digest {
		prev := q.installed
		held := kept{reason: v1alpha1.ReleaseChangedReason, message: fmt.Sprintf(
			"release %s of %s answers with other files than were checked and installed for this version (%s); %s stays installed. Ask the project why the release changed; if the new files are intended, pin them with spec.source.release.digest: %s",
			version, url, changed, prev.Revision, digest)}
		if a, ok := r.keepInstalled(ctx, q, url, held); ok {
			r.Resolutions.put(q, key, a.Digest, held, time.Now(), 0)
			return a, nil
		}
		return providerplan.Artifact{}, unresolved(v1alpha1.ReleaseChangedReason, held.message, 0)
	}
	r.Resolutions.put(q, key, digest, kept{}, time.Now(), 0)
	return releaseArtifact(url, version, ca, kept{}), nil
}

// releaseArtifact is the plan's view of a checked release; held, when
// set, says why it is the installed one rather than what the host serves.
func releaseArtifact(url, version string, ca *CheckedArtifact, held kept) providerplan.Artifact {
	return providerplan.Artifact{URL: url, Tag: version, Digest: ca.Fetched.Digest, Revision: ca.Fetched.Revision, Checked: ca,
		Release: ca.Release, Unreachable: held.message, KeptReason: held.reason}
}

// fetchRelease fetches the release, checks it as a provider artifact and
// keeps it in the artifact cache by its digest.
func (r *Resolver) fetchRelease(ctx context.Context, q *query, url string) (*CheckedArtifact, error) {
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

// releaseChanges names the files of the release installed for this
// version and URL whose sha256 differs from what the host serves now, with
// both digests; "" when nothing changed or nothing of it is installed.
func releaseChanges(q *query, files []v1alpha1.ReleaseFile) string {
	prev := q.installed
	if prev == nil || prev.URL != q.url || !strings.HasPrefix(prev.Revision, q.version+"@") || len(prev.Files) == 0 {
		return ""
	}
	var changes []string
	for _, now := range files {
		for _, then := range prev.Files {
			if then.Name == now.Name && then.SHA256 != now.SHA256 {
				changes = append(changes, fmt.Sprintf("%s was %s and is now %s", now.Name, then.SHA256, now.SHA256))
			}
		}
	}
	return strings.Join(changes, "; ")
}

// releaseUnreachable tells an error that says the release host could not
// be asked (down, hanging, failing), not that it answered no.
func releaseUnreachable(err error) bool {
	var re *providerrelease.Error
	if errors.As(err, &re) {
		return re.Reason == providerrelease.ReasonUnreachable || re.Reason == providerrelease.ReasonHTTPError
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// releaseReason is the ArtifactResolved reason of a failed release.
func releaseReason(err error) string {
	var re *providerrelease.Error
	if !errors.As(err, &re) {
		var layout *artifact.LayoutError
		if errors.As(err, &layout) {
			return v1alpha1.ReleaseInvalidReason
		}
		return v1alpha1.ResolveFailedReason
	}
	switch re.Reason {
	case providerrelease.ReasonNotReleased:
		return v1alpha1.ReleaseNotFoundReason
	case providerrelease.ReasonUnauthorized:
		return v1alpha1.AuthenticationFailedReason
	case providerrelease.ReasonTooLarge:
		return v1alpha1.ArtifactTooLargeReason
	case providerrelease.ReasonNotYAML, providerrelease.ReasonInvalidRelease:
		return v1alpha1.ReleaseInvalidReason
	}
	return v1alpha1.ResolveFailedReason
}

// releaseRetry is when a failed release is fetched again: a minute
// (sooner with a shorter interval) while the host fails, the resync
// interval when it answered no, so a version not released yet is not
// asked for every minute.
func releaseRetry(q *query, err error) time.Duration {
	if releaseUnreachable(err) {
		return min(time.Minute, q.interval)
	}
	return q.interval
}
