package install

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/capwright/capwright/tests/e2e/framework"
)

// versionReportsManager runs `capwright version -o json` against the plane
// where Flux installed Capwright's release: it finds the manager
// Deployment and reports the released version, read from source (the
// chart's version label, or the digest-pinned image's version annotation
// in its registry).
func versionReportsManager(t *testing.T, ctx context.Context, deploy *appsv1.Deployment, version, source string) {
	cli := framework.CLI(t, ctx, env)
	// The plane's registry is plain HTTP.
	stdout, stderr, code, err := framework.RunCLI(ctx, cli, "version", "-o", "json", "--plain-http", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Client struct {
			Version string `json:"version"`
		} `json:"client"`
		Managers []struct {
			Namespace     string `json:"namespace"`
			Deployment    string `json:"deployment"`
			Image         string `json:"image"`
			Version       string `json:"version"`
			VersionSource string `json:"versionSource"`
			Note          string `json:"note"`
		} `json:"managers"`
		ManagerNote string `json:"managerNote"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("capwright version -o json: exit code %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	if len(got.Managers) != 1 {
		t.Fatalf("capwright version found %d managers, want the Deployment %s/%s:\n%s", len(got.Managers), deploy.Namespace, deploy.Name, stdout)
	}
	m := got.Managers[0]
	if m.Namespace != deploy.Namespace || m.Deployment != deploy.Name || m.Image != deploy.Spec.Template.Spec.Containers[0].Image ||
		m.Version != version || m.VersionSource != source || got.Client.Version == "" {
		t.Errorf("capwright version -o json: %s; want Deployment %s/%s, image %s, version %s from the %s",
			stdout, deploy.Namespace, deploy.Name, deploy.Spec.Template.Spec.Containers[0].Image, version, source)
	}
	t.Logf("capwright version: manager %s (from the %s)", m.Version, m.VersionSource)
}

// TestVersionReportsAReleasesSignatures runs `capwright version --release`
// on the plane's registry, as docs/security.md tells users to check a
// release before they install it: a release signed with the release key
// is reported signed and verified with its cosign.pub, every artifact of
// it (the image index and each platform's image, the chart, the manifests
// artifact) with the attestations beside it (the SBOMs and provenance on
// the image); an unsigned release, and one signed with another key, exit 1
// naming what is wrong.
func TestVersionReportsAReleasesSignatures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, v := range []string{firstVersion, unsignedVersion, otherKeyVersion} {
		released(ctx, t, v)
	}
	key, err := framework.ReleaseKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, key.PublicPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cli := framework.CLI(t, ctx, env)
	report := func(t *testing.T, version string) (releaseReport, string, int) {
		t.Helper()
		args := []string{"version", "--release", version, "--release-registry", releasePrefix(), "--key", pub, "--plain-http"}
		stdout, stderr, code, err := framework.RunCLI(ctx, cli, append(args, "-o", "json")...)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Release releaseReport `json:"release"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("capwright %s -o json: exit code %d, %v, stderr %q:\n%s", strings.Join(args, " "), code, err, stderr, stdout)
		}
		text, _, _, err := framework.RunCLI(ctx, cli, args...)
		if err != nil {
			t.Fatal(err)
		}
		return got.Release, text, code
	}

	t.Run("signed with the release key", func(t *testing.T) {
		got, text, code := report(t, firstVersion)
		if code != 0 {
			t.Fatalf("exit code %d for a release signed with its key, want 0:\n%s", code, text)
		}
		// The index, two platforms, the chart and the manifests artifact.
		if len(got.Artifacts) != 5 {
			t.Fatalf("%d artifacts reported, want 5:\n%s", len(got.Artifacts), text)
		}
		for _, a := range got.Artifacts {
			isImage := strings.Contains(a.Reference, "/capwright-manager@")
			if a.Signatures == 0 || a.Verified == 0 {
				t.Errorf("%s %s: %d signatures, %d verified with the key; want it signed and verified:\n%s", a.Reference, a.Platform, a.Signatures, a.Verified, text)
			}
			if !isImage {
				continue
			}
			// The image index carries the provenance and every platform's
			// SBOM; each platform's image its own SBOM.
			want := []string{"https://cyclonedx.org/bom"}
			if a.Platform == "" {
				want = append(want, "https://slsa.dev/provenance/v1")
			}
			for _, w := range want {
				if !slices.Contains(a.Attestations, w) {
					t.Errorf("%s %s lists attestations %v, want %s:\n%s", a.Reference, a.Platform, a.Attestations, w, text)
				}
			}
		}
		for _, want := range []string{"signed, verified with " + pub, "SBOM (CycloneDX)", "provenance (SLSA v1)", releasePrefix() + "/capwright-manager"} {
			if !strings.Contains(text, want) {
				t.Errorf("the report does not say %q:\n%s", want, text)
			}
		}
		t.Logf("capwright version --release %s:\n%s", firstVersion, text)
	})
	for _, c := range []struct{ version, says string }{
		{unsignedVersion, "UNSIGNED"},
		{otherKeyVersion, "NOT signed by " + pub},
	} {
		t.Run(c.version, func(t *testing.T) {
			got, text, code := report(t, c.version)
			if code != 1 {
				t.Errorf("exit code %d, want 1 for a release that is not signed by the key:\n%s", code, text)
			}
			if len(got.Artifacts) == 0 || !strings.Contains(text, c.says) {
				t.Errorf("the report does not say %q of %s:\n%s", c.says, c.version, text)
			}
			for _, a := range got.Artifacts {
				if a.Verified != 0 {
					t.Errorf("%s: %d signatures verified with the release key, want none", a.Reference, a.Verified)
				}
			}
		})
	}
}

// releaseReport is the release `capwright version --release -o json`
// prints.
type releaseReport struct {
	Artifacts []struct {
		Reference    string   `json:"reference"`
		Platform     string   `json:"platform"`
		Signatures   int      `json:"signatures"`
		Verified     int      `json:"verified"`
		Attestations []string `json:"attestations"`
	} `json:"artifacts"`
}
