package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/bindir"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The versions the suite releases: a first install, and an upgrade whose
// CRDs carry a change (a label) the first does not.
const (
	firstVersion   = "v0.0.1"
	upgradeVersion = "v0.0.2"
	// upgradeCRDLabel is the CRD change v0.0.2 brings.
	upgradeCRDLabel = "capwright.io/e2e-release"
	// unsignedVersion is released without signatures, and
	// otherKeyVersion signed with a key that is not the release key: the
	// guide's verify must refuse both.
	unsignedVersion = "v0.0.3"
	otherKeyVersion = "v0.0.4"
)

// releasePrefix is where releases go on the plane's registry, as a
// project's REGISTRY=ghcr.io/capwright would be.
func releasePrefix() string { return env.Registry.Host + "/capwright" }

// sitePrefix is where an air-gapped site's registry holds its mirror:
// `capwright mirror --to <sitePrefix>` copies ghcr.io/capwright/… to
// <sitePrefix>/capwright/….
func sitePrefix() string { return env.Registry.Host + "/site" }

var cli struct {
	sync.Once
	path string
	err  error
}

// mirrorRelease copies the release's manifests artifact and chart, with the
// manager image they name (every platform), to sitePrefix() with the
// capwright CLI built from the tree, as an air-gapped site does.
func mirrorRelease(ctx context.Context, t *testing.T, r *release.Result) {
	t.Helper()
	cli.Do(func() { cli.path, cli.err = env.BuildCLI(ctx) })
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	cmd := exec.CommandContext(ctx, cli.path, "mirror", "--plain-http", "--to", sitePrefix(),
		"oci://"+r.Manifests.TagRef(), "oci://"+r.Chart.TagRef())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("capwright mirror of %s: %v\n%s", r.Manifests.Tag, err, out)
	}
	t.Logf("capwright mirror %s:\n%s", r.Manifests.Tag, out)
}

var releases = struct {
	sync.Mutex
	done map[string]*release.Result
	// heads are HEAD before and after each release, by image digest: the
	// commit the release was built from is one of them (others may
	// commit to the tree meanwhile).
	heads map[string][2]string
}{done: map[string]*release.Result{}, heads: map[string][2]string{}}

// head is the commit HEAD names in the tree under test.
func head(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", env.RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// released runs `make release COSIGN_KEY=…` (the same code, in-process)
// for version to the plane's registry once per suite: image for
// linux/amd64 and linux/arm64, chart and manifests artifact, signed with
// the suite's release key (framework.ReleaseKey, whose public half the
// examples get), the image's SBOMs and provenance attached. unsignedVersion
// is not signed, otherKeyVersion is signed with another key. The CLI is
// not built here (internal/release tests it).
func released(ctx context.Context, t *testing.T, version string) *release.Result {
	t.Helper()
	releases.Lock()
	defer releases.Unlock()
	if r, ok := releases.done[version]; ok {
		return r
	}
	bin, err := bindir.Default()
	if err != nil {
		t.Fatal(err)
	}
	var signing *release.Signing
	if version != unsignedVersion {
		key, err := framework.ReleaseKey()
		if version == otherKeyVersion {
			key, err = framework.NewCosignKey()
		}
		if err != nil {
			t.Fatal(err)
		}
		if signing, err = framework.ReleaseSigning(key); err != nil {
			t.Fatal(err)
		}
	}
	o := release.Options{
		Signing:       signing,
		SBOMGenerator: filepath.Join(bin, "cyclonedx-gomod"),
		FilesDir:      filepath.Join(releasesDir, version),
		Version:       version,
		Registry:      releasePrefix(),
		PlainHTTP:     true,
		RepoRoot:      env.RepoRoot(),
		CLIPlatforms:  []string{},
		// The tree under test may hold uncommitted work; the dirty-tree
		// refusal is tested in internal/release.
		AllowDirty: true,
		Log:        testWriter{t},
	}
	if version == upgradeVersion {
		o.ManifestsDir = manifestsWithCRDLabel(t, upgradeCRDLabel, version)
		o.ChartDir = chartWithCRDLabel(t, upgradeCRDLabel, version)
	}
	start, before := time.Now(), head(t)
	r, err := release.Release(ctx, o)
	if err != nil {
		t.Fatalf("make release VERSION=%s REGISTRY=%s: %v", version, o.Registry, err)
	}
	releases.heads[r.Image.Digest] = [2]string{before, head(t)}
	t.Logf("released %s in %s (signed: %t): image %s, chart %s, manifests %s", version, time.Since(start).Round(time.Millisecond), r.Signed, r.Image.Ref(), r.Chart.Ref(), r.Manifests.Ref())
	releases.done[version] = r
	return r
}

// manifestsWithCRDLabel copies manifests/ and labels every Capwright CRD,
// so that a release built from the copy carries a CRD change. It returns
// the copy's default/ directory.
func manifestsWithCRDLabel(t *testing.T, key, value string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "manifests")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(env.RepoRoot(), "manifests"))); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(dst, "crd", "bases", "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("labels:\n- pairs:\n    "+key+": "+value+"\n")...)
	if err := os.WriteFile(k, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "default")
}

// chartWithCRDLabel copies the chart and labels every Capwright CRD in its
// crds/, so that a release built from the copy carries a CRD change that
// Helm itself would never apply (it does not upgrade crds/) and
// helm-controller must. It returns the copy.
func chartWithCRDLabel(t *testing.T, key, value string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "capwright")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(env.RepoRoot(), "charts", "capwright"))); err != nil {
		t.Fatal(err)
	}
	crds, err := filepath.Glob(filepath.Join(dst, "crds", "*.capwright.io_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no Capwright CRDs in the chart's crds/ (%v)", err)
	}
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		labelled := strings.Replace(string(data), "\nmetadata:\n", "\nmetadata:\n  labels:\n    "+key+": "+value+"\n", 1)
		if labelled == string(data) {
			t.Fatalf("%s has no metadata: to label", f)
		}
		if err := os.WriteFile(f, []byte(labelled), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// publishCAPIProviders publishes the real Cluster API core, kubeadm
// bootstrap and kubeadm control plane providers to the plane's registry,
// where the install guide's air-gapped mirror rule points.
func publishCAPIProviders(ctx context.Context, p *plane.Plane) error {
	fixtures := filepath.Dir(p.CAPIComponentsPath(plane.CAPIVersion, "metadata.yaml"))
	for _, pr := range [][2]string{{"core", "cluster-api"}, {"bootstrap", "kubeadm"}, {"control-plane", "kubeadm"}} {
		if _, err := framework.PublishCAPIProvider(ctx, p.Registry.Host, fixtures, pr[0], pr[1], plane.CAPIVersion); err != nil {
			return err
		}
	}
	return nil
}

// testWriter sends release progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
