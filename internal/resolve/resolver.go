// Package resolve is a provider's resolution stage: for a provider's spec
// and the manager's settings it answers one question — which checked
// artifact (digest, files, contract, components analysis) is to be
// installed, or the refusal that says why not. The provider controller
// asks it once per reconcile, before it gathers the slower facts; nothing
// after that reaches back into it.
//
// Where a provider's artifact comes from (Resolve, in order):
//
//   - query.go reads the provider once, and the catalog and the mirror
//     rules (catalog.Locate) turn its spec into an OCI repository
//     (spec.source.oci or .chart, or a catalog provider Cluster API
//     publishes as an OCI artifact) or a release URL (spec.source.release,
//     or a catalog provider's GitHub release);
//   - memory.go recalls what that source resolved to recently, while the
//     checked artifact is cached;
//   - otherwise the source is asked: an OCI tag is resolved to its digest
//     (a chart stops there: Helm reads it) and the artifact of that digest
//     fetched and checked (oci.go), or a release's metadata.yaml and
//     components file of spec.version are fetched, checked and packed into
//     one artifact by digest (release.go), with the credentials and CAs of
//     the Secrets spec.source names (access.go);
//   - judge.go makes the answer a decision: a registry or release host
//     that cannot be asked, or a release that changed under its version,
//     keeps the revision installed for the spec; a release is held to
//     spec.source.release.digest; anything else that failed is refused,
//     with the reason and the fix;
//   - memory.go remembers the decision.

// When it is fetched again (memory.go holds what is remembered, in memory
// only — a restarted manager asks again):
//
//   - an OCI tag is resolved again on a new generation, on a reconcile
//     request (reconcile.fluxcd.io/requestedAt), and at least every half
//     resync interval (Interval); a digest already checked is never
//     downloaded again while it is cached (ArtifactCache);
//   - a release is fetched again on a new generation, on a reconcile
//     request, and every ReleaseSettings.Recheck (default six hours), to
//     notice files re-uploaded under the same version;
//   - a host that could not be asked is asked again within a minute
//     (sooner with a shorter interval), one that answered no within the
//     resync interval;
//   - every request to a registry or release host is bounded by
//     RegistryTimeout;
//   - the upgrade check lists the source's versions at its own low rate
//     (Versions; the provider controller's UpgradeChecks say when).
package resolve

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/releasecopy"
)

// Resolver resolves providers' artifacts; one is shared by the
// reconcilers of every provider kind of a manager.
type Resolver struct {
	// Client reads the provider's Flux source objects (cached).
	Client ctrl.Reader
	// Reader reads without the cache: the Secrets of spec.source.
	Reader ctrl.Reader
	// Fetcher resolves and fetches OCI artifacts.
	Fetcher *artifact.Fetcher
	// Cache keeps checked artifacts by digest (required).
	Cache *ArtifactCache
	// Resolutions remembers what each provider's tag or release resolved
	// to, so reconciles woken by Flux's progress do not ask again; nil
	// asks every time.
	Resolutions *Resolutions
	// Mirrors are the manager's mirror rules.
	Mirrors catalog.Mirrors
	// CatalogOCIArtifacts installs the providers Cluster API is to publish as
	// provider artifacts from their OCI repository rather than their
	// release assets (--catalog-oci-artifacts).
	CatalogOCIArtifacts bool
	// InsecureRegistries are hosts reached over plain HTTP although the
	// provider does not say so itself (a plain-HTTP mirror of catalog
	// providers).
	InsecureRegistries []string
	// Releases are the settings for release hosts.
	Releases ReleaseSettings
	// Copies are the release copies kept in the cluster, read to serve a
	// release again when the host is down.
	Copies releasecopy.Store
	// RegistryTimeout bounds the registry's share of one reconcile
	// (resolving, fetching); default DefaultRegistryTimeout.
	RegistryTimeout time.Duration
	// ResyncInterval bounds how long a tag move goes unnoticed when
	// spec.interval is longer.
	ResyncInterval time.Duration
	// BaseAccess, when set, is the registry access every provider's
	// artifact is fetched with, and the Secrets of spec.source (registry
	// and release credentials, CAs) are not read: `capwright build`,
	// which has the CLI's flags and the docker credential chain instead
	// of the cluster's Secrets.
	BaseAccess *artifact.Access
	// OnUnreachable, when set, is told of every provider whose registry
	// or release host could not be asked (down, unknown, hanging), not
	// that it answered no: `capwright build` then stops with the offline
	// alternative rather than reporting a refusal.
	OnUnreachable func(obj v1alpha1.Provider, err error)
}

// Result is what resolving a provider found.
type Result struct {
	// Artifact is the checked artifact to install (or, Keep, the revision
	// installed to leave in place).
	Artifact providerplan.Artifact
	// Release tells a provider installed from release files.
	Release bool
	// Refusal says why nothing can be installed; nil when Artifact holds.
	Refusal *plan.Refusal
	// SourcePins tells, for a provider not installed yet, whether its
	// Flux source already pins the artifact's digest.
	SourcePins bool
	// Interval is how often the provider is looked at again (Interval),
	// which the recheck schedule follows.
	Interval time.Duration

	// resolver and query list the source's versions (Versions).
	resolver *Resolver
	query    query
}

// Resolve finds, fetches and checks the desired version's artifact of
// obj: from its release files or its OCI repository, from memory when it
// was resolved recently (see the package comment). A suspended provider
// is not resolved.
func (r *Resolver) Resolve(ctx context.Context, obj v1alpha1.Provider) Result {
	q := r.about(obj)
	res := Result{Interval: q.interval, resolver: r, query: q}
	if obj.GetSpec().Suspend {
		return res
	}
	if err := r.locate(&q); err != nil {
		res.Refusal = unresolved(v1alpha1.ResolveFailedReason, err.Error(), 0)
		return res
	}
	res.Release = q.release
	a, ok := r.recall(&q)
	if !ok {
		fetched, err := r.fetch(ctx, &q)
		var ttl time.Duration
		if a, ttl, res.Refusal = r.judge(ctx, &q, fetched, err); res.Refusal == nil {
			r.remember(&q, a, ttl)
		}
	}
	res.Artifact = a
	if res.Refusal == nil && !a.Keep && q.installedVersion == "" {
		res.SourcePins = r.pins(ctx, &q, a.Digest)
	}
	return res
}

// fetch asks the provider's source for the desired version now, within
// the registry timeout: its release files (release.go) or its OCI
// artifact (oci.go), fetched and checked once per digest (the cache
// keeps it); judge makes the answer a decision.
func (r *Resolver) fetch(ctx context.Context, q *query) (providerplan.Artifact, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	if q.release {
		return r.fetchRelease(ctx, q)
	}
	return r.fetchOCI(ctx, q)
}

// Forget drops what is remembered of a deleted provider.
func (r *Resolver) Forget(obj v1alpha1.Provider) { r.Resolutions.forget(obj.GetUID()) }

// Interval is how often the provider is looked at again: the shorter of
// spec.interval and the manager's resync interval.
func (r *Resolver) Interval(obj v1alpha1.Provider) time.Duration {
	return providerplan.Interval(obj, r.ResyncInterval)
}

// catalogOptions are the manager's settings for where providers come
// from.
func (r *Resolver) catalogOptions() catalog.Options {
	return catalog.Options{Mirrors: r.Mirrors, OCIArtifacts: r.CatalogOCIArtifacts}
}

// DefaultRegistryTimeout bounds the registry's share of one reconcile when
// the manager sets no RegistryTimeout.
const DefaultRegistryTimeout = 2 * time.Minute

// timeout is the registry's share of one reconcile.
func (r *Resolver) timeout() time.Duration {
	if r.RegistryTimeout > 0 {
		return r.RegistryTimeout
	}
	return DefaultRegistryTimeout
}
