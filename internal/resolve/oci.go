package resolve

import (
	"context"
	"fmt"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// A provider installed from an OCI repository: its tag resolved to a
// digest (a chart stops there), the artifact of that digest fetched and
// checked once, and kept by digest.

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

// fetchOCI asks the registry what the provider's tag names now and, for
// components, fetches and checks the artifact (once per digest: the cache
// keeps it); a chart is Helm's to read, so only its digest is asked for,
// and the plan pins it.
func (r *Resolver) fetchOCI(ctx context.Context, q *query) (providerplan.Artifact, error) {
	access, err := r.access(ctx, q, q.ref.URL())
	if err != nil {
		return providerplan.Artifact{}, &accessError{err}
	}
	if q.chart {
		digest, err := r.Fetcher.Resolve(ctx, q.ref, access)
		if err != nil {
			return providerplan.Artifact{}, err
		}
		return providerplan.Artifact{URL: q.ref.URL(), Tag: q.version, Digest: digest, Revision: q.version + "@" + digest}, nil
	}
	ca, err := r.Cache.Fetch(ctx, r.Fetcher, q.ref, access, q.providerType, q.name, q.version, q.namespace)
	if err != nil {
		return providerplan.Artifact{}, err
	}
	return checkedArtifact(q, ca, kept{}), nil
}

// accessError is a provider's registry access that cannot be built from
// its Secrets: the registry was not asked.
type accessError struct{ err error }

func (e *accessError) Error() string { return e.err.Error() }
