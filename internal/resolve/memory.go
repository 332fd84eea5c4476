package resolve

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/capwright/capwright/internal/artifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// What the resolver remembers between a provider's reconciles, in memory
// only (a restarted manager asks again): what each tag or release resolved
// to, and the checked artifacts by digest. They spare the registry and the
// decoding, never a check.

// recall is what the provider's source resolved to recently
// (Resolutions), as long as its checked artifact is still cached (a
// chart's digest alone).
func (r *Resolver) recall(q *query) (providerplan.Artifact, bool) {
	digest, held, ok := r.Resolutions.get(q, q.key, q.maxAge, time.Now())
	if !ok {
		return providerplan.Artifact{}, false
	}
	if q.chart {
		return providerplan.Artifact{URL: q.sourceURL(), Tag: q.version, Digest: digest, Revision: q.version + "@" + digest, Unreachable: held.message, KeptReason: held.reason}, true
	}
	ca := r.Cache.Cached(digest, q.providerType, q.name, q.version)
	if ca == nil || (q.release && ca.Release == nil) {
		return providerplan.Artifact{}, false
	}
	return checkedArtifact(q, ca, held), true
}

// remember records what the provider's source resolved to, or (a kept)
// that the installed revision stays and why; ttl, when set, bounds how
// long that holds.
func (r *Resolver) remember(q *query, a providerplan.Artifact, ttl time.Duration) {
	r.Resolutions.put(q, q.key, a.Digest, kept{reason: a.KeptReason, message: a.Unreachable}, time.Now(), ttl)
}

// checkedArtifact is the plan's view of a checked artifact of the
// provider's source; held, when set, says why it is the installed one
// rather than what the source serves.
func checkedArtifact(q *query, ca *CheckedArtifact, held kept) providerplan.Artifact {
	return providerplan.Artifact{URL: q.sourceURL(), Tag: q.version, Digest: ca.Fetched.Digest, Revision: ca.Fetched.Revision, Checked: ca,
		Release: ca.Release, Unreachable: held.message, KeptReason: held.reason}
}

// Resolutions remember, per provider, the digest its tag resolved to.
// A provider reconciles on every status change of its Flux objects — a
// dozen times or more per install — and asking the registry each time
// would put a registry round trip before every fold (and count against
// registry rate limits). The tag is resolved again when the spec changes
// (a new generation), on a reconcile request (reconcile.fluxcd.io/
// requestedAt), and at least every half resync interval, so a moved tag is
// still noticed within the resync interval.
type Resolutions struct {
	mu sync.Mutex
	m  map[types.UID]resolution
}

type resolution struct {
	generation int64
	request    string
	ref        string
	digest     string
	// held is why digest is the installed one rather than what the
	// registry or release host answered (it could not be asked, or a
	// release changed).
	held kept
	at   time.Time
	// ttl, when set, is shorter than the age get is asked for: a
	// release host that could not be asked is asked again sooner.
	ttl time.Duration
}

// kept says why the installed revision stays: the ArtifactResolved reason
// and message (providerplan.Artifact.KeptReason and Unreachable); zero when
// the artifact is what the source answered.
type kept struct{ reason, message string }

// get returns the digest ref resolved to for the provider's current
// generation and reconcile request, if it was resolved within maxAge, and
// why the digest is the installed one when it is.
func (r *Resolutions) get(q *query, ref string, maxAge time.Duration, now time.Time) (digest string, held kept, ok bool) {
	if r == nil {
		return "", kept{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.m[q.uid]
	if !ok || res.generation != q.generation || res.request != q.request ||
		res.ref != ref || now.Sub(res.at) >= maxAge || (res.ttl > 0 && now.Sub(res.at) >= res.ttl) {
		return "", kept{}, false
	}
	return res.digest, res.held, true
}

// put records that ref resolved to digest, or (held says why) that digest
// is the installed one; ttl, when set, bounds how long that holds.
func (r *Resolutions) put(q *query, ref, digest string, held kept, now time.Time, ttl time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]resolution{}
	}
	r.m[q.uid] = resolution{generation: q.generation, request: q.request,
		ref: ref, digest: digest, held: held, at: now, ttl: ttl}
}

// forget drops the provider's resolution (it is deleted).
func (r *Resolutions) forget(uid types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, uid)
}

// ArtifactCache keeps checked provider artifacts by manifest digest, so a
// resync resolves the tag (one small request) but does not download and
// unpack the same artifact again. It is bounded by count and by bytes; the
// oldest entries go first.
type ArtifactCache struct {
	// Max is the number of artifacts kept; default 32.
	Max int
	// MaxBytes bounds the bytes of the artifacts' files kept; default
	// DefaultCacheBytes. The artifact just fetched is kept whatever its
	// size (the fetch bounds it), alone if it must be.
	MaxBytes int64

	mu      sync.Mutex
	entries map[string]*CheckedArtifact
	order   []string
	bytes   int64
}

// DefaultCacheBytes is the default byte bound of an ArtifactCache: one
// artifact of the largest size the fetcher accepts by default, a small
// share of the manager's memory limit, and room for dozens of real
// provider releases (a core components file is about 1.2 MB).
const DefaultCacheBytes = artifact.DefaultMaxArtifactSize

// CheckedArtifact is a checked provider artifact, with the analysis of
// its components kept with it (providerplan.CheckedArtifact).
type CheckedArtifact = providerplan.CheckedArtifact

// Fetch resolves ref and returns its checked artifact, downloading it only
// when its digest is not cached.
func (c *ArtifactCache) Fetch(ctx context.Context, f *artifact.Fetcher, ref artifact.Reference, access artifact.Access, providerType, name, version, namespace string) (*CheckedArtifact, error) {
	digest, err := f.Resolve(ctx, ref, access)
	if err != nil {
		return nil, err
	}
	if ca := c.Cached(digest, providerType, name, version); ca != nil {
		return ca, nil
	}
	// Fetch exactly what was resolved, even if the tag moves meanwhile.
	pinned := ref
	pinned.Digest = digest
	fetched, err := f.Fetch(ctx, pinned, access)
	if err != nil {
		return nil, err
	}
	return c.check(fetched, providerType, name, version, namespace, nil)
}

// check checks fetched as the provider's artifact (the files of a
// release, with release, are checked as the same layout) and keeps it by
// its digest.
func (c *ArtifactCache) check(fetched *artifact.Fetched, providerType, name, version, namespace string, release *providerplan.Release) (*CheckedArtifact, error) {
	pa, err := artifact.CheckProviderArtifact(fetched, providerType, name, version)
	if err != nil {
		return nil, err
	}
	ca := providerplan.NewCheckedArtifact(pa, namespace, version)
	ca.Release = release
	ca = c.put(cacheKey(fetched.Digest, providerType, name, version), ca)
	// Decode the components while the reconcile goes on with the cheap
	// checks (or waits for the core provider).
	go ca.Analyse()
	return ca, nil
}

// Cached returns the checked artifact of digest for the provider and
// version, nil if it is not cached.
func (c *ArtifactCache) Cached(digest, providerType, name, version string) *CheckedArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[cacheKey(digest, providerType, name, version)]
}

func cacheKey(digest, providerType, name, version string) string {
	return digest + " " + providerType + "/" + name + "@" + version
}

// put keeps ca under key and returns the entry kept: one fetched at the
// same time by another reconcile wins, so its analysis is shared.
func (c *ArtifactCache) put(key string, ca *CheckedArtifact) *CheckedArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*CheckedArtifact{}
	}
	if kept, ok := c.entries[key]; ok {
		return kept
	}
	maxCount, maxBytes := c.Max, c.MaxBytes
	if maxCount <= 0 {
		maxCount = 32
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	size := ca.Size()
	for len(c.order) > 0 && (len(c.order) >= maxCount || c.bytes+size > maxBytes) {
		c.bytes -= c.entries[c.order[0]].Size()
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = ca
	c.order = append(c.order, key)
	c.bytes += size
	return ca
}

// Bytes is what the cached artifacts' files hold.
func (c *ArtifactCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
