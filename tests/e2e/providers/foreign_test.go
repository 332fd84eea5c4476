package providers

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestArtifactPushedByOras installs a provider artifact that Capwright
// did not make: docs/providers.md's recipe ("Publishing with oras") run as
// written — `tar`, then the real oras CLI (built by `make tools` from the
// module proxy) — on Cluster API's kubeadm bootstrap provider v1.14.2, to
// the plane's registry. The provider installs from it unmodified: its
// revision is the digest oras pushed, and its controller Deployment is
// available. No Capwright code is on the producer's path.
func TestArtifactPushedByOras(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t)
	oras := filepath.Join(env.RepoRoot(), "bin", "oras")
	if _, err := os.Stat(oras); err != nil {
		t.Fatalf("the oras CLI: %v (run `make tools`)", err)
	}

	// The release's files, as downloaded from its GitHub release.
	dir := t.TempDir()
	for _, name := range []string{"metadata.yaml", "bootstrap-components.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), readFixture(t, "capi", newVersion, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The guide's commands, on the plane's registry (plain HTTP), in a
	// repository of its own so nothing Capwright published is mistaken
	// for oras's artifact.
	registry := env.Registry.Host + "/oras-pushed"
	script := strings.ReplaceAll(orasRecipe(t), "registry.example.com", registry)
	script = strings.ReplaceAll(script, "oras push ", "oras push --plain-http ")
	cmd := exec.CommandContext(ctx, "sh", "-e", "-x", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(oras)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("the guide's recipe:\n%s", out)
	if err != nil {
		t.Fatalf("running the guide's recipe: %v", err)
	}

	repository := registry + "/capi/manifests/bootstrap-kubeadm"
	digest := strings.TrimSpace(orasOutput(t, ctx, oras, "resolve", "--plain-http", repository+":"+newVersion))
	var manifest ocispec.Manifest
	raw := orasOutput(t, ctx, oras, "manifest", "fetch", "--plain-http", repository+"@"+digest)
	if err := json.Unmarshal([]byte(raw), &manifest); err != nil {
		t.Fatalf("oras manifest fetch: %v\n%s", err, raw)
	}
	t.Logf("oras pushed %s@%s: %s", repository, digest, raw)
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("oras pushed layers %+v; want the one tar+gzip layer of the guide", manifest.Layers)
	}

	const ns = "oras-bootstrap-system"
	ensureNamespace(t, ctx, c, ns)
	core := installReleaseCore(t, ctx, c)
	defer deleteAndWait(t, ctx, c, core)
	p := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: newVersion, Source: source("oci://" + repository)}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, p)
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	if got := p.Status.Artifact; got == nil || got.Revision != newVersion+"@"+digest || p.Status.InstalledVersion != newVersion {
		t.Errorf("installed %q from %+v; want %s@%s, the artifact oras pushed", p.Status.InstalledVersion, got, newVersion, digest)
	}
	var repo sourcev1.OCIRepository
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bootstrap-kubeadm"}, &repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != digest || repo.Status.Artifact == nil || repo.Status.Artifact.Revision != digest {
		t.Errorf("the OCIRepository is pinned to %+v and holds %+v; want oras's %s", repo.Spec.Reference, repo.Status.Artifact, digest)
	}
	assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "capi-kubeadm-bootstrap-controller-manager"})
}

// orasRecipe is the shell block of docs/providers.md that publishes a
// provider artifact with oras.
func orasRecipe(t *testing.T) string {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(guide), -1) {
		if strings.Contains(m[1], "oras push ") {
			return m[1]
		}
	}
	t.Fatal("docs/providers.md has no ```sh block running oras push")
	return ""
}

func orasOutput(t *testing.T, ctx context.Context, oras string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, oras, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}
