package resolve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/providerrelease"
	"github.com/capwright/capwright/internal/render"
)

// judge turns what the provider's source answered (fetched, or err) into
// the artifact to install — or the revision installed, kept — and how long
// that holds (ttl; 0 is the usual maxAge), or the refusal that says why
// nothing can be installed.
func (r *Resolver) judge(ctx context.Context, q *query, fetched providerplan.Artifact, err error) (providerplan.Artifact, time.Duration, *plan.Refusal) {
	if q.release {
		return r.judgeRelease(ctx, q, fetched, err)
	}
	return r.judgeOCI(ctx, q, fetched, err)
}

// judgeOCI: access that cannot be built refuses at once; a registry that
// cannot be asked keeps the revision installed for this spec
// (stillInstalled); any other failure refuses, looked at again within a
// minute (sooner with a shorter interval).
func (r *Resolver) judgeOCI(ctx context.Context, q *query, fetched providerplan.Artifact, err error) (providerplan.Artifact, time.Duration, *plan.Refusal) {
	var denied *accessError
	switch {
	case err == nil:
		return fetched, 0, nil
	case errors.As(err, &denied):
		return providerplan.Artifact{}, 0, unresolved(v1alpha1.AuthenticationFailedReason, denied.Error(), 0)
	}
	if a, ok := r.stillInstalled(ctx, q, err); ok {
		return a, 0, nil
	}
	what := "artifact"
	if q.chart {
		what = "chart"
	}
	msg := fmt.Sprintf("%s %s: %v", what, q.ref.String(), err)
	if errors.Is(err, context.DeadlineExceeded) {
		msg += fmt.Sprintf("; the registry did not answer within %s (the manager's --registry-timeout)", r.timeout())
	}
	if artifact.Unreachable(err) {
		r.unreached(q, err)
	}
	return providerplan.Artifact{}, 0, unresolved(fetchFailureReason(err), msg+accessHint(q, err), min(time.Minute, q.interval))
}

// judgeRelease: a host that cannot be asked keeps the revision installed
// for this spec, remembered for a retry's time only; a release whose
// files spec.source.release.digest does not pin is refused; one whose
// files changed under its version keeps the installed revision until the
// new files are pinned.
func (r *Resolver) judgeRelease(ctx context.Context, q *query, fetched providerplan.Artifact, err error) (providerplan.Artifact, time.Duration, *plan.Refusal) {
	url, version := q.url, q.version
	if err != nil {
		msg := err.Error()
		if releaseUnreachable(err) {
			r.unreached(q, err)
			if errors.Is(err, context.DeadlineExceeded) {
				msg += fmt.Sprintf("; the release host did not answer within %s (the manager's --registry-timeout)", r.timeout())
			}
			held := kept{reason: v1alpha1.ReleaseUnreachableReason, message: fmt.Sprintf(
				"cannot reach the release host to check release %s of %s again (%s); the revision checked when it was installed stays installed, and the release is checked again within %s",
				version, url, msg, min(time.Minute, q.interval))}
			if a, ok := r.keepInstalled(ctx, q, url, held); ok {
				// Remembered for a retry's time only: the host is asked
				// again within a minute.
				return a, releaseRetry(q, err), nil
			}
		}
		return providerplan.Artifact{}, 0, unresolved(releaseReason(err), msg, releaseRetry(q, err))
	}
	digest := fetched.Digest
	if q.pin != "" && q.pin != digest {
		return providerplan.Artifact{}, 0, unresolved(v1alpha1.DigestMismatchReason, fmt.Sprintf(
			"release %s of %s (%s) packs to %s, but spec.source.release.digest pins %s; if these files are intended, set the digest to %s",
			version, url, providerplan.DescribeFiles(fetched.Release.Files), digest, q.pin, digest), 0)
	}
	if changed := releaseChanges(q, fetched.Release.Files); changed != "" && q.pin != digest {
		held := kept{reason: v1alpha1.ReleaseChangedReason, message: fmt.Sprintf(
			"release %s of %s answers with other files than were checked and installed for this version (%s); %s stays installed. Ask the project why the release changed; if the new files are intended, pin them with spec.source.release.digest: %s",
			version, url, changed, q.installed.Revision, digest)}
		if a, ok := r.keepInstalled(ctx, q, url, held); ok {
			return a, 0, nil
		}
		return providerplan.Artifact{}, 0, unresolved(v1alpha1.ReleaseChangedReason, held.message, 0)
	}
	return fetched, 0, nil
}

// unreached tells OnUnreachable that the provider's registry or release
// host could not be asked.
func (r *Resolver) unreached(q *query, err error) {
	if r.OnUnreachable != nil {
		r.OnUnreachable(q.obj, err)
	}
}

// unresolved is a refusal of ArtifactResolved.
func unresolved(reason, message string, retry time.Duration) *plan.Refusal {
	return providerplan.Refusal(v1alpha1.ArtifactResolvedCondition, reason, message, retry)
}

// The unreachable-host rule: a registry or release host that cannot be
// asked does not uninstall anything. Flux keeps running what it applied,
// so the revision checked and installed for the spec stays, and the
// provider stays Ready with it; and the same holds for a release that
// changed under its version until someone pins the new files.

// stillInstalled is the revision checked and installed for the provider's
// spec, when err says the registry cannot be reached to check it again
// (artifact.Unreachable). Not ok when the registry did answer (a tag
// gone, access refused), or when the spec asks for something other than
// what is installed.
func (r *Resolver) stillInstalled(ctx context.Context, q *query, err error) (providerplan.Artifact, bool) {
	prev, ref := q.installed, q.ref
	if !artifact.Unreachable(err) || prev == nil || (ref.Digest != "" && ref.Digest != prev.Digest) {
		return providerplan.Artifact{}, false
	}
	held := kept{reason: v1alpha1.RegistryUnreachableReason, message: fmt.Sprintf(
		"cannot reach the registry to check %s again (%v); %s, checked when it was installed, stays installed, and the tag is checked again within %s",
		ref.String(), err, prev.Revision, q.interval)}
	return r.keepInstalled(ctx, q, ref.URL(), held)
}

// keepInstalled is the revision checked and installed for the provider's
// spec from url, kept for the reason held gives: the plan goes on with
// what was checked then — or, when the artifact checked then is no longer
// cached (a restarted manager), leaves the Flux objects as they are if
// they pin that revision and it passed its checks (Keep). Not ok when the
// spec asks for something other than what is installed.
func (r *Resolver) keepInstalled(ctx context.Context, q *query, url string, held kept) (providerplan.Artifact, bool) {
	prev := q.installed
	if prev == nil || q.installedVersion != q.version || prev.URL != url || !strings.HasPrefix(prev.Revision, q.version+"@") {
		return providerplan.Artifact{}, false
	}
	a := providerplan.Artifact{URL: prev.URL, Tag: q.version, Digest: prev.Digest, Revision: prev.Revision, Unreachable: held.message, KeptReason: held.reason}
	release := len(prev.Files) > 0
	if release {
		a.Release = &providerplan.Release{Files: prev.Files}
	}
	if q.chart {
		return a, true
	}
	pa := r.Cache.Cached(prev.Digest, q.providerType, q.name, q.version)
	if pa == nil {
		if !q.compatible || !r.pins(ctx, q, prev.Digest) {
			return providerplan.Artifact{}, false
		}
		a.Contract, a.Keep = q.contract, true
		return a, true
	}
	a.Checked, a.Release = pa, pa.Release
	return a, true
}

// pins tells whether the provider's OCIRepository already pins digest, or
// for a release its ExternalArtifact serves it: what it installs is then
// what was resolved.
func (r *Resolver) pins(ctx context.Context, q *query, digest string) bool {
	key := ctrl.ObjectKey{Namespace: q.namespace, Name: render.ObjectName(q.providerType, q.name)}
	if q.release {
		var ea sourcev1.ExternalArtifact
		if err := r.Client.Get(ctx, key, &ea); err != nil {
			return false
		}
		return ea.Status.Artifact != nil && ea.Status.Artifact.Digest == digest
	}
	var repo sourcev1.OCIRepository
	if err := r.Client.Get(ctx, key, &repo); err != nil {
		return false
	}
	return repo.Spec.Reference != nil && repo.Spec.Reference.Digest == digest
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

func fetchFailureReason(err error) string {
	var tooLarge *artifact.TooLargeError
	var layout *artifact.LayoutError
	var mismatch *artifact.DigestMismatchError
	var auth *artifact.AuthError
	switch {
	case errors.As(err, &tooLarge):
		return v1alpha1.ArtifactTooLargeReason
	case errors.As(err, &layout):
		return v1alpha1.ArtifactInvalidReason
	case errors.As(err, &mismatch):
		return v1alpha1.DigestMismatchReason
	case errors.As(err, &auth):
		return v1alpha1.AuthenticationFailedReason
	default:
		return v1alpha1.ResolveFailedReason
	}
}
