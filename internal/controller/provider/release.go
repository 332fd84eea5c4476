package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

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
	// CopyNamespace is the manager's namespace, where the checked release
	// each provider's ExternalArtifact serves is kept in ConfigMaps for a
	// manager that restarts with empty storage while the release host is
	// down; "" keeps no copies.
	CopyNamespace string
}

// DefaultReleaseRecheck is how often an unchanged release is fetched again
// when the manager sets no Recheck: GitHub serves release downloads
// outside its API rate limit, but a resync must not cost a request.
const DefaultReleaseRecheck = 6 * time.Hour

func (r *Reconciler) releaseRecheck() time.Duration {
	if r.Releases.Recheck > 0 {
		return r.Releases.Recheck
	}
	return DefaultReleaseRecheck
}

// resolveRelease fetches and checks the release of spec.version at url
// (before the mirror rules), or takes it from memory when it was fetched
// within the recheck interval for the same spec and no reconcile was
// requested since.
func (r *Reconciler) resolveRelease(ctx context.Context, obj v1alpha1.Provider, url string) (providerplan.Artifact, *plan.Refusal) {
	spec := obj.GetSpec()
	key := "release " + url + "@" + spec.Version
	if digest, kept, ok := r.Resolutions.get(obj, key, r.releaseRecheck(), time.Now()); ok {
		if ca := r.Cache.Cached(digest, obj.ProviderType(), obj.GetName(), spec.Version); ca != nil && ca.Release != nil {
			return releaseArtifact(url, spec.Version, ca, kept), nil
		}
	}
	timeout := r.registryTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ca, err := r.fetchRelease(ctx, obj, url)
	if err != nil {
		msg := err.Error()
		if releaseUnreachable(err) {
			r.unreached(obj, err)
			if errors.Is(err, context.DeadlineExceeded) {
				msg += fmt.Sprintf("; the release host did not answer within %s (the manager's --registry-timeout)", timeout)
			}
			held := kept{reason: v1alpha1.ReleaseUnreachableReason, message: fmt.Sprintf(
				"cannot reach the release host to check release %s of %s again (%s); the revision checked when it was installed stays installed, and the release is checked again within %s",
				spec.Version, url, msg, min(time.Minute, r.resyncInterval(obj)))}
			if a, ok := r.keepInstalled(ctx, obj, url, held); ok {
				// Remembered for a retry's time only: the host is asked
				// again within a minute.
				r.Resolutions.put(obj, key, a.Digest, held, time.Now(), r.releaseRetry(obj, err))
				return a, nil
			}
		}
		return providerplan.Artifact{}, unresolved(releaseReason(err), msg, r.releaseRetry(obj, err))
	}
	digest := ca.Fetched.Digest
	pin := releasePin(obj)
	if pin != "" && pin != digest {
		return providerplan.Artifact{}, unresolved(v1alpha1.DigestMismatchReason, fmt.Sprintf(
			"release %s of %s (%s) packs to %s, but spec.source.release.digest pins %s; if these files are intended, set the digest to %s",
			spec.Version, url, providerplan.DescribeFiles(ca.Release.Files), digest, pin, digest), 0)
	}
	if changed := releaseChanges(obj, url, ca.Release.Files); changed != "" && pin != digest {
		prev := obj.GetStatus().Artifact
		held := kept{reason: v1alpha1.ReleaseChangedReason, message: fmt.Sprintf(
			"release %s of %s answers with other files than were checked and installed for this version (%s); %s stays installed. Ask the project why the release changed; if the new files are intended, pin them with spec.source.release.digest: %s",
			spec.Version, url, changed, prev.Revision, digest)}
		if a, ok := r.keepInstalled(ctx, obj, url, held); ok {
			r.Resolutions.put(obj, key, a.Digest, held, time.Now(), 0)
			return a, nil
		}
		return providerplan.Artifact{}, unresolved(v1alpha1.ReleaseChangedReason, held.message, 0)
	}
	r.Resolutions.put(obj, key, digest, kept{}, time.Now(), 0)
	return releaseArtifact(url, spec.Version, ca, kept{}), nil
}

// releaseArtifact is the plan's view of a checked release; held, when
// set, says why it is the installed one rather than what the host serves.
func releaseArtifact(url, version string, ca *CheckedArtifact, held kept) providerplan.Artifact {
	return providerplan.Artifact{URL: url, Tag: version, Digest: ca.Fetched.Digest, Revision: ca.Fetched.Revision, Checked: ca,
		Release: ca.Release, Unreachable: held.message, KeptReason: held.reason}
}

// fetchRelease fetches the release, checks it as a provider artifact and
// keeps it in the artifact cache by its digest.
func (r *Reconciler) fetchRelease(ctx context.Context, obj v1alpha1.Provider, url string) (*CheckedArtifact, error) {
	spec := obj.GetSpec()
	fetcher, err := r.releaseFetcher(ctx, obj)
	if err != nil {
		return nil, err
	}
	src, err := providerrelease.ParseURLWith(url, providerrelease.URLOptions{AllowPlainHTTP: fetcher.AllowPlainHTTP})
	if err != nil {
		return nil, err
	}
	// Fetch checks that metadata.yaml maps the version to a contract; the
	// rest is the preflight of any provider artifact.
	rel, err := fetcher.Fetch(ctx, src, spec.Version, obj.ProviderType())
	if err != nil {
		return nil, err
	}
	packed, err := render.ReleaseArtifact(rel.Metadata.Data, rel.Components.Name, rel.Components.Data)
	if err != nil {
		return nil, fmt.Errorf("packing release %s of %s: %w", spec.Version, url, err)
	}
	digest := fluxartifact.Digest(packed)
	if ca := r.Cache.Cached(digest, obj.ProviderType(), obj.GetName(), spec.Version); ca != nil && ca.Release != nil {
		return ca, nil
	}
	fetched := &artifact.Fetched{
		Ref:      artifact.Reference{Host: src.Host, Repository: strings.TrimPrefix(url, src.Scheme+"://"+src.Host+"/"), Tag: spec.Version},
		Digest:   digest,
		Revision: spec.Version + "@" + digest,
		Files:    rel.Files(),
	}
	return r.Cache.check(fetched, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace(), &providerplan.Release{Packed: packed, Files: []v1alpha1.ReleaseFile{
		{Name: rel.Metadata.Name, URL: rel.Metadata.FetchedFrom, SHA256: rel.Metadata.SHA256},
		{Name: rel.Components.Name, URL: rel.Components.FetchedFrom, SHA256: rel.Components.SHA256},
	}})
}

// releaseFetcher is the fetcher of the provider's release: the manager's
// mirror rules, redirect hosts, size bound and timeout, and the
// credentials, CA and plain-HTTP consent of spec.source.release.
func (r *Reconciler) releaseFetcher(ctx context.Context, obj v1alpha1.Provider) (*providerrelease.Fetcher, error) {
	f := &providerrelease.Fetcher{
		Transport:            r.Releases.Transport,
		Timeout:              r.registryTimeout(),
		AllowedRedirectHosts: providerrelease.AllowHosts(r.Releases.RedirectHosts...),
		UserAgent:            "capwright",
		Fields:               providerrelease.ControllerFields,
	}
	if r.Fetcher != nil {
		f.MaxSize = r.Fetcher.MaxArtifactSize
	}
	if r.BaseAccess != nil {
		// The CLI's own TLS settings.
		f.RootCAs, f.InsecureSkipVerify = r.BaseAccess.RootCAs, r.BaseAccess.InsecureSkipVerify
	}
	if len(r.Mirrors) > 0 {
		mirrors := r.Mirrors
		f.Rewrite = func(u string) string {
			out, _ := mirrors.RewriteURL(u)
			return out
		}
	}
	src := obj.GetSpec().Source
	if src == nil || src.Release == nil {
		return f, nil
	}
	rs, ns := src.Release, obj.GetNamespace()
	f.AllowPlainHTTP = rs.Insecure
	if r.BaseAccess != nil {
		return f, nil // no Secret of the cluster is read
	}
	if rs.SecretRef != nil {
		const field = "spec.source.release.secretRef"
		secret, err := r.registrySecret(ctx, field, ns, rs.SecretRef.Name,
			fmt.Sprintf("create it with kubectl create secret generic %s --namespace %s --from-literal=token=<token>", rs.SecretRef.Name, ns))
		if err != nil {
			return nil, err
		}
		switch token := firstKey(secret.Data, "token", "bearerToken"); {
		case token != "":
			f.Auth.BearerToken = token
		case len(secret.Data["username"]) > 0:
			f.Auth.Username, f.Auth.Password = string(secret.Data["username"]), string(secret.Data["password"])
		default:
			return nil, fmt.Errorf("%s: Secret %s/%s has neither a token key nor username and password keys; put the release host's token under token (or bearerToken), or basic-auth credentials under username and password",
				field, ns, rs.SecretRef.Name)
		}
	}
	if rs.CertSecretRef != nil {
		var access artifact.Access
		if err := r.registryTLS(ctx, "spec.source.release.certSecretRef", ns, rs.CertSecretRef.Name, &access); err != nil {
			return nil, err
		}
		f.RootCAs = access.RootCAs
	}
	return f, nil
}

func firstKey(data map[string][]byte, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(string(data[k])); v != "" {
			return v
		}
	}
	return ""
}

// releasePin is spec.source.release.digest.
func releasePin(obj v1alpha1.Provider) string {
	if src := obj.GetSpec().Source; src != nil && src.Release != nil {
		return src.Release.Digest
	}
	return ""
}

// releaseChanges names the files of the release installed for this
// version and URL whose sha256 differs from what the host serves now, with
// both digests; "" when nothing changed or nothing of it is installed.
func releaseChanges(obj v1alpha1.Provider, url string, files []v1alpha1.ReleaseFile) string {
	spec, status := obj.GetSpec(), obj.GetStatus()
	prev := status.Artifact
	if prev == nil || prev.URL != url || !strings.HasPrefix(prev.Revision, spec.Version+"@") || len(prev.Files) == 0 {
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
func (r *Reconciler) releaseRetry(obj v1alpha1.Provider, err error) time.Duration {
	if releaseUnreachable(err) {
		return min(time.Minute, r.resyncInterval(obj))
	}
	return r.resyncInterval(obj)
}

// componentsArtifactPins tells whether the provider's ExternalArtifact
// already serves digest: what it installs is then what was checked.
func (r *Reconciler) componentsArtifactPins(ctx context.Context, obj v1alpha1.Provider, digest string) bool {
	var ea sourcev1.ExternalArtifact
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}, &ea); err != nil {
		return false
	}
	return ea.Status.Artifact != nil && ea.Status.Artifact.Digest == digest
}

// packedRelease is the release artifact of digest served, for restore:
// the provider's checked release from memory, else from its copy in the
// cluster, else fetched again from its installed URL and version; nil
// when none gives that digest.
func (r *Reconciler) packedRelease(ctx context.Context, obj v1alpha1.Provider, served string) []byte {
	prev := obj.GetStatus().Artifact
	if prev == nil || prev.Digest != served || len(prev.Files) == 0 {
		return nil
	}
	version, _, _ := strings.Cut(prev.Revision, "@")
	if ca := r.Cache.Cached(served, obj.ProviderType(), obj.GetName(), version); ca != nil && ca.Release != nil {
		return ca.Release.Packed
	}
	if packed := r.releaseCopy(ctx, obj, served); packed != nil {
		return packed
	}
	if version != obj.GetSpec().Version {
		return nil // fetchRelease fetches spec.version only
	}
	ctx, cancel := context.WithTimeout(ctx, r.registryTimeout())
	defer cancel()
	ca, err := r.fetchRelease(ctx, obj, prev.URL)
	if err != nil || ca.Fetched.Digest != served {
		return nil
	}
	return ca.Release.Packed
}
