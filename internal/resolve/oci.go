package resolve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// A provider installed from an OCI repository: its tag resolved to a
// digest (a chart stops there), the artifact of that digest fetched and
// checked once, and kept by digest.

// oci resolves the desired version in the provider's OCI repository.
func (r *Resolver) oci(ctx context.Context, q *query) (providerplan.Artifact, *plan.Refusal) {
	if res, ok := r.recentlyResolved(q); ok {
		return res, nil
	}
	res, refusal := r.fetchArtifact(ctx, q)
	if refusal == nil {
		r.Resolutions.put(q, q.ref.String(), res.Digest, kept{reason: res.KeptReason, message: res.Unreachable}, time.Now(), 0)
	}
	return res, refusal
}

// Reference is where obj's artifact is fetched from, after the catalog
// and mirror rules; release is set instead for a provider installed from
// release files (its release URL), and the reference is then empty.
func (r *Resolver) Reference(obj v1alpha1.Provider) (ref artifact.Reference, release string, err error) {
	q := r.about(obj)
	if err := r.locate(&q); err != nil || q.release {
		return ref, q.url, err
	}
	return q.ref, "", nil
}

// Preload takes fetched — obj's artifact read elsewhere than from its
// registry: an OCI image layout, for capwright build offline — as what
// the registry answers for it: checked as a fetched artifact is, and
// remembered as what obj's reference resolves to, so resolving obj asks
// no registry. A chart, or a digest other than the one spec.source.oci
// pins, is refused.
func (r *Resolver) Preload(obj v1alpha1.Provider, fetched *artifact.Fetched) error {
	q := r.about(obj)
	switch err := r.locate(&q); {
	case err != nil:
		return err
	case q.release:
		return fmt.Errorf("%s installs from the release files at %s, not from an OCI artifact", q.name, q.url)
	case q.chart:
		return fmt.Errorf("%s is a Helm chart, which the manager does not read", q.name)
	case q.ref.Digest != "" && q.ref.Digest != fetched.Digest:
		return &artifact.DigestMismatchError{Ref: q.ref.String(), Expected: q.ref.Digest, Actual: fetched.Digest}
	}
	at := *fetched
	at.Ref, at.Revision = q.ref, q.ref.Tag+"@"+fetched.Digest
	if _, err := r.Cache.check(&at, q.providerType, q.name, q.version, q.namespace, nil); err != nil {
		return err
	}
	r.Resolutions.put(&q, q.ref.String(), fetched.Digest, kept{}, time.Now(), 0)
	return nil
}

// fetchArtifact asks the registry what the provider's reference names
// now and, for components, fetches and checks the artifact (once per
// digest: the cache keeps it). The registry has at most RegistryTimeout to
// answer. When it cannot be reached, the revision installed for this spec
// stays, if there is one (stillInstalled).
func (r *Resolver) fetchArtifact(ctx context.Context, q *query) (providerplan.Artifact, *plan.Refusal) {
	ref := q.ref
	timeout := r.Timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(what string, err error) *plan.Refusal {
		msg := fmt.Sprintf("%s %s: %v", what, ref.String(), err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf("; the registry did not answer within %s (the manager's --registry-timeout)", timeout)
		}
		if artifact.Unreachable(err) {
			r.unreached(q, err)
		}
		// Looked at again within a minute, sooner with a shorter interval.
		return unresolved(fetchFailureReason(err), msg+accessHint(q, err), min(time.Minute, q.interval))
	}
	access, err := r.access(ctx, q, ref.URL())
	if err != nil {
		return providerplan.Artifact{}, unresolved(v1alpha1.AuthenticationFailedReason, err.Error(), 0)
	}
	if q.chart {
		// A chart is Helm's to read; the plan pins the digest the tag names.
		digest, err := r.Fetcher.Resolve(ctx, ref, access)
		if err != nil {
			if res, ok := r.stillInstalled(ctx, q, err); ok {
				return res, nil
			}
			return providerplan.Artifact{}, fail("chart", err)
		}
		return providerplan.Artifact{URL: ref.URL(), Tag: q.version, Digest: digest, Revision: q.version + "@" + digest}, nil
	}
	pa, err := r.Cache.Fetch(ctx, r.Fetcher, ref, access, q.providerType, q.name, q.version, q.namespace)
	if err != nil {
		if res, ok := r.stillInstalled(ctx, q, err); ok {
			return res, nil
		}
		return providerplan.Artifact{}, fail("artifact", err)
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: q.version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa}, nil
}

// recentlyResolved is the result of resolving the provider's reference
// again when it was resolved recently (Resolutions) and its artifact is
// cached.
func (r *Resolver) recentlyResolved(q *query) (providerplan.Artifact, bool) {
	ref := q.ref
	digest, held, ok := r.Resolutions.get(q, ref.String(), q.interval/2, time.Now())
	if !ok {
		return providerplan.Artifact{}, false
	}
	if q.chart {
		return providerplan.Artifact{URL: ref.URL(), Tag: q.version, Digest: digest, Revision: q.version + "@" + digest, Unreachable: held.message, KeptReason: held.reason}, true
	}
	pa := r.Cache.Cached(digest, q.providerType, q.name, q.version)
	if pa == nil {
		return providerplan.Artifact{}, false
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: q.version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa, Unreachable: held.message, KeptReason: held.reason}, true
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
