package mirror_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// cachedRun mirrors the source's references with the cache and returns the
// summary and how many requests the source and the target served.
func cachedRun(t *testing.T, src *source, dst *registrytest.Registry, cache *mirror.Cache) (summary *mirror.Summary, sourceReads, targetReads, targetWrites int64) {
	t.Helper()
	srcReads, dstReads, dstWrites := src.reg.Reads(), dst.Reads(), dst.Writes()
	summary, err := mirror.Run(context.Background(), src.refs(), mirror.Options{
		Target:       mirror.Target{Host: dst.Host, Prefix: "mirror"},
		SourceAccess: src.reg.Access(), TargetAccess: dst.Access(),
		Cache: cache,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return summary, src.reg.Reads() - srcReads, dst.Reads() - dstReads, dst.Writes() - dstWrites
}

// cached lists which results the cache vouched for, by provider.
func cached(src *source, s *mirror.Summary) map[string]bool {
	out := map[string]bool{}
	for i, r := range s.Results {
		out[src.providers[i].Provider.Type] = r.Cached
	}
	return out
}

func TestMirrorCacheReRun(t *testing.T) {
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{})
	cache := mirror.NewCache(t.TempDir())

	first, _, _, _ := cachedRun(t, src, dst, cache)
	if first.Artifacts.Copied != 3 || first.Images.Copied != 3 {
		t.Fatalf("first run: artifacts %+v, images %+v; want everything copied", first.Artifacts, first.Images)
	}
	for _, r := range first.Results {
		if r.Cached {
			t.Errorf("%s: the first run says the cache vouched for it", r.Name())
		}
	}

	// The re-run asks the source for the three artifact tags, the target
	// for the three artifact tags, and nothing else: six requests for the
	// six references (three artifacts, the three images they run).
	again, sourceReads, targetReads, writes := cachedRun(t, src, dst, cache)
	if sourceReads != 3 || targetReads != 3 || writes != 0 {
		t.Errorf("re-run: %d requests to the source, %d reads and %d writes at the target; want 3, 3 and 0", sourceReads, targetReads, writes)
	}
	if again.Artifacts != (mirror.Tally{Skipped: 3}) || again.Images != (mirror.Tally{Skipped: 3}) || again.Blobs != (mirror.BlobTally{}) {
		t.Errorf("re-run: artifacts %+v, images %+v, blobs %+v; want 3 and 3 already present, no blob walked", again.Artifacts, again.Images, again.Blobs)
	}
	for i, r := range again.Results {
		if !r.Cached || !r.Skipped || r.Digest != src.providers[i].Digest || len(r.Images) != 1 {
			t.Errorf("re-run %s: cached %v, skipped %v, digest %s (want %s), %d images", r.Name(), r.Cached, r.Skipped, r.Digest, src.providers[i].Digest, len(r.Images))
		}
	}

	// Without the cache, the same run walks everything.
	_, sourceReads, targetReads, _ = cachedRun(t, src, dst, nil)
	if sourceReads+targetReads < 30 {
		t.Errorf("a run without the cache made only %d requests: the walk the cache spares is not measured", sourceReads+targetReads)
	}
}

// TestMirrorCacheNoticesChanges moves an artifact tag at the source and
// takes a copy away from the target: each is noticed at once, and the
// reference it concerns mirrored again, the others still vouched for. A
// moved image tag is noticed once the record is a day old.
func TestMirrorCacheNoticesChanges(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host, Prefix: "mirror"}
	cache := mirror.NewCache(t.TempDir())
	now := time.Now()
	mirror.SetCacheClock(cache, func() time.Time { return now })
	cachedRun(t, src, dst, cache)

	// The core artifact's tag moves to new content.
	core := src.providers[0]
	moved := core.Provider
	moved.Files = map[string][]byte{}
	for name, data := range core.Provider.Files {
		moved.Files[name] = data
	}
	file := "core-components.yaml"
	moved.Files[file] = append(append([]byte{}, moved.Files[file]...), []byte("\n# rebuilt\n")...)
	newDigest, err := artifact.Push(ctx, core.Ref, moved.Files, artifact.ProviderAnnotations("core", "cluster-api", core.Provider.Version, ""), src.reg.Access())
	if err != nil {
		t.Fatal(err)
	}
	s, _, _, _ := cachedRun(t, src, dst, cache)
	if got := cached(src, s); got["core"] || !got["bootstrap"] || !got["control-plane"] {
		t.Errorf("after the core artifact's tag moved, cached = %v; want all but core", got)
	}
	if desc, ok := resolveAt(t, dst.Access(), targetRef(target, core.Ref)); !ok || desc.Digest.String() != newDigest {
		t.Errorf("the target's core tag is at %s, want the moved tag's %s", desc.Digest, newDigest)
	}

	// The bootstrap controller image's tag moves to another image.
	bootstrap := src.providers[1]
	var image mirrortest.PushedImage
	for _, img := range bootstrap.Images {
		image = img
	}
	replaced := mirrortest.PushImage(t, src.reg.Access(), image.Ref, mirrortest.SmallImage(mirrortest.SeedOf("replaced")))
	s, _, _, _ = cachedRun(t, src, dst, cache)
	if got := cached(src, s); !got["bootstrap"] {
		t.Errorf("within the day, a moved image tag is taken as recorded; cached = %v", got)
	}
	now = now.Add(mirror.CompletionTTL + time.Minute)
	s, _, _, _ = cachedRun(t, src, dst, cache)
	if got := cached(src, s); got["bootstrap"] || got["core"] || got["control-plane"] {
		t.Errorf("a day later, cached = %v; want every reference walked again", got)
	}
	if desc, ok := resolveAt(t, dst.Access(), targetRef(target, image.Ref)); !ok || desc.Digest != replaced.Index.Digest {
		t.Errorf("the target's bootstrap image tag is at %s, want the moved tag's %s", desc.Digest, replaced.Index.Digest)
	}

	// The target loses the control-plane artifact's tag.
	cp := targetRef(target, src.providers[2].Ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://"+cp.Host+"/v2/"+cp.Repository+"/manifests/"+cp.Tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s at the target: %v %v", cp, err, resp)
	}
	resp.Body.Close()
	s, _, _, _ = cachedRun(t, src, dst, cache)
	if got := cached(src, s); got["control-plane"] || !got["core"] || !got["bootstrap"] {
		t.Errorf("after the target lost the control-plane tag, cached = %v; want all but control-plane", got)
	}
	if _, ok := resolveAt(t, dst.Access(), cp); !ok {
		t.Errorf("the control-plane tag was not written again at the target")
	}

	// Everything is vouched for again; another target is not.
	s, _, _, _ = cachedRun(t, src, dst, cache)
	if got := cached(src, s); !got["core"] || !got["bootstrap"] || !got["control-plane"] {
		t.Errorf("after the changes were mirrored, cached = %v; want all", got)
	}
	other := registrytest.New(t, registrytest.Options{})
	s, _, _, _ = cachedRun(t, src, other, cache)
	if s.Artifacts.Copied != 3 {
		t.Errorf("another target: artifacts %+v, want 3 copied", s.Artifacts)
	}
}
