package framework

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/plane"
)

// What the gitops suite and `make demo` share: a Git working copy driven
// with the real git CLI, the example repository and the site overlay of
// the install guide, `flux bootstrap git` against the plane's Git server,
// Capwright released to the plane's registry, and the Receiver a Git
// host's push webhook calls.

// Reporter is what the helpers need of a test (testing.TB has it; the
// demo has its own).
type Reporter interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// What the install guide's examples name.
const (
	// ExampleCapwrightVersion is the Capwright version the example installs
	// (clusters/management/capwright.yaml).
	ExampleCapwrightVersion = "v0.1.0"
	// The site overlay's names for the site's registry and its mirror of
	// GitHub's releases and their downloads (docs/examples/site).
	siteRegistry  = "registry.internal.example"
	siteReleases  = "releases.internal.example"
	siteDownloads = "downloads.internal.example"
	// ExampleStackRepository is where the site's registry holds team A's
	// stack.
	ExampleStackRepository = "example/stacks/baseline"
	// ManagementPath is where bootstrap puts the management cluster.
	ManagementPath = "clusters/management"
	// ExampleProvidersFile holds the example's three providers.
	ExampleProvidersFile = "infrastructure/providers/cluster-api.yaml"
	// PreviousCAPIVersion is the release before plane.CAPIVersion: the
	// gitops suite and the demo first commit the kubeadm control plane
	// provider at it, so that a commit can upgrade it to the example's.
	PreviousCAPIVersion = "v1.13.6"
	// ExampleTenantNamespace holds team A's Clusters (the Tenant's
	// management namespace), and ExampleStackNamespace its stack on each
	// workload cluster.
	ExampleTenantNamespace = "tenant-team-a"
	ExampleStackNamespace  = "team-a"
)

// WorkingCopy is a clone of a repository on the plane's Git server, made
// and changed with the real git CLI, as a platform engineer's laptop does:
// HTTPS with the plane's CA, the server's credentials through a credential
// helper (never in a URL or an argument, so they reach no log).
type WorkingCopy struct {
	r   Reporter
	Dir string
	env []string
}

// CloneFleet clones the plane's fleet repository (empty at first) into a
// new directory under dir.
func CloneFleet(r Reporter, ctx context.Context, g *plane.GitServer, dir string) *WorkingCopy {
	r.Helper()
	ca := filepath.Join(dir, "git-ca.crt")
	if err := os.WriteFile(ca, g.CACertPEM, 0o600); err != nil {
		r.Fatalf("%v", err)
	}
	// GIT_SSL_CAINFO, not http.sslCAInfo: the environment's wins, and a
	// machine may set one for its own CAs.
	w := &WorkingCopy{r: r, Dir: filepath.Join(dir, "fleet"), env: append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_SSL_CAINFO="+ca,
		"GIT_USER="+g.Username, "GIT_PASSWORD="+g.Password,
		// What git reads as -c options, so every command of this copy
		// (clone included) has them.
		"GIT_CONFIG_COUNT=3",
		"GIT_CONFIG_KEY_0=credential.helper", `GIT_CONFIG_VALUE_0=!f() { echo "username=$GIT_USER"; echo "password=$GIT_PASSWORD"; }; f`,
		"GIT_CONFIG_KEY_1=user.name", "GIT_CONFIG_VALUE_1=Platform Engineer",
		"GIT_CONFIG_KEY_2=user.email", "GIT_CONFIG_VALUE_2=platform@example.com",
	)}
	w.git(ctx, dir, "clone", "--quiet", g.HTTPSURL("fleet.git"), w.Dir)
	return w
}

// git runs git in dir and returns its trimmed output.
func (w *WorkingCopy) git(ctx context.Context, dir string, args ...string) string {
	w.r.Helper()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.r.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write puts data at path (slash-separated, relative to the root).
func (w *WorkingCopy) Write(path string, data []byte) {
	w.r.Helper()
	full := filepath.Join(w.Dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		w.r.Fatalf("%v", err)
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		w.r.Fatalf("%v", err)
	}
}

// Read returns the file at path.
func (w *WorkingCopy) Read(path string) []byte {
	w.r.Helper()
	data, err := os.ReadFile(filepath.Join(w.Dir, filepath.FromSlash(path)))
	if err != nil {
		w.r.Fatalf("%v", err)
	}
	return data
}

// Edit rewrites the file at path with change, which must change it.
func (w *WorkingCopy) Edit(path string, change func(string) string) {
	w.r.Helper()
	before := string(w.Read(path))
	after := change(before)
	if after == before {
		w.r.Fatalf("the edit of %s changed nothing", path)
	}
	w.Write(path, []byte(after))
}

// Remove deletes the file at path.
func (w *WorkingCopy) Remove(path string) {
	w.r.Helper()
	if err := os.Remove(filepath.Join(w.Dir, filepath.FromSlash(path))); err != nil {
		w.r.Fatalf("%v", err)
	}
}

// Pull brings the copy up to the server's main (bootstrap commits there).
func (w *WorkingCopy) Pull(ctx context.Context) {
	w.r.Helper()
	w.git(ctx, w.Dir, "pull", "--quiet", "--ff-only", "origin", "main")
}

// Head is the SHA of the copy's HEAD.
func (w *WorkingCopy) Head(ctx context.Context) string {
	w.r.Helper()
	return w.git(ctx, w.Dir, "rev-parse", "HEAD")
}

// CommitAndPush commits every change with message and pushes it to main;
// it returns the commit's SHA and the time the push finished.
func (w *WorkingCopy) CommitAndPush(ctx context.Context, message string) (string, time.Time) {
	w.r.Helper()
	w.git(ctx, w.Dir, "add", "--all")
	w.git(ctx, w.Dir, "commit", "--quiet", "-m", message)
	sha := w.git(ctx, w.Dir, "rev-parse", "HEAD")
	w.git(ctx, w.Dir, "push", "--quiet", "origin", "HEAD:main")
	w.r.Logf("pushed %s: %s", sha[:12], message)
	return sha, time.Now()
}

// Revert commits the revert of sha and pushes it.
func (w *WorkingCopy) Revert(ctx context.Context, sha string) (string, time.Time) {
	w.r.Helper()
	w.git(ctx, w.Dir, "revert", "--no-edit", sha)
	head := w.git(ctx, w.Dir, "rev-parse", "HEAD")
	w.git(ctx, w.Dir, "push", "--quiet", "origin", "HEAD:main")
	w.r.Logf("pushed %s: the revert of %s", head[:12], sha[:12])
	return head, time.Now()
}

// ExampleRepository reads docs/examples/repository, path (slash-separated,
// relative to it) to content: what a user commits, as written. The release
// key goes in through the site overlay (SiteOverlay).
func ExampleRepository(r Reporter, repoRoot string) map[string][]byte {
	r.Helper()
	files, err := ReadTree(filepath.Join(repoRoot, "docs", "examples", "repository"))
	if err != nil {
		r.Fatalf("%v", err)
	}
	return files
}

// ReadTree reads every file under root, by its slash-separated path
// relative to root.
func ReadTree(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	return files, err
}

// SiteOverlay is docs/examples/site/clusters/management/kustomization.yaml
// for the plane's site: the overlay's names of the site's registry and
// release mirror are the plane's (releases stands in for GitHub), and one
// patch more sends the cert-manager Kustomization to the plane's
// cert-manager, its stand-in certsim, which runs with the plane (so the
// Kustomization applies the namespace only: plane/cert-manager, committed
// beside it). Beside it goes the cosign.pub of the key this process signs
// Capwright's releases with (ReleaseKey), which the overlay's
// secretGenerator puts into the Secret capwright.yaml verifies with.
func SiteOverlay(r Reporter, p *plane.Plane, releases *plane.ReleaseServer) map[string][]byte {
	r.Helper()
	return SiteOverlayAt(r, p, releases, ManagementPath)
}

// SiteOverlayAt is SiteOverlay for the management cluster at path
// (clusters/<name>), from docs/examples/site/<path>/kustomization.yaml.
func SiteOverlayAt(r Reporter, p *plane.Plane, releases *plane.ReleaseServer, path string) map[string][]byte {
	r.Helper()
	data, err := os.ReadFile(filepath.Join(p.RepoRoot(), "docs", "examples", "site", filepath.FromSlash(path), "kustomization.yaml"))
	if err != nil {
		r.Fatalf("%v", err)
	}
	text := strings.NewReplacer(
		siteRegistry, p.Registry.Host,
		siteReleases, releases.Host,
		siteDownloads, releases.DownloadHost,
	).Replace(string(data))
	for _, name := range []string{p.Registry.Host, releases.Host, releases.DownloadHost} {
		if !strings.Contains(text, name) {
			r.Fatalf("docs/examples/site no longer names the site's %s; update framework.SiteOverlay", name)
		}
	}
	text = strings.TrimRight(text, "\n") + `
# The plane's cert-manager is its stand-in, certsim, which runs with the
# plane; its Kustomization applies the namespace only.
- target:
    kind: Kustomization
    name: cert-manager
  patch: |
    - op: replace
      path: /spec/path
      value: ./plane/cert-manager
`
	key, err := ReleaseKey()
	if err != nil {
		r.Fatalf("%v", err)
	}
	return map[string][]byte{
		path + "/kustomization.yaml":                 []byte(text),
		ManagementPath + "/" + release.PublicKeyFile: key.PublicPEM,
		"plane/cert-manager/namespace.yaml":          []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n"),
	}
}

// ReleaseCapwright runs `make release VERSION=<version> COSIGN_KEY=…`
// (the same code, in-process) to the plane's registry, as the project's
// REGISTRY, signed with ReleaseKey: the manifests artifact the example's
// OCIRepository names (through the site overlay) and verifies, and the
// manager image it pins. Only this machine's platform is built: the
// install suite checks both.
func ReleaseCapwright(r Reporter, ctx context.Context, p *plane.Plane, version string, log func(string)) *release.Result {
	r.Helper()
	key, err := ReleaseKey()
	if err != nil {
		r.Fatalf("%v", err)
	}
	signing, err := ReleaseSigning(key)
	if err != nil {
		r.Fatalf("%v", err)
	}
	res, err := release.Release(ctx, release.Options{
		Signing:        signing,
		Version:        version,
		Registry:       p.Registry.Host + "/capwright",
		PlainHTTP:      true,
		RepoRoot:       p.RepoRoot(),
		ImagePlatforms: []string{"linux/" + runtime.GOARCH},
		CLIPlatforms:   []string{},
		// The tree under test may hold uncommitted work; the dirty-tree
		// refusal is tested in internal/release.
		AllowDirty: true,
		Log:        lineWriter(log),
	})
	if err != nil {
		r.Fatalf("make release VERSION=%s: %v", version, err)
	}
	return res
}

// lineWriter calls log with each write, trailing newline dropped.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	if w != nil {
		w(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Bootstrap runs the real `flux bootstrap git` against the plane's Git
// server over HTTPS, with the server's credentials (the password from the
// environment, as GIT_PASSWORD) and CA, for the management cluster at
// path; it returns bootstrap's output, the password masked.
func Bootstrap(r Reporter, ctx context.Context, p *plane.Plane, fluxCLI, dir, path string) string {
	r.Helper()
	ca := filepath.Join(dir, "bootstrap-ca.crt")
	if err := os.WriteFile(ca, p.Git.CACertPEM, 0o600); err != nil {
		r.Fatalf("%v", err)
	}
	cmd := exec.CommandContext(ctx, fluxCLI, "bootstrap", "git",
		"--url="+p.Git.HTTPSURL("fleet.git"),
		"--branch=main",
		"--path="+path,
		// HTTPS with basic auth for Flux's sync too (without it bootstrap
		// sets up SSH).
		"--token-auth",
		"--username="+p.Git.Username,
		"--ca-file="+ca,
		"--author-name=Flux", "--author-email=flux@example.com",
		"--silent",
		"--timeout=5m",
		"--kubeconfig="+p.Kubeconfig)
	cmd.Env = append(os.Environ(), "GIT_PASSWORD="+p.Git.Password)
	out, err := cmd.CombinedOutput()
	text := strings.ReplaceAll(string(out), p.Git.Password, "***")
	if err != nil {
		r.Fatalf("flux bootstrap git: %v\n%s", err, text)
	}
	return text
}

// FluxCLI is the flux CLI make tools builds, in binDir.
func FluxCLI(r Reporter, binDir string) string {
	r.Helper()
	path := filepath.Join(binDir, "flux")
	if _, err := os.Stat(path); err != nil {
		r.Fatalf("the flux CLI (make tools builds it): %v", err)
	}
	return path
}

// NotifyPush calls the Receiver flux-system/flux-system as the Git host's
// push webhook does.
func NotifyPush(r Reporter, ctx context.Context, c client.Client, p *plane.Plane) {
	r.Helper()
	var path string
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Receiver"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, u); err != nil {
			last = err.Error()
			return false, nil
		}
		path, _, _ = unstructured.NestedString(u.Object, "status", "webhookPath")
		last = fmt.Sprint(u.Object["status"])
		return path != "", nil
	})
	if err != nil {
		r.Fatalf("Receiver flux-system has no webhook path (%s): %v", last, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.ReceiverURL()+path, bytes.NewReader([]byte(`{"ref":"refs/heads/main"}`)))
	if err != nil {
		r.Fatalf("%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.Fatalf("calling the Receiver: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.Fatalf("the Receiver answered %s", resp.Status)
	}
}

// FluxSystemFiles are the example's clusters/management/flux-system files
// a repository holds before `flux bootstrap` (docs/gitops.md).
var FluxSystemFiles = []string{"kustomization.yaml", "receiver.yaml", "capwright-notification.yaml"}

// CustomiseFluxSystem prepares the plane and w's repository for `flux
// bootstrap`, as Flux documents for customising it: it commits and pushes
// the example's flux-system folder with empty gotk-components.yaml and
// gotk-sync.yaml for bootstrap to fill, and creates the Secrets the
// repository names but must not hold (name → data) in flux-system.
func CustomiseFluxSystem(r Reporter, ctx context.Context, p *plane.Plane, w *WorkingCopy, secrets map[string]map[string]string) {
	r.Helper()
	CustomiseFluxSystemAt(r, ctx, p, w, ManagementPath, secrets)
}

// CustomiseFluxSystemAt is CustomiseFluxSystem for the management cluster
// p bootstrapped at path: the example's clusters/management/flux-system
// files copied to path/flux-system, as docs/gitops.md says for a second
// management cluster.
func CustomiseFluxSystemAt(r Reporter, ctx context.Context, p *plane.Plane, w *WorkingCopy, path string, secrets map[string]map[string]string) {
	r.Helper()
	examples := ExampleRepository(r, p.RepoRoot())
	from, dir := ManagementPath+"/flux-system/", path+"/flux-system/"
	for _, name := range FluxSystemFiles {
		w.Write(dir+name, examples[from+name])
	}
	w.Write(dir+"gotk-components.yaml", nil)
	w.Write(dir+"gotk-sync.yaml", nil)
	message := "Customise Flux for Capwright"
	if path != ManagementPath {
		message += " at " + path
	}
	w.CommitAndPush(ctx, message)
	kube, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		r.Fatalf("%v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		r.Fatalf("creating namespace flux-system: %v", err)
	}
	for name, data := range secrets {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}, StringData: data}
		if _, err := kube.CoreV1().Secrets("flux-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			r.Fatalf("creating Secret flux-system/%s: %v", name, err)
		}
	}
}

// ExampleProviders are the example's three providers, empty, to read.
func ExampleProviders() []v1alpha1.Provider {
	return []v1alpha1.Provider{
		&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}},
		&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm"}},
		&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"}},
	}
}

// SetControlPlaneVersion sets the ControlPlaneProvider's version in the
// example's providers file, text, which must have it at plane.CAPIVersion.
func SetControlPlaneVersion(r Reporter, text, version string) string {
	r.Helper()
	const head = "kind: ControlPlaneProvider\nmetadata:\n  name: kubeadm\n  namespace: capi-kubeadm-control-plane-system\nspec:\n  version: "
	if !strings.Contains(text, head+plane.CAPIVersion) {
		r.Fatalf("%s no longer has the ControlPlaneProvider at %s, as the gitops suite, the demo and the benchmark expect", ExampleProvidersFile, plane.CAPIVersion)
	}
	return strings.Replace(text, head+plane.CAPIVersion, head+version, 1)
}
