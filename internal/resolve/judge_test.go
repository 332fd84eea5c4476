package resolve

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// TestAReleaseChangedUnderItsVersionIsKeptUntilPinned: files re-uploaded
// under the installed version keep the installed revision (ReleaseChanged)
// until spec.source.release.digest pins the new files, which are then
// installed.
func TestAReleaseChangedUnderItsVersionIsKeptUntilPinned(t *testing.T) {
	const url, version, installed, uploaded = "https://github.com/example/cluster-api/releases", "v1.14.2", "sha256:installed", "sha256:uploaded"
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api", Namespace: "capi-system", UID: "u1", Generation: 1}}
	p.Spec.Version = version
	p.Spec.Source = &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: url}}
	p.Status.InstalledVersion = version
	p.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: url, Revision: version + "@" + installed, Digest: installed,
		Files: []v1alpha1.ReleaseFile{{Name: "core-components.yaml", SHA256: "aaaa"}}}
	r := &Resolver{Cache: &ArtifactCache{}}
	r.Cache.put(cacheKey(installed, p.ProviderType(), p.Name, version), sized(10))
	fetched := providerplan.Artifact{URL: url, Tag: version, Digest: uploaded, Revision: version + "@" + uploaded,
		Release: &providerplan.Release{Files: []v1alpha1.ReleaseFile{{Name: "core-components.yaml", SHA256: "bbbb"}}}}

	q := r.about(p)
	q.url, q.release = url, true
	a, _, refusal := r.judge(context.Background(), &q, fetched, nil)
	if refusal != nil || a.Digest != installed || a.KeptReason != v1alpha1.ReleaseChangedReason {
		t.Fatalf("changed files without a pin: %+v, refusal %v; want %s kept for ReleaseChanged", a, refusal, installed)
	}

	q.pin = uploaded
	a, _, refusal = r.judge(context.Background(), &q, fetched, nil)
	if refusal != nil || a.Digest != uploaded || a.KeptReason != "" {
		t.Fatalf("changed files pinned: %+v, refusal %v; want the pinned %s installed", a, refusal, uploaded)
	}

	q.pin = "sha256:other"
	if _, _, refusal = r.judge(context.Background(), &q, fetched, nil); refusal == nil || refusal.Reason != v1alpha1.DigestMismatchReason {
		t.Fatalf("a pin of other files: refusal %v, want DigestMismatch", refusal)
	}
}
