package upgrades

import (
	"context"
	"errors"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

const testMetadata = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- {major: 0, minor: 1, contract: v1beta2}
- {major: 0, minor: 2, contract: v1beta3}
`

func push(t *testing.T, reg *registrytest.Registry, version string) {
	t.Helper()
	ref := reg.Ref("capi/manifests/infrastructure-test", version)
	files := map[string][]byte{"metadata.yaml": []byte(testMetadata), "infrastructure-components.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: test\n")}
	if _, err := artifact.Push(context.Background(), ref, files, artifact.ProviderAnnotations("infrastructure", "test", version, ""), reg.Access()); err != nil {
		t.Fatal(err)
	}
}

func TestListerOCI(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Options{})
	for _, v := range []string{"v0.1.0", "v0.1.1", "v0.2.0"} {
		push(t, reg, v)
	}
	url := reg.Ref("capi/manifests/infrastructure-test", "").URL()
	l := &Lister{Fetcher: &artifact.Fetcher{}}

	before := reg.Reads()
	got, err := l.OCI(ctx, url, reg.Access())
	if err != nil {
		t.Fatal(err)
	}
	if got.Newest != "v0.2.0" || len(got.Versions) != 3 || got.Metadata == nil || len(got.Metadata.ReleaseSeries) != 2 {
		t.Fatalf("listing: %+v", got)
	}
	cold := reg.Reads() - before

	// The second check finds the newest tag's metadata cached by digest:
	// the tag list and one resolve.
	before = reg.Reads()
	if _, err := l.OCI(ctx, url, reg.Access()); err != nil {
		t.Fatal(err)
	}
	warm := reg.Reads() - before
	if warm != 2 || l.CacheHits() != 1 {
		t.Errorf("warm check: %d requests, %d cache hits; want 2 requests (tag list, resolve) and 1 hit (cold: %d)", warm, l.CacheHits(), cold)
	}
	if cold != 5 {
		t.Errorf("cold check: %d requests, want 5 (tags, resolve, resolve, manifest, layer), as docs/providers.md says", cold)
	}

	_, err = l.OCI(ctx, reg.Ref("capi/manifests/missing", "").URL(), reg.Access())
	var nf *artifact.NotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("missing repository: %v, want *artifact.NotFoundError", err)
	}
}
