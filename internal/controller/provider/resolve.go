package provider

import (
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

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
	// unreachable is why the registry could not be asked, when digest is
	// the installed one (PreflightResult.Unreachable).
	unreachable string
	at          time.Time
}

// get returns the digest ref resolved to for the provider's current
// generation and reconcile request, if it was resolved within maxAge, and
// why the registry could not be asked when the digest is the installed one.
func (r *Resolutions) get(obj v1alpha1.Provider, ref string, maxAge time.Duration, now time.Time) (digest, unreachable string, ok bool) {
	if r == nil {
		return "", "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.m[obj.GetUID()]
	if !ok || res.generation != obj.GetGeneration() || res.request != obj.GetAnnotations()[meta.ReconcileRequestAnnotation] ||
		res.ref != ref || now.Sub(res.at) >= maxAge {
		return "", "", false
	}
	return res.digest, res.unreachable, true
}

// put records that ref resolved to digest, or that the registry could not
// be reached (unreachable says why) and digest is the installed one.
func (r *Resolutions) put(obj v1alpha1.Provider, ref, digest, unreachable string, now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]resolution{}
	}
	r.m[obj.GetUID()] = resolution{generation: obj.GetGeneration(), request: obj.GetAnnotations()[meta.ReconcileRequestAnnotation],
		ref: ref, digest: digest, unreachable: unreachable, at: now}
}

// forget drops the provider's resolution (it is deleted).
func (r *Resolutions) forget(obj v1alpha1.Provider) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, obj.GetUID())
}
