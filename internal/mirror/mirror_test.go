package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// TestMirrorProviders mirrors the core, kubeadm bootstrap and kubeadm
// control-plane providers with their images and SBOMs from a plain HTTP
// registry to a TLS registry with basic auth, then mirrors again.
func TestMirrorProviders(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{TLS: true, Username: "mirror", Password: "s3cret"})
	target := mirror.Target{Host: dst.Host, Prefix: "airgap/capi"}
	rec := &events{}
	opts := mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.Access(), Progress: rec}

	summary, err := mirror.Run(ctx, src.refs(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if summary.Artifacts != (mirror.Tally{Copied: 3}) || summary.Images != (mirror.Tally{Copied: 3}) || summary.Blobs.Failed != 0 {
		t.Errorf("first run: artifacts %+v, images %+v, blobs %+v; want all 3 artifacts and 3 images copied", summary.Artifacts, summary.Images, summary.Blobs)
	}

	for _, p := range src.providers {
		// The artifact: same digest, tag resolves, contract intact.
		to := targetRef(target, p.Ref)
		desc, ok := resolveAt(t, dst.Access(), to)
		if !ok || desc.Digest.String() != p.Digest {
			t.Errorf("%s at the target: %v (found %v), want %s", to, desc.Digest, ok, p.Digest)
		}
		fetched, err := (&artifact.Fetcher{}).Fetch(ctx, to, dst.Access())
		if err != nil {
			t.Fatalf("fetching the mirrored %s: %v", to, err)
		}
		if _, err := artifact.CheckProviderArtifact(fetched, p.Provider.Type, p.Provider.Name, p.Provider.Version); err != nil {
			t.Errorf("mirrored %s: %v", to, err)
		}
		// Its images: index, every platform, every blob, same digests.
		for written, img := range p.Images {
			imgTo := targetRef(target, img.Ref)
			desc, ok := resolveAt(t, dst.Access(), imgTo)
			if !ok || desc.Digest != img.Index.Digest {
				t.Errorf("image %s at %s: %v (found %v), want %s", written, imgTo, desc.Digest, ok, img.Index.Digest)
			}
			for _, d := range slices.Concat(img.Manifests, img.Blobs, []ocispec.Descriptor{img.Index}) {
				if !existsAt(t, dst.Access(), imgTo, d) {
					t.Errorf("image %s: %s %s missing at %s", written, d.MediaType, d.Digest, imgTo)
				}
			}
		}
	}

	// Referrers of the artifact, of the image index and of one platform.
	core := src.providers[0]
	checkReferrers := func(ref artifact.Reference) {
		t.Helper()
		for _, sbom := range src.sboms[ref.Repository] {
			if !existsAt(t, dst.Access(), targetRef(target, ref), sbom) {
				t.Errorf("SBOM %s of %s not mirrored", sbom.Digest, ref)
			}
		}
		subject := mirrortest.Resolve(t, src.reg.Access(), ref)
		found := referrersAt(t, dst.Access(), targetRef(target, ref), subject)
		if len(found) != 1 || found[0].Digest != src.sboms[ref.Repository][0].Digest {
			t.Errorf("referrers of %s at the target = %v, want its SBOM", ref, found)
		}
	}
	checkReferrers(core.Ref)
	for _, img := range core.Images {
		checkReferrers(img.Ref)
		arm := referrersAt(t, dst.Access(), targetRef(target, img.Ref), img.Manifests[1])
		if len(arm) != 1 {
			t.Errorf("referrers of the arm64 manifest of %s at the target = %v, want its SBOM", img.Ref, arm)
		}
	}

	// The shared base layer went up once, however many images use it.
	if n := rec.count(mirror.BlobCopied, mirrortest.SharedBase.Digest().String()); n != 1 {
		t.Errorf("the shared base layer was uploaded %d times, want once", n)
	}
	var unique int64
	seen := map[string]bool{}
	for _, img := range src.images() {
		for _, b := range img.Blobs {
			if !seen[b.Digest.String()] {
				seen[b.Digest.String()] = true
				unique += b.Size
			}
		}
	}
	if summary.Blobs.BytesCopied < unique {
		t.Errorf("copied %d bytes of blobs, the images alone hold %d distinct", summary.Blobs.BytesCopied, unique)
	}

	// The rules send every artifact and image where it was copied, and
	// survive the file format the controller reads.
	path := filepath.Join(t.TempDir(), "mirror-rules.txt")
	var buf bytes.Buffer
	if err := mirror.WriteRules(&buf, summary, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := catalog.ReadMirrorFile(path)
	if err != nil {
		t.Fatalf("ReadMirrorFile: %v", err)
	}
	if want := (catalog.Mirrors{{From: src.reg.Host, To: target.String()}}); !slices.Equal(rules, want) {
		t.Errorf("rules = %v, want %v", rules, want)
	}
	for _, p := range src.providers {
		to := targetRef(target, p.Ref)
		if got, _ := rules.Rewrite(p.Ref.Host + "/" + p.Ref.Repository); got != to.Host+"/"+to.Repository {
			t.Errorf("rules rewrite %s to %s, copied to %s/%s", p.Ref, got, to.Host, to.Repository)
		}
		for written, img := range p.Images {
			to := targetRef(target, img.Ref)
			name := strings.TrimSuffix(written, ":"+img.Ref.Tag)
			if got, _ := rules.Rewrite(name); got != to.Host+"/"+to.Repository {
				t.Errorf("rules rewrite image %s to %s, copied to %s/%s", name, got, to.Host, to.Repository)
			}
		}
	}

	// A second run writes nothing and reports everything present.
	writes := dst.Writes()
	again := &events{}
	opts.Progress = again
	second, err := mirror.Run(ctx, src.refs(), opts)
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if n := dst.Writes() - writes; n != 0 {
		t.Errorf("the second run wrote %d times to the target, want 0", n)
	}
	if second.Artifacts != (mirror.Tally{Skipped: 3}) || second.Images != (mirror.Tally{Skipped: 3}) ||
		second.Blobs.Copied+second.Blobs.Mounted+second.Manifests.Copied != 0 || second.Blobs.BytesSkipped != summary.Blobs.BytesCopied+summary.Blobs.BytesSkipped {
		t.Errorf("second run: artifacts %+v, images %+v, blobs %+v, manifests %+v; want everything skipped (%d bytes)",
			second.Artifacts, second.Images, second.Blobs, second.Manifests, summary.Blobs.BytesCopied+summary.Blobs.BytesSkipped)
	}
	if again.count(mirror.TagWritten, "") != 0 {
		t.Errorf("the second run wrote tags")
	}
}

// TestMirrorEveryPlatform fails when any platform of a multi-platform
// image, or any of its layers, is left behind, including platforms with
// their own layers only.
func TestMirrorEveryPlatform(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	p := mirrortest.CAPIProviders(t, "v1.14.2", src.Host)[0]
	platforms := []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}
	pushed := mirrortest.PushProvider(t, src.Access(), src.Ref(p.Repository(project), ""), p, func(ref string) mirrortest.Image {
		return mirrortest.Image{Seed: mirrortest.ImageSeed(ref), Platforms: platforms, LayerSizes: []int64{4096, 2048}}
	})
	dst := newLinkingRegistry(t, true)
	target := mirror.Target{Host: dst.Host}
	if _, err := mirror.Run(ctx, []artifact.Reference{pushed.Ref}, mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.access()}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, img := range pushed.Images {
		to := targetRef(target, img.Ref)
		if len(img.Manifests) != len(platforms) {
			t.Fatalf("pushed %d platforms", len(img.Manifests))
		}
		for i, m := range img.Manifests {
			if !existsAt(t, dst.access(), to, m) {
				t.Errorf("platform %s of %s was not mirrored", platforms[i], img.Ref)
			}
		}
		// The linking registry knows a blob only in the repositories it
		// was uploaded or mounted to.
		for _, b := range img.Blobs {
			if !existsAt(t, dst.access(), to, b) {
				t.Errorf("blob %s of %s was not mirrored", b.Digest, img.Ref)
			}
		}
	}
}

// TestMirrorMountsSharedBlobs: with a registry that links blobs per
// repository, a base layer shared by three images is uploaded once and
// mounted into the other repositories; without mount support it is
// uploaded to each, and nothing fails.
func TestMirrorMountsSharedBlobs(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	base := mirrortest.SharedBase.Digest().String()
	for _, mount := range []bool{true, false} {
		dst := newLinkingRegistry(t, mount)
		rec := &events{}
		summary, err := mirror.Run(ctx, src.refs(), mirror.Options{
			Target: mirror.Target{Host: dst.Host, Prefix: "m"}, SourceAccess: src.reg.Access(), TargetAccess: dst.access(), Progress: rec,
		})
		if err != nil {
			t.Fatalf("Run (mount %v): %v", mount, err)
		}
		uploads, mounts := dst.counts(base)
		switch {
		case mount && (uploads != 1 || mounts != 2 || rec.count(mirror.BlobCopied, base) != 1 || rec.count(mirror.BlobMounted, base) != 2):
			t.Errorf("with mounts: base uploaded %d times and mounted %d times (events: %d copied, %d mounted), want 1 and 2",
				uploads, mounts, rec.count(mirror.BlobCopied, base), rec.count(mirror.BlobMounted, base))
		case !mount && (uploads != 3 || mounts != 0 || rec.count(mirror.BlobCopied, base) != 3):
			t.Errorf("without mounts: base uploaded %d times and mounted %d times, want 3 and 0", uploads, mounts)
		}
		if mount && summary.Blobs.Mounted < 2 {
			t.Errorf("summary counts %d mounted blobs", summary.Blobs.Mounted)
		}
	}
}

// TestMirrorInterrupted cancels a run part way: no interrupted artifact
// has its tag at the target, and running again completes without
// uploading again what is there.
func TestMirrorInterrupted(t *testing.T) {
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	copied := 0
	rec := &events{on: func(e mirror.Event) {
		if e.Kind == mirror.BlobCopied {
			if copied++; copied == 4 {
				cancel()
			}
		}
	}}
	opts := mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.Access(), Progress: rec, Concurrency: 2}
	summary, err := mirror.Run(ctx, src.refs(), opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Run error = %v, want context.Canceled", err)
	}
	interrupted := 0
	for _, r := range summary.Results {
		if r.Err == nil {
			continue
		}
		interrupted++
		if desc, ok := resolveAt(t, dst.Access(), targetRef(target, r.Source)); ok {
			t.Errorf("interrupted artifact %s has its tag at the target (%s)", r.Source, desc.Digest)
		}
	}
	if interrupted == 0 {
		t.Fatal("no artifact was interrupted")
	}

	rerun := &events{}
	opts.Progress = rerun
	resumed, err := mirror.Run(context.Background(), src.refs(), opts)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	for _, p := range src.providers {
		if desc, ok := resolveAt(t, dst.Access(), targetRef(target, p.Ref)); !ok || desc.Digest.String() != p.Digest {
			t.Errorf("after the rerun %s is %v (found %v), want %s", p.Ref, desc.Digest, ok, p.Digest)
		}
	}
	if resumed.Blobs.Skipped == 0 {
		t.Errorf("the rerun skipped no blob: %+v", resumed.Blobs)
	}
	// Nothing uploaded by the first run went up again.
	first := map[string]bool{}
	for _, e := range rec.all {
		if e.Kind == mirror.BlobCopied {
			first[e.Repository+"@"+e.Digest] = true
		}
	}
	for _, e := range rerun.all {
		if e.Kind == mirror.BlobCopied && first[e.Repository+"@"+e.Digest] {
			t.Errorf("the rerun uploaded %s again", e.Digest)
		}
	}
}

// TestMirrorTargetFailsPartWay: a target that refuses the manifests of
// one image fails that image's artifact, leaves its tag (and the image's)
// unwritten, and lets the other artifacts complete; a rerun finishes the
// job without uploading again what is there.
func TestMirrorTargetFailsPartWay(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	dst := newLinkingRegistry(t, true)
	target := mirror.Target{Host: dst.Host}
	bootstrap := src.providers[1]
	var image mirrortest.PushedImage
	for _, img := range bootstrap.Images {
		image = img
	}
	dst.refuseRequests(func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/"+image.Ref.Repository+"/manifests/")
	})
	rec := &events{}
	opts := mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.access(), Progress: rec}
	summary, err := mirror.Run(ctx, src.refs(), opts)
	var runErr *mirror.Error
	var imageErr *mirror.ImageError
	if !errors.As(err, &runErr) || len(runErr.Failed) != 1 || runErr.Failed[0].Source != bootstrap.Ref || !errors.As(err, &imageErr) {
		t.Fatalf("Run error = %v, want the bootstrap artifact failed by its image", err)
	}
	if summary.Artifacts != (mirror.Tally{Copied: 2, Failed: 1}) || summary.Images != (mirror.Tally{Copied: 2, Failed: 1}) {
		t.Errorf("artifacts %+v, images %+v", summary.Artifacts, summary.Images)
	}
	if _, ok := resolveAt(t, dst.access(), targetRef(target, bootstrap.Ref)); ok {
		t.Errorf("the failed artifact %s has its tag at the target", bootstrap.Ref)
	}
	if _, ok := resolveAt(t, dst.access(), targetRef(target, image.Ref)); ok {
		t.Errorf("the failed image %s has its tag at the target", image.Ref)
	}
	for _, p := range []mirrortest.PushedProvider{src.providers[0], src.providers[2]} {
		if _, ok := resolveAt(t, dst.access(), targetRef(target, p.Ref)); !ok {
			t.Errorf("%s was not mirrored", p.Ref)
		}
	}

	dst.refuseRequests(nil)
	rerun := &events{}
	opts.Progress = rerun
	if _, err := mirror.Run(ctx, src.refs(), opts); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if d, ok := resolveAt(t, dst.access(), targetRef(target, bootstrap.Ref)); !ok || d.Digest.String() != bootstrap.Digest {
		t.Errorf("after the rerun %s is %s (found %v)", bootstrap.Ref, d.Digest, ok)
	}
	for _, b := range image.Blobs {
		if uploads, _ := dst.counts(b.Digest.String()); uploads > 1 {
			t.Errorf("blob %s of %s was uploaded %d times", b.Digest, image.Ref, uploads)
		}
	}
	if n := rerun.count(mirror.ManifestCopied, ""); n != len(image.Manifests)+1 {
		t.Errorf("the rerun pushed %d manifests, want the %d of the failed image", n, len(image.Manifests)+1)
	}
}

// TestMirrorRepack mirrors an artifact in the one-file-per-layer layout of
// cluster-api-operator: refused without Repack, rebuilt with it.
func TestMirrorRepack(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	core := mirrortest.CAPIProviders(t, "v1.14.2", src.Host)[0]
	ref := src.Ref("operator/core-cluster-api", "v1.14.2")
	sourceDigest := mirrortest.PushPerFileArtifact(t, src.Access(), ref, core.Files, "")
	for _, image := range core.Images(t) {
		mirrortest.PushImage(t, src.Access(), mirrortest.ImageReference(t, image), mirrortest.SmallImage(mirrortest.ImageSeed(image)))
	}
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host, Prefix: "capi"}
	opts := mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.Access()}

	_, err := mirror.Run(ctx, []artifact.Reference{ref}, opts)
	var layout *artifact.LayoutError
	if !errors.As(err, &layout) || !strings.Contains(err.Error(), "--repack") || !strings.Contains(err.Error(), "one-file-per-layer") {
		t.Fatalf("Run without Repack: %v, want a *LayoutError suggesting --repack", err)
	}
	if n := dst.Writes(); n != 0 {
		t.Errorf("a refused artifact wrote %d times to the target", n)
	}

	opts.Repack = true
	rec := &events{}
	opts.Progress = rec
	summary, err := mirror.Run(ctx, []artifact.Reference{ref}, opts)
	if err != nil {
		t.Fatalf("Run with Repack: %v", err)
	}
	res := summary.Results[0]
	if !res.Repacked || res.SourceDigest != sourceDigest || res.Digest == sourceDigest || rec.count(mirror.Repacked, res.Digest) != 1 {
		t.Errorf("result %+v: want repacked from %s to a new digest, reported", res, sourceDigest)
	}
	to := targetRef(target, ref)
	fetched, err := (&artifact.Fetcher{}).Fetch(ctx, to, dst.Access())
	if err != nil {
		t.Fatalf("the repacked artifact at %s: %v", to, err)
	}
	if fetched.Digest != res.Digest {
		t.Errorf("%s resolves to %s, reported %s", to, fetched.Digest, res.Digest)
	}
	pa, err := artifact.CheckProviderArtifact(fetched, "core", "cluster-api", "v1.14.2")
	if err != nil {
		t.Fatalf("repacked artifact: %v", err)
	}
	if !bytes.Equal(pa.Components, core.Components()) {
		t.Errorf("the repacked components differ from the published ones")
	}
	for _, image := range core.Images(t) {
		if _, ok := resolveAt(t, dst.Access(), targetRef(target, mirrortest.ImageReference(t, image))); !ok {
			t.Errorf("image %s of the repacked artifact not mirrored", image)
		}
	}
}

func TestMirrorErrors(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	core := src.providers[0]

	t.Run("tag not found", func(t *testing.T) {
		dst := registrytest.New(t, registrytest.Options{})
		missing := core.Ref
		missing.Tag = "v9.9.9"
		summary, err := mirror.Run(ctx, []artifact.Reference{missing, core.Ref}, mirror.Options{Target: mirror.Target{Host: dst.Host}, SourceAccess: src.reg.Access(), TargetAccess: dst.Access()})
		var notFound *artifact.NotFoundError
		var runErr *mirror.Error
		if !errors.As(err, &notFound) || !errors.As(err, &runErr) || len(runErr.Failed) != 1 {
			t.Fatalf("Run error = %v, want one *NotFoundError", err)
		}
		// The other reference was mirrored regardless.
		if summary.Artifacts != (mirror.Tally{Copied: 1, Failed: 1}) || summary.Results[1].Err != nil {
			t.Errorf("artifacts %+v: the good reference should be mirrored", summary.Artifacts)
		}
	})

	t.Run("wrong target credentials", func(t *testing.T) {
		dst := registrytest.New(t, registrytest.Options{TLS: true, Username: "mirror", Password: "s3cret"})
		access := dst.Access()
		access.Password = "wrong"
		_, err := mirror.Run(ctx, []artifact.Reference{core.Ref}, mirror.Options{Target: mirror.Target{Host: dst.Host}, SourceAccess: src.reg.Access(), TargetAccess: access})
		var denied *artifact.AuthError
		if !errors.As(err, &denied) || denied.StatusCode != 401 || !strings.Contains(denied.Ref, dst.Host) {
			t.Fatalf("Run error = %v, want an *AuthError for the target", err)
		}
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("the error shows the password: %v", err)
		}
	})

	t.Run("layer above the limit", func(t *testing.T) {
		dst := registrytest.New(t, registrytest.Options{})
		_, err := mirror.Run(ctx, []artifact.Reference{core.Ref}, mirror.Options{Target: mirror.Target{Host: dst.Host}, SourceAccess: src.reg.Access(), TargetAccess: dst.Access(), MaxArtifactSize: 16 << 10})
		var tooLarge *artifact.TooLargeError
		if !errors.As(err, &tooLarge) || tooLarge.What != "layer" {
			t.Fatalf("Run error = %v, want a *TooLargeError for the layer", err)
		}
		if n := dst.Writes(); n != 0 {
			t.Errorf("a refused artifact wrote %d times to the target", n)
		}
	})

	t.Run("two sources, one target repository", func(t *testing.T) {
		other := registrytest.New(t, registrytest.Options{})
		p := mirrortest.CAPIProviders(t, "v1.14.2", other.Host)[0]
		clash := mirrortest.PushProvider(t, other.Access(), other.Ref(p.Repository(project), ""), p, nil)
		dst := registrytest.New(t, registrytest.Options{})
		access := artifact.Access{PlainHTTP: true}
		_, err := mirror.Run(ctx, []artifact.Reference{core.Ref, clash.Ref}, mirror.Options{Target: mirror.Target{Host: dst.Host}, SourceAccess: access, TargetAccess: access})
		var conflict *mirror.ConflictError
		if !errors.As(err, &conflict) || len(conflict.Conflicts) != 2 {
			t.Fatalf("Run error = %v, want a *ConflictError for the artifact and its image", err)
		}
		if n := dst.Writes(); n != 0 {
			t.Errorf("a refused run wrote %d times to the target", n)
		}
	})
}

// TestMirrorReferrersTagSchema mirrors between registries without the
// referrers API: referrers are found and written through the referrers
// tag schema, as oras-go falls back to it.
func TestMirrorReferrersTagSchema(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{NoReferrers: true})
	dst := registrytest.New(t, registrytest.Options{NoReferrers: true})
	target := mirror.Target{Host: dst.Host}
	if _, err := mirror.Run(ctx, src.refs()[:1], mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.Access()}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	core := src.providers[0]
	subject := mirrortest.Resolve(t, src.reg.Access(), core.Ref)
	found := referrersAt(t, dst.Access(), targetRef(target, core.Ref), subject)
	if len(found) != 1 || found[0].Digest != src.sboms[core.Ref.Repository][0].Digest {
		t.Errorf("referrers at the target = %v, want the artifact's SBOM", found)
	}
}

// TestMirrorCosignTags mirrors what cosign keeps under its tag scheme
// (sha256-<hex>.sig and .att) for an artifact, an image index and one of
// its platforms: the same manifests under the same tags at the target,
// where verification looks them up. A second run writes nothing.
func TestMirrorCosignTags(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host}
	core := src.providers[0]
	var img mirrortest.PushedImage
	for _, name := range slices.Sorted(maps.Keys(core.Images)) {
		img = core.Images[name]
		break
	}
	type tagged struct {
		ref  artifact.Reference
		tag  string
		desc ocispec.Descriptor
	}
	var want []tagged
	push := func(ref artifact.Reference, subject ocispec.Descriptor, suffix string) {
		desc := mirrortest.PushCosignTag(t, src.reg.Access(), ref, subject, suffix,
			[]byte(`{"critical":{"image":{"docker-manifest-digest":"`+subject.Digest.String()+`"},"type":"cosign container image signature"}}`))
		want = append(want, tagged{ref, artifact.CosignTag(subject.Digest, suffix), desc})
	}
	push(core.Ref, mirrortest.Resolve(t, src.reg.Access(), core.Ref), "sig")
	push(img.Ref, img.Index, "sig")
	push(img.Ref, img.Index, "att")
	push(img.Ref, img.Manifests[0], "sig")

	rec := &events{}
	if _, err := mirror.Run(ctx, src.refs()[:1], mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.Access(), Progress: rec}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, w := range want {
		ref := targetRef(target, w.ref)
		ref.Tag = w.tag
		got, ok := resolveAt(t, dst.Access(), ref)
		if !ok || got.Digest != w.desc.Digest {
			t.Errorf("%s at the target = %v (found %t), want %s", ref, got.Digest, ok, w.desc.Digest)
		}
	}
	if n := rec.count(mirror.TagWritten, ""); n < len(want) {
		t.Errorf("%d tags written, want at least the %d cosign tags", n, len(want))
	}

	again := &events{}
	if _, err := mirror.Run(ctx, src.refs()[:1], mirror.Options{Target: target, SourceAccess: src.reg.Access(), TargetAccess: dst.Access(), Progress: again}); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if n := again.count(mirror.TagWritten, ""); n != 0 {
		t.Errorf("a second run wrote %d tags, want none", n)
	}
}
