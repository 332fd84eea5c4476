package resolve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// A provider installed from an OCI repository: its tag resolved to a
// digest (a chart stops there), the artifact of that digest fetched and
// checked once, and kept by digest.

// oci resolves the desired version of obj in the OCI repository url.
func (r *Resolver) oci(ctx context.Context, obj v1alpha1.Provider, url string) (providerplan.Artifact, *plan.Refusal) {
	ref, err := ociReference(obj, url)
	if err != nil {
		return providerplan.Artifact{}, unresolved(v1alpha1.ResolveFailedReason, err.Error(), 0)
	}
	if res, ok := r.recentlyResolved(obj, ref); ok {
		return res, nil
	}
	res, refusal := r.fetchArtifact(ctx, obj, ref)
	if refusal == nil {
		r.Resolutions.put(obj, ref.String(), res.Digest, kept{reason: res.KeptReason, message: res.Unreachable}, time.Now(), 0)
	}
	return res, refusal
}

// ociReference is what the desired version of obj is fetched as from
// the OCI repository url: its tag, and the digest spec.source.oci pins.
func ociReference(obj v1alpha1.Provider, url string) (artifact.Reference, error) {
	ref, err := artifact.ParseURL(url)
	if err != nil {
		return ref, fmt.Errorf("artifact URL %s: %v", url, err)
	}
	spec := obj.GetSpec()
	ref.Tag = spec.Version
	if spec.Source != nil && spec.Source.OCI != nil {
		ref.Digest = spec.Source.OCI.Digest
	}
	return ref, nil
}

// Reference is where obj's artifact is fetched from, after the catalog
// and mirror rules; release is set instead for a provider installed from
// release files (its release URL), and the reference is then empty.
func (r *Resolver) Reference(obj v1alpha1.Provider) (ref artifact.Reference, release string, err error) {
	loc, err := catalog.Locate(obj, r.catalogOptions())
	if err != nil || loc.Release != "" {
		return ref, loc.Release, err
	}
	ref, err = ociReference(obj, loc.OCI)
	return ref, "", err
}

// Preload takes fetched — obj's artifact read elsewhere than from its
// registry: an OCI image layout, for capwright build offline — as what
// the registry answers for it: checked as a fetched artifact is, and
// remembered as what obj's reference resolves to, so resolving obj asks
// no registry. A chart, or a digest other than the one spec.source.oci
// pins, is refused.
func (r *Resolver) Preload(obj v1alpha1.Provider, fetched *artifact.Fetched) error {
	ref, release, err := r.Reference(obj)
	switch {
	case err != nil:
		return err
	case release != "":
		return fmt.Errorf("%s installs from the release files at %s, not from an OCI artifact", obj.GetName(), release)
	case render.IsChart(obj):
		return fmt.Errorf("%s is a Helm chart, which the manager does not read", obj.GetName())
	case ref.Digest != "" && ref.Digest != fetched.Digest:
		return &artifact.DigestMismatchError{Ref: ref.String(), Expected: ref.Digest, Actual: fetched.Digest}
	}
	at := *fetched
	at.Ref, at.Revision = ref, ref.Tag+"@"+fetched.Digest
	spec := obj.GetSpec()
	if _, err := r.Cache.check(&at, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace(), nil); err != nil {
		return err
	}
	r.Resolutions.put(obj, ref.String(), fetched.Digest, kept{}, time.Now(), 0)
	return nil
}

// fetchArtifact asks the registry what ref names now and, for
// components, fetches and checks the artifact (once per digest: the cache
// keeps it). The registry has at most RegistryTimeout to answer. When it
// cannot be reached, the revision installed for this spec stays, if there
// is one (stillInstalled).
func (r *Resolver) fetchArtifact(ctx context.Context, obj v1alpha1.Provider, ref artifact.Reference) (providerplan.Artifact, *plan.Refusal) {
	spec := obj.GetSpec()
	timeout := r.Timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(what string, err error) *plan.Refusal {
		msg := fmt.Sprintf("%s %s: %v", what, ref.String(), err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf("; the registry did not answer within %s (the manager's --registry-timeout)", timeout)
		}
		if artifact.Unreachable(err) {
			r.unreached(obj, err)
		}
		// Looked at again within a minute, sooner with a shorter interval.
		return unresolved(fetchFailureReason(err), msg+accessHint(obj, err), min(time.Minute, r.Interval(obj)))
	}
	access, err := r.Access(ctx, obj, ref.URL())
	if err != nil {
		return providerplan.Artifact{}, unresolved(v1alpha1.AuthenticationFailedReason, err.Error(), 0)
	}
	if render.IsChart(obj) {
		// A chart is Helm's to read; the plan pins the digest the tag names.
		digest, err := r.Fetcher.Resolve(ctx, ref, access)
		if err != nil {
			if res, ok := r.stillInstalled(ctx, obj, ref, err); ok {
				return res, nil
			}
			return providerplan.Artifact{}, fail("chart", err)
		}
		return providerplan.Artifact{URL: ref.URL(), Tag: spec.Version, Digest: digest, Revision: spec.Version + "@" + digest}, nil
	}
	pa, err := r.Cache.Fetch(ctx, r.Fetcher, ref, access, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace())
	if err != nil {
		if res, ok := r.stillInstalled(ctx, obj, ref, err); ok {
			return res, nil
		}
		return providerplan.Artifact{}, fail("artifact", err)
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: spec.Version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa}, nil
}

// recentlyResolved is the result of resolving ref again when the
// provider resolved it recently (Resolutions) and its artifact is cached.
func (r *Resolver) recentlyResolved(obj v1alpha1.Provider, ref artifact.Reference) (providerplan.Artifact, bool) {
	digest, held, ok := r.Resolutions.get(obj, ref.String(), r.Interval(obj)/2, time.Now())
	if !ok {
		return providerplan.Artifact{}, false
	}
	version := obj.GetSpec().Version
	if render.IsChart(obj) {
		return providerplan.Artifact{URL: ref.URL(), Tag: version, Digest: digest, Revision: version + "@" + digest, Unreachable: held.message, KeptReason: held.reason}, true
	}
	pa := r.Cache.Cached(digest, obj.ProviderType(), obj.GetName(), version)
	if pa == nil {
		return providerplan.Artifact{}, false
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa, Unreachable: held.message, KeptReason: held.reason}, true
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
