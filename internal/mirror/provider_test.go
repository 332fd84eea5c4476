package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// providerReleases are releases as `capwright mirror --provider` fetches
// them: the real Cluster API core release, and its control-plane release
// under another name (control-plane/example), a provider for which the
// catalog knows no OCI repository; their images, moved to src's host, are
// pushed to src.
func providerReleases(t *testing.T, src *registrytest.Registry) []mirror.ProviderRelease {
	t.Helper()
	capi := mirrortest.CAPIProviders(t, clusterctltest.Current, src.Host)
	var releases []mirror.ProviderRelease
	for _, p := range []mirrortest.Provider{capi[0], {Type: "control-plane", Name: "example", Version: capi[2].Version, Files: capi[2].Files}} {
		for _, image := range p.Images(t) {
			mirrortest.PushImage(t, src.Access(), mirrortest.ImageReference(t, image), mirrortest.SmallImage(mirrortest.ImageSeed(image)))
		}
		releases = append(releases, mirror.ProviderRelease{
			Type: p.Type, Name: p.Name, Version: p.Version,
			URL:         "https://github.com/kubernetes-sigs/cluster-api/releases/download/" + p.Version + "/" + p.Type + "-components.yaml",
			Files:       p.Files,
			Annotations: artifact.ProviderAnnotations(p.Type, p.Name, p.Version, "https://github.com/kubernetes-sigs/cluster-api"),
		})
	}
	return releases
}

// TestMirrorProviderReleases pushes provider releases as provider
// artifacts with their images: core where mirroring Cluster API's OCI
// repository for it would put it, the other provider under
// manifests/{type}-{name}; the rules send both providers, without a
// source, and their images to the copies. A second run writes nothing.
func TestMirrorProviderReleases(t *testing.T) {
	ctx := context.Background()
	src := registrytest.New(t, registrytest.Options{})
	releases := providerReleases(t, src)
	dst := registrytest.New(t, registrytest.Options{})
	target := mirror.Target{Host: dst.Host, Prefix: "site"}
	opts := mirror.Options{Target: target, SourceAccess: src.Access(), TargetAccess: dst.Access()}

	summary, err := mirror.RunWithReleases(ctx, nil, releases, opts)
	if err != nil {
		t.Fatalf("RunWithReleases: %v", err)
	}
	if summary.Artifacts != (mirror.Tally{Copied: 2}) || summary.Images != (mirror.Tally{Copied: 2}) {
		t.Errorf("artifacts %+v, images %+v; want 2 artifacts and 2 images copied", summary.Artifacts, summary.Images)
	}
	wantRepos := []string{"site/cluster-api/manifests/core-cluster-api", "site/manifests/control-plane-example"}
	for i, rel := range releases {
		res := summary.Results[i]
		to := artifact.Reference{Host: dst.Host, Repository: wantRepos[i], Tag: rel.Version}
		if res.Provider != rel.Provider() || res.Name() != rel.String() || res.Target.Repository != to.Repository || res.Kind != mirror.KindProvider {
			t.Errorf("result %d: provider %q, name %q, target %s, kind %q; want %s at %s", i, res.Provider, res.Name(), res.Target, res.Kind, rel, to)
		}
		// The artifact capwright publish makes of the same files.
		_, want, err := artifact.Stage(ctx, rel.Files, rel.Annotations, rel.Version)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := resolveAt(t, dst.Access(), to); !ok || got.Digest != want.Digest {
			t.Errorf("%s at the target: %s (found %v), want the published artifact's %s", to, got.Digest, ok, want.Digest)
		}
		fetched, err := (&artifact.Fetcher{}).Fetch(ctx, to, dst.Access())
		if err != nil {
			t.Fatalf("fetching the mirrored %s: %v", to, err)
		}
		if _, err := artifact.CheckProviderArtifact(fetched, rel.Type, rel.Name, rel.Version); err != nil {
			t.Errorf("mirrored %s: %v", to, err)
		}
		for _, img := range res.Images {
			if _, ok := resolveAt(t, dst.Access(), img.Target); !ok || !strings.HasPrefix(img.Target.Repository, "site/") {
				t.Errorf("image %s not at %s", img.Written, img.Target)
			}
		}
	}

	// The rules file the controller reads sends each provider, with only
	// spec.version, to its copy, and its images too.
	var buf bytes.Buffer
	if err := mirror.WriteRules(&buf, summary, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#   core/cluster-api:" + clusterctltest.Current + " -> oci://" + dst.Host + "/site/cluster-api/manifests/core-cluster-api:",
		"from the release https://github.com/kubernetes-sigs/cluster-api/releases/download/",
		"\ncontrol-plane/example=" + dst.Host + "/site/manifests/control-plane-example\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the rules file lacks %q:\n%s", want, buf.String())
		}
	}
	path := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := catalog.ReadMirrorFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []v1alpha1.Provider{
		&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"}},
		&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Name: "example"}},
	} {
		loc, err := catalog.Locate(p, catalog.Options{Mirrors: rules})
		if want := "oci://" + dst.Host + "/" + wantRepos[i]; err != nil || loc.OCI != want {
			t.Errorf("Locate(%s/%s) = %+v, %v; want %s", p.ProviderType(), p.GetName(), loc, err, want)
		}
		for _, img := range summary.Results[i].Images {
			if got, _ := rules.Rewrite(img.Name); got != img.Target.Host+"/"+img.Target.Repository {
				t.Errorf("the rules send the image %s to %s, want %s", img.Name, got, img.Target)
			}
		}
	}

	// Again: all present, nothing written.
	writes := dst.Writes()
	summary, err = mirror.RunWithReleases(ctx, nil, releases, opts)
	if err != nil || summary.Artifacts != (mirror.Tally{Skipped: 2}) || dst.Writes() != writes {
		t.Errorf("second run: %v, artifacts %+v, %d writes; want both present and nothing written", err, summary.Artifacts, dst.Writes()-writes)
	}
}

// TestMirrorProviderReleaseConflict refuses a provider release and an
// artifact reference landing in one repository, naming the release.
func TestMirrorProviderReleaseConflict(t *testing.T) {
	src := registrytest.New(t, registrytest.Options{})
	releases := providerReleases(t, src)
	other := mirrortest.CAPIProviders(t, clusterctltest.Current, src.Host)[2]
	pushed := mirrortest.PushProvider(t, src.Access(), src.Ref("manifests/control-plane-example", ""), other, nil)
	dst := registrytest.New(t, registrytest.Options{})
	_, err := mirror.RunWithReleases(context.Background(), []artifact.Reference{pushed.Ref}, releases[1:],
		mirror.Options{Target: mirror.Target{Host: dst.Host}, SourceAccess: src.Access(), TargetAccess: dst.Access()})
	var conflict *mirror.ConflictError
	if !errors.As(err, &conflict) || !strings.Contains(err.Error(), src.Host+"/manifests/control-plane-example and the release of control-plane/example") {
		t.Fatalf("err = %v, want a conflict naming the release and the reference", err)
	}
	if dst.Writes() != 0 {
		t.Errorf("%d writes to the target despite the conflict", dst.Writes())
	}
}
