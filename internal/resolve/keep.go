package resolve

import (
	"context"
	"fmt"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

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
	ctx, cancel := context.WithTimeout(ctx, r.Timeout())
	defer cancel()
	ca, err := r.fetchRelease(ctx, &q, prev.URL)
	if err != nil || ca.Fetched.Digest != served {
		return nil
	}
	return ca.Release.Packed
}
