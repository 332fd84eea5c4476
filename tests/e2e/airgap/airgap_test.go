// Package airgap is the end-to-end proof of the air-gapped path: provider
// artifacts and their container images are mirrored by the capwright CLI
// from registry A (standing in for the public registries) into registry B
// (the plane's, standing in for the site's own), A is shut down, and the
// Capwright manager, given the mirror rules the CLI wrote, installs the
// providers from B through the real Flux controllers.
package airgap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var (
	env *plane.Plane
	cli string
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{}, func(ctx context.Context, p *plane.Plane) error {
		if err := p.BuildCapwright(ctx); err != nil {
			return err
		}
		var err error
		cli, err = p.BuildCLI(ctx)
		return err
	}, func(p *plane.Plane) { env = p }))
}

const version = "v1.14.2"

// TestInstallFromMirrorWithoutTheOriginalRegistry mirrors the three
// Cluster API providers of a release with the CLI, removes the source
// registry, and installs them from the mirror. The first mirror run loses
// its link to the target part way; the same command run again finishes,
// uploading only the blobs the first left out. The core artifact's cosign
// signature travels with it, and Flux verifies it at the mirror.
func TestInstallFromMirrorWithoutTheOriginalRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// Registry A: the real release files, their images moved to A, each
	// image multi-platform; an SBOM attached to the core artifact.
	source, err := plane.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = source.Close() }()
	plainHTTP := artifact.Access{PlainHTTP: true, UserAgent: "capwright-e2e"}
	var pushed []mirrortest.PushedProvider
	for _, p := range mirrortest.CAPIProviders(t, version, source.Host) {
		ref := artifact.Reference{Host: source.Host, Repository: p.Repository("cluster-api"), Tag: version}
		pushed = append(pushed, mirrortest.PushProvider(t, plainHTTP, ref, p, nil))
	}
	core := pushed[0]
	sbom := mirrortest.PushReferrer(t, plainHTTP, core.Ref, mirrortest.Resolve(t, plainHTTP, core.Ref),
		"application/spdx+json", []byte(`{"spdxVersion":"SPDX-2.3","name":"core-cluster-api"}`))
	// The core artifact signed as `cosign sign --key` does (a .sig tag).
	key, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.CosignSign(ctx, core.Ref.Host+"/"+core.Ref.Repository+"@"+core.Digest, key); err != nil {
		t.Fatal(err)
	}
	sigRef := core.Ref
	sigRef.Tag = artifact.CosignTag(digest.Digest(core.Digest), "sig")
	signature := mirrortest.Resolve(t, plainHTTP, sigRef)

	// Mirror A → B with the CLI built from the working tree, through a
	// link to B that is lost part way through the first run.
	link := newCutProxy(env.Registry.Host)
	defer link.Close()
	target := link.Host + "/airgap"
	rulesFile := filepath.Join(t.TempDir(), "mirror-rules.conf")
	args := []string{"mirror", "--plain-http", "--to", target, "--rules-file", rulesFile}
	for _, p := range pushed {
		args = append(args, p.URL())
	}
	cache := "XDG_CACHE_HOME=" + t.TempDir()
	link.cutAfter(2)
	if out, err := runCLI(t, ctx, cache, args...); err == nil {
		t.Fatalf("capwright mirror succeeded although the link to the target was cut after two blobs:\n%s", out)
	}
	first, firstBytes, cut := link.takeUploads()
	t.Logf("interrupted run: %d blobs (%d bytes) copied, %d uploads cut", len(first), firstBytes, cut)
	if len(first) == 0 || cut == 0 {
		t.Fatalf("the interrupted run copied %d blobs and had %d uploads cut, want some of each", len(first), cut)
	}
	// Tags go last: no artifact of the interrupted run is tagged.
	for _, p := range pushed {
		ref := artifact.Reference{Host: env.Registry.Host, Repository: "airgap/" + p.Ref.Repository, Tag: p.Ref.Tag}
		if desc, err := (&artifact.Fetcher{}).Resolve(ctx, ref, plainHTTP); err == nil {
			t.Errorf("after the interrupted run %s is tagged at the target (%s) although its copy did not finish", ref, desc)
		}
	}

	// The same command again finishes the job, copying only what the
	// first run left out.
	link.stopCutting()
	if _, err := runCLI(t, ctx, cache, args...); err != nil {
		t.Fatalf("capwright mirror, run again: %v", err)
	}
	second, secondBytes, _ := link.takeUploads()
	t.Logf("resumed run: %d blobs (%d bytes) copied", len(second), secondBytes)
	copied := map[string]bool{}
	for _, d := range first {
		copied[d] = true
	}
	for _, d := range second {
		if copied[d] {
			t.Errorf("the resumed run uploaded blob %s again, which the interrupted run had copied", d)
		}
	}
	if len(second) == 0 {
		t.Error("the resumed run uploaded no blob, but the interrupted one left some out")
	}
	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatalf("the controller cannot read the rules file mirror wrote: %v", err)
	}

	// From here on A is gone: everything must come from B.
	if err := source.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := (&artifact.Fetcher{}).Resolve(ctx, core.Ref, plainHTTP); err == nil {
		t.Fatalf("registry A at %s still answers after Close", source.Host)
	}
	mirroredCore := rewrite(t, rules, core.Ref)
	if got := mirrortest.Resolve(t, plainHTTP, mirroredCore); got.Digest.String() != core.Digest {
		t.Fatalf("mirrored core artifact %s has digest %s, want the source's %s", mirroredCore, got.Digest, core.Digest)
	}
	requireReferrer(t, ctx, plainHTTP, mirroredCore, sbom)
	mirroredSig := mirroredCore
	mirroredSig.Tag = sigRef.Tag
	if got := mirrortest.Resolve(t, plainHTTP, mirroredSig); got.Digest != signature.Digest {
		t.Fatalf("the cosign signature at the mirror %s has digest %s, want the source's %s", mirroredSig, got.Digest, signature.Digest)
	}

	manager, err := env.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{
		"--registry-mirror-file=" + rulesFile,
		"--insecure-registry=" + link.Host,
		"--resync-interval=30s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Stop()

	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	// The CRs name the original registry, exactly as at a connected site.
	namespaces := []string{"capi-system", "capi-kubeadm-bootstrap-system", "capi-kubeadm-control-plane-system"}
	objs := []v1alpha1.Provider{
		&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "cluster-api"}},
		&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[1], Name: "kubeadm"}},
		&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[2], Name: "kubeadm"}},
	}
	start := time.Now()
	for i, obj := range objs {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			t.Fatal(err)
		}
		spec := obj.GetSpec()
		spec.Version = version
		spec.Source = &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: pushed[i].Ref.URL()}}}
		if i == 0 {
			// Flux verifies the core artifact's signature at the mirror.
			keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i], Name: "cosign-keys"}, Data: map[string][]byte{"cosign.pub": key.PublicPEM}}
			if err := c.Create(ctx, keys); err != nil {
				t.Fatal(err)
			}
			spec.Source.OCI.Verify = &v1alpha1.OCIVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: keys.Name}}
		}
		if err := c.Create(ctx, obj.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	// The next test installs the same providers: remove these, with the
	// manager still running to finalize them.
	defer func() {
		for i := len(objs) - 1; i >= 0; i-- {
			framework.DeleteProviderAndWait(t, ctx, c, objs[i])
		}
	}()
	for _, obj := range objs {
		if err := framework.WaitReady(ctx, c, obj.(framework.Conditioned), 5*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("three providers Ready from the mirror %s after their CRs were applied", time.Since(start).Round(time.Millisecond))

	for i, obj := range objs {
		ns := obj.GetNamespace()
		// The source Flux pulls from is B, pinned to the digest A had.
		var repos sourcev1.OCIRepositoryList
		if err := c.List(ctx, &repos, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(repos.Items) != 1 {
			t.Fatalf("namespace %s: %d OCIRepositories, want 1", ns, len(repos.Items))
		}
		repo := repos.Items[0]
		if want := rewrite(t, rules, pushed[i].Ref).URL(); repo.Spec.URL != want {
			t.Errorf("OCIRepository %s/%s pulls %s, want the mirror %s", ns, repo.Name, repo.Spec.URL, want)
		}
		if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != pushed[i].Digest {
			t.Errorf("OCIRepository %s/%s reference %+v, want digest %s", ns, repo.Name, repo.Spec.Reference, pushed[i].Digest)
		}
		if i == 0 {
			if cond := apimeta.FindStatusCondition(repo.Status.Conditions, sourcev1.SourceVerifiedCondition); cond == nil || cond.Status != metav1.ConditionTrue {
				t.Errorf("OCIRepository %s/%s: SourceVerified %v, want True (the signature verified at the mirror)", ns, repo.Name, cond)
			}
		}
		if got := obj.GetStatus(); !strings.HasSuffix(got.InstalledVersion, version) {
			t.Errorf("%s/%s installedVersion %q, want %s", ns, obj.GetName(), got.InstalledVersion, version)
		}

		// Every container image of the installed Deployments is B's.
		var deployments appsv1.DeploymentList
		if err := c.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(deployments.Items) == 0 {
			t.Fatalf("namespace %s: no Deployment installed", ns)
		}
		for _, d := range deployments.Items {
			pod := d.Spec.Template.Spec
			for _, ctr := range append(pod.InitContainers, pod.Containers...) {
				if !strings.HasPrefix(ctr.Image, target+"/") {
					t.Errorf("Deployment %s/%s container %s runs %s, not an image of the mirror %s", ns, d.Name, ctr.Name, ctr.Image, target)
				}
				if _, ok := pushed[i].Images[strings.Replace(ctr.Image, target, source.Host, 1)]; !ok {
					t.Errorf("Deployment %s/%s container %s runs %s, which is no mirrored image of %s", ns, d.Name, ctr.Name, ctr.Image, pushed[i].Ref)
				}
			}
			if d.Status.AvailableReplicas < 1 {
				t.Errorf("Deployment %s/%s has no available replica", ns, d.Name)
			}
		}
	}
}

// runCLI runs the capwright CLI with env added to its environment.
func runCLI(t *testing.T, ctx context.Context, env string, args ...string) ([]byte, error) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	t.Logf("capwright %s (%s, %v):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), err, out)
	return out, err
}

// rewrite is where the mirror rules send ref.
func rewrite(t *testing.T, rules catalog.Mirrors, ref artifact.Reference) artifact.Reference {
	t.Helper()
	to, ok := rules.Rewrite(ref.Host + "/" + ref.Repository)
	if !ok {
		t.Fatalf("no mirror rule matches %s/%s; rules: %v", ref.Host, ref.Repository, rules)
	}
	host, repository, _ := strings.Cut(to, "/")
	return artifact.Reference{Host: host, Repository: repository, Tag: ref.Tag}
}

// requireReferrer checks that subject has want among its referrers.
func requireReferrer(t *testing.T, ctx context.Context, access artifact.Access, subject artifact.Reference, want ocispec.Descriptor) {
	t.Helper()
	repo, release, err := access.Repository(subject, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	desc := mirrortest.Resolve(t, access, subject)
	found := false
	if err := repo.Referrers(ctx, desc, "", func(refs []ocispec.Descriptor) error {
		for _, r := range refs {
			found = found || r.Digest == want.Digest
		}
		return nil
	}); err != nil {
		t.Fatalf("listing the referrers of %s: %v", subject, err)
	}
	if !found {
		t.Errorf("the SBOM %s of the core artifact was not mirrored to %s", want.Digest, subject)
	}
}
