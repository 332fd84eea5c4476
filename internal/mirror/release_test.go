package mirror_test

import (
	"bytes"
	"context"
	"errors"
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

const releaseVersion = "v0.1.0"

// release is a Capwright release pushed to a registry under capwright/:
// the manager image (amd64 and arm64), the Flux artifact of the install
// manifests (with an SBOM) and the Helm chart, both naming the image by
// digest under imageHost.
type release struct {
	image               mirrortest.PushedImage
	manifests, chart    artifact.Reference
	manifestsDesc, sbom ocispec.Descriptor
	chartDesc           ocispec.Descriptor
	// written is the image as the manifests and the chart name it.
	written string
}

func pushRelease(t *testing.T, reg *registrytest.Registry, imageHost string) release {
	t.Helper()
	rel := release{
		manifests: reg.Ref("capwright/capwright-manifests", releaseVersion),
		chart:     reg.Ref("capwright/charts/capwright", releaseVersion),
	}
	rel.image = mirrortest.PushImage(t, reg.Access(), reg.Ref("capwright/capwright-manager", releaseVersion), mirrortest.SmallImage(mirrortest.SeedOf("capwright-manager")))
	rel.written = imageHost + "/capwright/capwright-manager@" + rel.image.Index.Digest.String()
	rel.manifestsDesc = mirrortest.PushFluxArtifact(t, reg.Access(), rel.manifests, map[string][]byte{"capwright.yaml": mirrortest.CapwrightManifests(rel.written)})
	rel.sbom = mirrortest.PushReferrer(t, reg.Access(), rel.manifests, rel.manifestsDesc, "", []byte(`{"name":"manifests sbom"}`))
	rel.chartDesc = mirrortest.PushChart(t, reg.Access(), rel.chart, map[string]string{artifact.ChartImagesAnnotation: mirrortest.ArtifactHubImages("manager", rel.written)})
	return rel
}

// TestMirrorCapwrightRelease mirrors a Capwright release's Flux artifact
// and Helm chart: both, with the manager image they name (every platform),
// to a TLS registry with basic auth; then again, writing nothing.
func TestMirrorCapwrightRelease(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	rel := pushRelease(t, src, src.Host)
	dst := registrytest.New(t, registrytest.Options{TLS: true, Username: "mirror", Password: "s3cret"})
	target := mirror.Target{Host: dst.Host, Prefix: "site/capwright"}
	opts := mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.Access()}

	summary, err := mirror.Run(ctx, []artifact.Reference{rel.manifests, rel.chart}, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if summary.Artifacts != (mirror.Tally{Copied: 2}) || summary.Images != (mirror.Tally{Copied: 1}) {
		t.Errorf("artifacts %+v, images %+v; want 2 artifacts and the one image copied", summary.Artifacts, summary.Images)
	}
	for i, want := range []mirror.Kind{mirror.KindFlux, mirror.KindChart} {
		res := summary.Results[i]
		if res.Kind != want || len(res.Images) != 1 || res.Images[0].Written != rel.written || len(res.Notes) != 0 {
			t.Errorf("result %d: kind %q, images %+v, notes %q; want a %s running %s", i, res.Kind, res.Images, res.Notes, want, rel.written)
		}
	}
	for ref, desc := range map[artifact.Reference]ocispec.Descriptor{rel.manifests: rel.manifestsDesc, rel.chart: rel.chartDesc} {
		if got, ok := resolveAt(t, dst.Access(), targetRef(target, ref)); !ok || got.Digest != desc.Digest {
			t.Errorf("%s at the target: %s (found %v), want %s", ref, got.Digest, ok, desc.Digest)
		}
	}
	imgTo := targetRef(target, rel.image.Ref)
	for _, d := range slices.Concat([]ocispec.Descriptor{rel.image.Index}, rel.image.Manifests, rel.image.Blobs) {
		if !existsAt(t, dst.Access(), imgTo, d) {
			t.Errorf("the manager image's %s %s is missing at %s", d.MediaType, d.Digest, imgTo)
		}
	}
	if found := referrersAt(t, dst.Access(), targetRef(target, rel.manifests), rel.manifestsDesc); len(found) != 1 || found[0].Digest != rel.sbom.Digest {
		t.Errorf("referrers of the manifests at the target = %v, want its SBOM", found)
	}

	rules := writeAndReadRules(t, summary)
	if got, _ := rules.Rewrite(src.Host + "/capwright/capwright-manager"); got != dst.Host+"/site/capwright/capwright/capwright-manager" {
		t.Errorf("rules %v rewrite the manager image to %q", rules, got)
	}

	writes := dst.Writes()
	again, err := mirror.Run(ctx, []artifact.Reference{rel.manifests, rel.chart}, opts)
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if n := dst.Writes() - writes; n != 0 || again.Artifacts != (mirror.Tally{Skipped: 2}) || again.Images != (mirror.Tally{Skipped: 1}) {
		t.Errorf("second run: %d writes, artifacts %+v, images %+v; want nothing written", n, again.Artifacts, again.Images)
	}
}

func writeAndReadRules(t *testing.T, summary *mirror.Summary) catalog.Mirrors {
	t.Helper()
	var buf bytes.Buffer
	if err := mirror.WriteRules(&buf, summary, time.Now()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.txt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := catalog.ReadMirrorFile(path)
	if err != nil {
		t.Fatalf("ReadMirrorFile: %v", err)
	}
	return rules
}

// TestMirrorChartWithoutImages copies a chart that lists no images and
// says so.
func TestMirrorChartWithoutImages(t *testing.T) {
	src := registrytest.New(t, registrytest.Options{})
	ref := src.Ref("charts/plain", "1.0.0")
	desc := mirrortest.PushChart(t, src.Access(), ref, map[string]string{"category": "tools"})
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host}
	rec := &events{}
	summary, err := mirror.Run(context.Background(), []artifact.Reference{ref}, mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.Access(), Progress: rec})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	res := summary.Results[0]
	if res.Kind != mirror.KindChart || len(res.Images) != 0 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "lists no images") {
		t.Errorf("result: kind %q, images %v, notes %q; want a chart noted as listing no images", res.Kind, res.Images, res.Notes)
	}
	if got, ok := resolveAt(t, dst.Access(), targetRef(target, ref)); !ok || got.Digest != desc.Digest {
		t.Errorf("the chart at the target: %s (found %v), want %s", got.Digest, ok, desc.Digest)
	}
	for _, e := range rec.all {
		if e.Kind == mirror.RefPlanned && (e.ArtifactKind != mirror.KindChart || len(e.Notes) != 1) {
			t.Errorf("RefPlanned event %+v: want the kind and the note", e)
		}
	}
}

// TestMirrorReleaseMissingImage: a Flux artifact naming an image its
// registry lacks fails, with the image named, and its tag is not written;
// the other reference is mirrored.
func TestMirrorReleaseMissingImage(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	rel := pushRelease(t, src, src.Host)
	missing := src.Host + "/capwright/capwright-gone:" + releaseVersion
	broken := src.Ref("broken/capwright-manifests", releaseVersion)
	mirrortest.PushFluxArtifact(t, src.Access(), broken, map[string][]byte{"capwright.yaml": mirrortest.CapwrightManifests(missing), "README.md": []byte("not YAML")})
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host}

	summary, err := mirror.Run(ctx, []artifact.Reference{broken, rel.chart}, mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.Access()})
	var runErr *mirror.Error
	var imageErr *mirror.ImageError
	var notFound *artifact.NotFoundError
	if !errors.As(err, &runErr) || len(runErr.Failed) != 1 || runErr.Failed[0].Source != broken || !errors.As(err, &imageErr) || !errors.As(err, &notFound) {
		t.Fatalf("Run error = %v, want %s failed by its missing image", err, broken)
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "tag was not written") {
		t.Errorf("the error does not name the image and the unwritten tag: %v", err)
	}
	if _, ok := resolveAt(t, dst.Access(), targetRef(target, broken)); ok {
		t.Errorf("the failed artifact %s has its tag at the target", broken)
	}
	if summary.Results[1].Err != nil {
		t.Errorf("the chart was not mirrored: %v", summary.Results[1].Err)
	}
}

// TestMirrorLayout mirrors a release bundle written as an OCI image
// layout: every named entry lands at TARGET/PREFIX/path:tag with its
// referrers, an image the bundle lacks is reported, an interrupted run
// writes no tag, and a bundle with a plain tag is refused.
func TestMirrorLayout(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	rel := pushRelease(t, src, "ghcr.io")
	imageSBOM := mirrortest.PushReferrer(t, src.Access(), rel.image.Ref, rel.image.Index, "", []byte(`{"name":"image sbom"}`))
	named := map[string]artifact.Reference{
		"ghcr.io/capwright/capwright-manager:" + releaseVersion:   rel.image.Ref,
		"ghcr.io/capwright/capwright-manifests:" + releaseVersion: rel.manifests,
		"ghcr.io/capwright/charts/capwright:" + releaseVersion:    rel.chart,
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	mirrortest.WriteLayout(t, bundle, src.Access(), named)
	src.Close() // everything comes from the layout

	dst := registrytest.New(t, registrytest.Options{TLS: true, Username: "mirror", Password: "s3cret"})
	target := mirror.Target{Host: dst.Host, Prefix: "site"}
	opts := mirror.Options{Target: target, TargetAccess: dst.Access()}
	check := func(t *testing.T, dst *registrytest.Registry) {
		t.Helper()
		for _, e := range []struct {
			path string
			desc ocispec.Descriptor
		}{
			{"capwright/capwright-manager", rel.image.Index},
			{"capwright/capwright-manifests", rel.manifestsDesc},
			{"capwright/charts/capwright", rel.chartDesc},
		} {
			to := artifact.Reference{Host: dst.Host, Repository: "site/" + e.path, Tag: releaseVersion}
			if got, ok := resolveAt(t, dst.Access(), to); !ok || got.Digest != e.desc.Digest {
				t.Errorf("%s at the target: %s (found %v), want %s", to, got.Digest, ok, e.desc.Digest)
			}
		}
	}

	summary, err := mirror.RunLayout(ctx, bundle, opts)
	if err != nil {
		t.Fatalf("RunLayout: %v", err)
	}
	check(t, dst)
	if summary.Artifacts != (mirror.Tally{Copied: 2}) || summary.Images != (mirror.Tally{Copied: 1}) {
		t.Errorf("artifacts %+v, images %+v", summary.Artifacts, summary.Images)
	}
	for _, res := range summary.Results {
		if len(res.Notes) != 0 {
			t.Errorf("%s: notes %q, want none: the bundle holds the image", res.Source, res.Notes)
		}
	}
	imgTo := artifact.Reference{Host: dst.Host, Repository: "site/capwright/capwright-manager"}
	for _, d := range slices.Concat(rel.image.Manifests, rel.image.Blobs, []ocispec.Descriptor{imageSBOM}) {
		if !existsAt(t, dst.Access(), imgTo, d) {
			t.Errorf("%s %s of the manager image is missing at the target", d.MediaType, d.Digest)
		}
	}
	manifestsTo := artifact.Reference{Host: dst.Host, Repository: "site/capwright/capwright-manifests"}
	if found := referrersAt(t, dst.Access(), manifestsTo, rel.manifestsDesc); len(found) != 1 || found[0].Digest != rel.sbom.Digest {
		t.Errorf("referrers of the manifests at the target = %v, want their SBOM", found)
	}
	rules := writeAndReadRules(t, summary)
	if got, _ := rules.Rewrite("ghcr.io/capwright/capwright-manager"); got != dst.Host+"/site/capwright/capwright-manager" {
		t.Errorf("rules %v rewrite the manager image to %q", rules, got)
	}
	writes := dst.Writes()
	if _, err := mirror.RunLayout(ctx, bundle, opts); err != nil || dst.Writes() != writes {
		t.Errorf("second RunLayout: %v, %d writes; want none", err, dst.Writes()-writes)
	}

	t.Run("interrupted", func(t *testing.T) {
		dst := registrytest.New(t, registrytest.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		copied := 0
		rec := &events{on: func(e mirror.Event) {
			if e.Kind == mirror.BlobCopied {
				if copied++; copied == 3 {
					cancel()
				}
			}
		}}
		opts := mirror.Options{Target: mirror.Target{Host: dst.Host, Prefix: "site"}, TargetAccess: dst.Access(), Progress: rec, Concurrency: 1}
		_, err := mirror.RunLayout(ctx, bundle, opts)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted RunLayout: %v, want context.Canceled", err)
		}
		if n := rec.count(mirror.TagWritten, ""); n != 0 {
			t.Errorf("the interrupted run wrote %d tags", n)
		}
		opts.Progress = nil
		if _, err := mirror.RunLayout(context.Background(), bundle, opts); err != nil {
			t.Fatalf("rerun: %v", err)
		}
		check(t, dst)
	})

	t.Run("image not in the bundle", func(t *testing.T) {
		src := registrytest.New(t, registrytest.Options{})
		rel := pushRelease(t, src, "ghcr.io")
		bundle := t.TempDir()
		mirrortest.WriteLayout(t, bundle, src.Access(), map[string]artifact.Reference{
			"ghcr.io/capwright/capwright-manifests:" + releaseVersion: rel.manifests,
			"ghcr.io/capwright/charts/capwright:" + releaseVersion:    rel.chart,
		})
		dst := registrytest.New(t, registrytest.Options{})
		summary, err := mirror.RunLayout(ctx, bundle, mirror.Options{Target: mirror.Target{Host: dst.Host}, TargetAccess: dst.Access()})
		if err != nil {
			t.Fatalf("RunLayout: %v", err)
		}
		for _, res := range summary.Results {
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "ghcr.io/capwright/capwright-manager@") || !strings.Contains(res.Notes[0], "does not hold") {
				t.Errorf("%s: notes %q, want the missing image reported", res.Source, res.Notes)
			}
			if _, ok := resolveAt(t, dst.Access(), res.Target); !ok {
				t.Errorf("%s was not mirrored", res.Source)
			}
		}
	})

	t.Run("entry without a full reference", func(t *testing.T) {
		src := registrytest.New(t, registrytest.Options{})
		rel := pushRelease(t, src, "ghcr.io")
		bundle := t.TempDir()
		mirrortest.WriteLayout(t, bundle, src.Access(), map[string]artifact.Reference{
			"ghcr.io/capwright/capwright-manifests:" + releaseVersion: rel.manifests,
			releaseVersion: rel.chart,
		})
		dst := registrytest.New(t, registrytest.Options{})
		_, err := mirror.RunLayout(ctx, bundle, mirror.Options{Target: mirror.Target{Host: dst.Host}, TargetAccess: dst.Access()})
		var bundleErr *mirror.BundleError
		if !errors.As(err, &bundleErr) || !strings.Contains(err.Error(), `named "`+releaseVersion+`"`) || !strings.Contains(err.Error(), "host[:port]/path:tag") {
			t.Fatalf("RunLayout error = %v, want a *BundleError naming the entry", err)
		}
		if n := dst.Writes(); n != 0 {
			t.Errorf("a refused bundle wrote %d times", n)
		}
	})

	t.Run("not a layout", func(t *testing.T) {
		_, err := mirror.RunLayout(ctx, t.TempDir(), opts)
		var bundleErr *mirror.BundleError
		if !errors.As(err, &bundleErr) || !strings.Contains(err.Error(), "not an OCI image layout") {
			t.Fatalf("RunLayout error = %v, want a *BundleError", err)
		}
	})
}
