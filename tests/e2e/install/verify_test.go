package install

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// The guide's two installs, each verifying the release's signature.
const (
	manifestsInstall = "repository/clusters/management/capwright.yaml"
	chartInstall     = "capwright-helm.yaml"
)

// TestInstallRefusesAnUnverifiedRelease applies both installs of the guide
// — the manifests artifact (the example repository's capwright.yaml) and
// the chart (capwright-helm.yaml) — at a release without signatures and at
// one signed by another key: source-controller refuses each
// (VerificationError), and Flux applies nothing of it.
func TestInstallRefusesAnUnverifiedRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	type refused struct{ example, version, name string }
	var installs []refused
	for _, version := range []string{unsignedVersion, otherKeyVersion} {
		released(ctx, t, version)
		for _, file := range []string{manifestsInstall, chartInstall} {
			// Its own names, so that no other install is touched.
			name := "capwright-" + strings.TrimSuffix(path.Base(file), ".yaml") + "-" + strings.ReplaceAll(version, ".", "-")
			objs := siteOverlay(ctx, t, file, renamedInstall(file, version, name)...)
			apply(ctx, t, objs...)
			installs = append(installs, refused{example: file, version: version, name: name})
		}
	}
	for _, in := range installs {
		t.Run(in.example+" at "+in.version, func(t *testing.T) {
			repo := &sourcev1.OCIRepository{}
			key := client.ObjectKey{Namespace: "flux-system", Name: in.name}
			var ready *metav1.Condition
			err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, key, repo); err != nil {
					return false, err
				}
				ready = apimeta.FindStatusCondition(repo.Status.Conditions, "Ready")
				return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == sourcev1.VerificationError, nil
			})
			if err != nil {
				t.Fatalf("OCIRepository %s was not refused for its signature: Ready %+v, artifact %+v", key, ready, repo.Status.Artifact)
			}
			if repo.Status.Artifact != nil {
				t.Errorf("OCIRepository %s serves an artifact of an unverified release: %+v", key, repo.Status.Artifact)
			}
			t.Logf("source-controller refused %s at %s: %s", in.example, in.version, ready.Message)
			if in.example == manifestsInstall {
				ks := &kustomizev1.Kustomization{}
				if err := c.Get(ctx, key, ks); err != nil {
					t.Fatal(err)
				}
				if ks.Status.LastAppliedRevision != "" || (ks.Status.Inventory != nil && len(ks.Status.Inventory.Entries) > 0) {
					t.Errorf("Kustomization %s applied an unverified release: revision %q, inventory %+v", key, ks.Status.LastAppliedRevision, ks.Status.Inventory)
				}
				return
			}
			hr := &helmv2.HelmRelease{}
			if err := c.Get(ctx, key, hr); err != nil {
				t.Fatal(err)
			}
			if len(hr.Status.History) > 0 {
				t.Errorf("HelmRelease %s installed an unverified chart: %+v", key, hr.Status.History)
			}
		})
	}
}

// renamedInstall are the overlay's patches that make an install of the
// guide follow version on the plane's registry under its own name (its
// OCIRepository, Kustomization or HelmRelease and the references between
// them, and Helm's release); the Secret with the release key keeps the
// name the guide gives it.
func renamedInstall(file, version, name string) []jsonPatch {
	url, installer := "oci://"+releasePrefix()+"/capwright-manifests", jsonPatch{kind: kustomizev1.KustomizationKind, name: "capwright", ops: []map[string]any{
		op("replace", "/metadata/name", name),
		op("replace", "/spec/sourceRef/name", name),
	}}
	if file == chartInstall {
		url, installer = "oci://"+releasePrefix()+"/charts/capwright", jsonPatch{kind: helmv2.HelmReleaseKind, name: "capwright", ops: []map[string]any{
			op("replace", "/metadata/name", name),
			op("replace", "/spec/chartRef/name", name),
			op("replace", "/spec/releaseName", name),
		}}
	}
	source := sourcePatch(url, version)
	source.ops = append(source.ops, op("replace", "/metadata/name", name))
	return []jsonPatch{source, installer}
}

// checkVerified checks that source-controller verified the signature of
// the OCIRepository namespace/name before it served the artifact.
func checkVerified(ctx context.Context, t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	repo := &sourcev1.OCIRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Verify == nil {
		t.Fatalf("OCIRepository %s/%s has no verify: the guide's install does not verify Capwright's release", namespace, name)
	}
	cond := apimeta.FindStatusCondition(repo.Status.Conditions, sourcev1.SourceVerifiedCondition)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("OCIRepository %s/%s: %s is %+v, want True", namespace, name, sourcev1.SourceVerifiedCondition, cond)
	}
	t.Logf("source-controller: %s", cond.Message)
}

// TestReleasedImageCarriesSignedSBOMAndProvenance reads the attestations
// of a released image back with `cosign verify-attestation` and the
// release's public key, as docs/security.md tells users to: each
// platform's SBOM lists the Go modules, with their versions, that `go
// version -m` reads from the manager binary in that platform's image; the
// provenance names the commit released. Both verify again at an
// air-gapped site after `capwright mirror`.
func TestReleasedImageCarriesSignedSBOMAndProvenance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := released(ctx, t, firstVersion)
	key, err := framework.ReleaseKey()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(r.Image.Repository)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	var index ocispec.Index
	fetchJSON(ctx, t, repo, r.Image.Digest, &index)
	if len(index.Manifests) != 2 {
		t.Fatalf("image index of %s has %d manifests, want linux/amd64 and linux/arm64", r.Image.Ref(), len(index.Manifests))
	}
	for _, m := range index.Manifests {
		platform := m.Platform.OS + "/" + m.Platform.Architecture
		t.Run("SBOM of "+platform, func(t *testing.T) {
			statements, err := framework.CosignVerifyAttestations(ctx, r.Image.Repository+"@"+m.Digest.String(), "cyclonedx", key)
			if err != nil {
				t.Fatal(err)
			}
			if len(statements) != 1 {
				t.Fatalf("%d verified SBOMs on the %s image, want 1", len(statements), platform)
			}
			var sbom struct {
				Predicate struct {
					Components []struct {
						Name    string `json:"name"`
						Version string `json:"version"`
					} `json:"components"`
				} `json:"predicate"`
			}
			if err := json.Unmarshal(statements[0], &sbom); err != nil {
				t.Fatal(err)
			}
			listed := map[string]string{}
			for _, comp := range sbom.Predicate.Components {
				listed[comp.Name] = comp.Version
			}
			modules := goVersionModules(t, managerBinary(ctx, t, repo, m))
			for mod, version := range modules {
				got, ok := listed[mod]
				switch {
				case !ok && version == "(devel)":
					// A module replaced by a directory of this repository
					// (./api): cyclonedx-gomod lists no version-less
					// module; it is the released commit's source, which
					// the provenance names.
					t.Logf("the SBOM leaves out %s, built from this repository's tree", mod)
				case !ok:
					t.Errorf("the SBOM of the %s image does not list module %s %s", platform, mod, version)
				case version != "(devel)" && got != version:
					t.Errorf("the SBOM of the %s image lists %s %s, the binary holds %s", platform, mod, got, version)
				}
			}
			t.Logf("the SBOM of the %s image: %d components, checked against the %d modules go version -m reads from its manager binary", platform, len(listed), len(modules))
		})
	}
	head := releasedFrom(r)
	checkProvenance := func(t *testing.T, ref string) {
		statements, err := framework.CosignVerifyAttestations(ctx, ref, "slsaprovenance1", key)
		if err != nil {
			t.Fatal(err)
		}
		if len(statements) != 1 {
			t.Fatalf("%d verified provenance statements on %s, want 1", len(statements), ref)
		}
		var p struct {
			Predicate struct {
				BuildDefinition struct {
					ExternalParameters struct {
						Source string `json:"source"`
					} `json:"externalParameters"`
					ResolvedDependencies []struct {
						Digest map[string]string `json:"digest"`
					} `json:"resolvedDependencies"`
				} `json:"buildDefinition"`
			} `json:"predicate"`
		}
		if err := json.Unmarshal(statements[0], &p); err != nil {
			t.Fatal(err)
		}
		def := p.Predicate.BuildDefinition
		if len(def.ResolvedDependencies) == 0 || !namesCommit(def.ExternalParameters.Source, def.ResolvedDependencies[0].Digest["gitCommit"], head) {
			t.Errorf("the provenance of %s does not name the commit released (%s):\n%s", ref, head[0], statements[0])
		}
	}
	t.Run("provenance", func(t *testing.T) { checkProvenance(t, r.Image.Repository+"@"+r.Image.Digest) })
	t.Run("provenance at the site's mirror", func(t *testing.T) {
		mirrorRelease(ctx, t, r)
		checkProvenance(t, sitePrefix()+"/capwright/capwright-manager@"+r.Image.Digest)
	})
}

// releasedFrom are HEAD before and after the suite released r: the
// commit it was built from is one of them.
func releasedFrom(r *release.Result) [2]string {
	releases.Lock()
	defer releases.Unlock()
	return releases.heads[r.Image.Digest]
}

// namesCommit says the provenance's source and first material are one of
// heads.
func namesCommit(source, material string, heads [2]string) bool {
	for _, h := range heads {
		if h != "" && strings.HasSuffix(source, "@"+h) && material == h {
			return true
		}
	}
	return false
}

// fetchJSON decodes the manifest or index of repo at digest into v.
func fetchJSON(ctx context.Context, t *testing.T, repo *remote.Repository, digest string, v any) {
	t.Helper()
	_, rc, err := repo.FetchReference(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// managerBinary extracts /manager from the image m of repo into a file.
func managerBinary(ctx context.Context, t *testing.T, repo *remote.Repository, m ocispec.Descriptor) string {
	t.Helper()
	var manifest ocispec.Manifest
	fetchJSON(ctx, t, repo, m.Digest.String(), &manifest)
	if len(manifest.Layers) != 1 {
		t.Fatalf("manager image %s has %d layers, want the binary's", m.Digest, len(manifest.Layers))
	}
	data, err := content.FetchAll(ctx, repo, manifest.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no manager binary in the layer of %s", m.Digest)
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name != "manager" {
			continue
		}
		out := filepath.Join(t.TempDir(), "manager")
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// goVersionModules runs `go version -m` on binary: module path → version,
// a replacement's version where one is given.
func goVersionModules(t *testing.T, binary string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", binary, err)
	}
	modules := map[string]string{}
	var last string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "dep":
			last, modules[f[1]] = f[1], f[2]
		case len(f) >= 3 && f[0] == "=>" && last != "":
			modules[last] = f[2]
		}
	}
	if len(modules) == 0 {
		t.Fatalf("go version -m %s lists no modules:\n%s", binary, out)
	}
	return modules
}
