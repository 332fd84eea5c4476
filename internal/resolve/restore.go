package resolve

import (
	"context"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// PackedRelease is the release artifact of digest served, to serve it
// again when the artifact storage lost it: the provider's checked release
// from memory, else from its copy in the cluster, else fetched again from
// its installed URL and version; nil when none gives that digest.
func (r *Resolver) PackedRelease(ctx context.Context, obj v1alpha1.Provider, served string) []byte {
	q := r.about(obj)
	prev := q.installed
	if prev == nil || prev.Digest != served || len(prev.Files) == 0 {
		return nil
	}
	version, _, _ := strings.Cut(prev.Revision, "@")
	if ca := r.Cache.Cached(served, q.providerType, q.name, version); ca != nil && ca.Release != nil {
		return ca.Release.Packed
	}
	if packed := r.Copies.Read(ctx, &q, served); packed != nil {
		return packed
	}
	if version != q.version {
		return nil // fetchRelease fetches spec.version only
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	ca, err := r.fetchReleaseFrom(ctx, &q, prev.URL)
	if err != nil || ca.Fetched.Digest != served {
		return nil
	}
	return ca.Release.Packed
}
