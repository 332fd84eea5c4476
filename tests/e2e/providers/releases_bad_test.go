package providers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// releaseOwner is the GitHub owner of the small test releases the stand-in
// serves for the bad-input tests; the manager's mirror rule for github.com
// sends their clusterctl URLs to the stand-in.
const releaseOwner = "acme"

// testRelease publishes release version of github.com/acme/repo on the
// stand-in: a metadata.yaml with release series v0.1 (contract v1beta2)
// and infrastructure components of a Deployment in namespace ns, or
// components when given. It returns the provider's source: clusterctl's
// URL of the release, which the mirror rule sends to the stand-in.
func testRelease(repo, version, ns string, components []byte) *v1alpha1.ProviderSource {
	if components == nil {
		components = testComponents(ns, repo)
	}
	releases.Publish(releaseOwner, repo, version, map[string][]byte{
		"metadata.yaml":                  testMetadata("v1beta2"),
		"infrastructure-components.yaml": components,
	})
	return &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{
		URL: "https://github.com/" + releaseOwner + "/" + repo + "/releases/latest/infrastructure-components.yaml"}}
}

// standInURL is the URL of a release file on the stand-in, in the form the
// manager asks for it (the mirror rule keeps the path of the download
// link).
func standInURL(repo, version, file string) string {
	return releases.DownloadURL(releaseOwner, repo, version, file)
}

// TestBadProviderReleases installs providers from release inputs that
// must be refused, each a release on the stand-in for github.com through
// the manager's mirror rule: a redirect to a host neither the mirror
// rules nor --release-redirect-host allow, a wrong token for a private
// project, a components file over the manager's --max-artifact-size, and a
// metadata.yaml without the version's release series. Each is refused on
// ArtifactResolved with a message naming the URL and the fix, and nothing
// of it is applied. (A version never released, a re-uploaded asset and the
// host down are TestProvidersFromReleases'.)
func TestBadProviderReleases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)

	// refuse creates the provider, waits for the refusal and checks its
	// message and that nothing was applied; the provider is deleted when
	// the test ends.
	refuse := func(t *testing.T, p *v1alpha1.InfrastructureProvider, reason string, wants ...string) string {
		t.Helper()
		ensureNamespace(t, ctx, c, p.Namespace)
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteAndWait(t, ctx, c, p) })
		waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, reason, 2*time.Minute)
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionFalse, "", time.Minute)
		msg := conditionMessage(p, v1alpha1.ArtifactResolvedCondition)
		t.Logf("%s: ArtifactResolved False, %s: %s", p.Name, reason, msg)
		for _, want := range wants {
			if !strings.Contains(msg, want) {
				t.Errorf("the %s message lacks %q:\n%s", reason, want, msg)
			}
		}
		assertReleaseNotApplied(t, ctx, c, p)
		return msg
	}

	t.Run("a redirect to a host the rules do not allow", func(t *testing.T) {
		const repo, version = "cluster-api-provider-moved", "v0.1.0"
		src := testRelease(repo, version, "moved-system", nil)
		// The release host sends metadata.yaml elsewhere: not its download
		// host (--release-redirect-host names the stand-in's), not a host
		// of a mirror rule. The manager must not even ask it.
		elsewhere := "https://downloads.example.net/" + releaseOwner + "/" + repo + "/" + version + "/metadata.yaml"
		releases.Redirect(releaseOwner, repo, version, "metadata.yaml", elsewhere)
		defer releases.Redirect(releaseOwner, repo, version, "metadata.yaml", "")
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "moved-system", Name: "moved"},
			Spec: v1alpha1.ProviderSpec{Version: version, Source: src}}
		refuse(t, p, v1alpha1.ResolveFailedReason,
			standInURL(repo, version, "metadata.yaml")+" redirects to "+elsewhere+", a host the redirect rules do not allow",
			"if downloads.example.net is the project's download host, allow it with the manager's --release-redirect-host; otherwise check the URL")
	})

	t.Run("a wrong token for a private project", func(t *testing.T) {
		const repo, version, ns = "cluster-api-provider-private", "v0.1.0", "private-release-system"
		const token, wrong = "ghp_release-e2e-right-token-0123456789", "ghp_release-e2e-wrong-token-9876543210"
		src := testRelease(repo, version, ns, nil)
		// GitHub hides a private project: 404 to any request without its
		// token, with a wrong one too.
		releases.Private(releaseOwner, repo, token)
		src.Release.SecretRef = &meta.LocalObjectReference{Name: "release-token"}
		ensureNamespace(t, ctx, c, ns)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-token"},
			StringData: map[string]string{"token": wrong}}
		if err := c.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Delete(ctx, secret) }()
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
			Spec: v1alpha1.ProviderSpec{Version: version, Source: src}}
		since := time.Now()
		msg := refuse(t, p, v1alpha1.ReleaseNotFoundReason,
			"version "+version+" was never released at "+standInURL(repo, version, "metadata.yaml")+" (HTTP 404 Not Found), or the host does not accept the credentials sent (a bearer token)",
			"check the credentials in spec.source.release.secretRef and that they may read this project's releases")
		if strings.Contains(msg, wrong) {
			t.Error("the message shows the token")
		}
		var sent int
		for _, r := range releases.Requests(since) {
			if strings.Contains(r.Path, "/"+repo+"/") {
				if !r.Credentials || r.Authorized || r.Status != http.StatusNotFound {
					t.Errorf("request %+v: want the wrong token sent and answered 404", r)
				}
				sent++
			}
		}
		if sent == 0 {
			t.Error("no request reached the private project")
		}

		// The fix the message names: the right token in the Secret.
		secret.StringData = map[string]string{"token": token}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		requestReconcile(t, ctx, c, p)
		waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason, 2*time.Minute)
	})

	t.Run("a components file over the size bound", func(t *testing.T) {
		const repo, version, ns = "cluster-api-provider-huge", "v0.1.0", "huge-system"
		// Real YAML: the provider's components and a ConfigMap that makes
		// them one byte over the manager's bound (--max-artifact-size, 64
		// MiB here as by default) on its own.
		components := testComponents(ns, repo)
		components = append(components, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: padding\n  namespace: "+ns+"\ndata:\n  padding: \""...)
		components = append(components, bytes.Repeat([]byte("x"), maxArtifactSize-len(components)-2+1)...)
		components = append(components, "\"\n"...)
		src := testRelease(repo, version, ns, components)
		// A re-upload of an empty file frees the stand-in's 64 MiB.
		defer releases.Publish(releaseOwner, repo, version, map[string][]byte{"infrastructure-components.yaml": nil})
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "huge"},
			Spec: v1alpha1.ProviderSpec{Version: version, Source: src}}
		refuse(t, p, v1alpha1.ArtifactTooLargeReason,
			standInURL(repo, version, "infrastructure-components.yaml")+fmt.Sprintf(" does not fit the size limit of %d bytes for the release files together", maxArtifactSize),
			fmt.Sprintf("its Content-Length is %d bytes", len(components)),
			"raise the manager's --max-artifact-size if this release is really that large")
	})

	t.Run("a metadata.yaml without the version's release series", func(t *testing.T) {
		const repo, version, ns = "cluster-api-provider-unlisted", "v0.2.0", "unlisted-system"
		// Release v0.2.0 ships the metadata.yaml of v0.1: series v0.1 only.
		src := testRelease(repo, version, ns, nil)
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlisted"},
			Spec: v1alpha1.ProviderSpec{Version: version, Source: src}}
		refuse(t, p, v1alpha1.ReleaseInvalidReason,
			"metadata.yaml from "+standInURL(repo, version, "metadata.yaml")+" has no release series for version v0.2.0 (v0.2); it lists v0.1 (v1beta2)",
			"a release's metadata.yaml must list its own release series: check that the URL and the version belong to the same project, or ask the project to fix its release")
	})
}

// maxArtifactSize is the manager's --max-artifact-size in this suite: the
// default, 64Mi.
const maxArtifactSize = 64 << 20

// TestReleaseHostHangs makes the stand-in for github.com accept requests
// and answer none: a provider installed from its release stays Ready and
// says why, a first install fails once the manager's --registry-timeout
// has passed, saying so and naming the URL, with nothing applied, and it
// is installed once the host answers again.
func TestReleaseHostHangs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t)
	core := installReleaseCore(t, ctx, c)
	defer deleteAndWait(t, ctx, c, core)

	const repo, version, ns = "cluster-api-provider-slow", "v0.1.0", "slow-system"
	ensureNamespace(t, ctx, c, ns)
	first := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"},
		Spec: v1alpha1.ProviderSpec{Version: version, Source: testRelease(repo, version, ns, nil)}}

	releases.Hang()
	defer releases.Answer()
	since := time.Now()
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, first)
	requestReconcile(t, ctx, c, core)

	timeout := registryTimeout
	waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ReleaseUnreachableReason, timeout+time.Minute)
	msg := conditionMessage(core, v1alpha1.ArtifactResolvedCondition)
	t.Logf("installed core, host hanging: ArtifactResolved True, ReleaseUnreachable: %s", msg)
	for _, want := range []string{
		"cannot reach the release host to check release " + newVersion + " of https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml again",
		fmt.Sprintf("the release host did not answer within %s (the manager's --registry-timeout)", timeout),
		"the revision checked when it was installed stays installed",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("ReleaseUnreachable message lacks %q:\n%s", want, msg)
		}
	}
	waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Second)
	assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"})

	waitCondition(t, ctx, c, first, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason, time.Minute)
	failedAfter := time.Since(since)
	msg = conditionMessage(first, v1alpha1.ArtifactResolvedCondition)
	t.Logf("first install, host hanging: ArtifactResolved False %s after the provider was created, ResolveFailed: %s", failedAfter.Round(time.Second), msg)
	for _, want := range []string{
		"fetching " + standInURL(repo, version, "metadata.yaml") + ": ",
		fmt.Sprintf("the release host did not answer within %s (the manager's --registry-timeout)", timeout),
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("ResolveFailed message lacks %q:\n%s", want, msg)
		}
	}
	if failedAfter < timeout || failedAfter > timeout+time.Minute {
		t.Errorf("the first install failed %s after it was created; want the manager's --registry-timeout (%s) to bound the wait", failedAfter, timeout)
	}
	// The host was asked and held the request until the manager gave up
	// (status 0: never answered).
	var held bool
	for _, r := range releases.Requests(since) {
		if r.Path == "/"+releaseOwner+"/"+repo+"/releases/download/"+version+"/metadata.yaml" && r.Status == 0 {
			held = true
		}
	}
	if !held {
		t.Errorf("no request for the first install's metadata.yaml was held unanswered: %+v", releases.Requests(since))
	}
	assertReleaseNotApplied(t, ctx, c, first)

	releases.Answer()
	requestReconcile(t, ctx, c, first)
	waitCondition(t, ctx, c, first, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "test-controller-manager"})
	requestReconcile(t, ctx, c, core)
	waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason, 2*time.Minute)
}

// installReleaseCore installs Cluster API's core provider v1.14.2 from its
// release URL (through the mirror rule to the stand-in) and waits until it
// is Ready; the caller deletes it.
func installReleaseCore(t *testing.T, ctx context.Context, c client.Client) *v1alpha1.CoreProvider {
	t.Helper()
	ensureNamespace(t, ctx, c, "capi-system")
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: newVersion, Source: clusterctlURL("core-components.yaml")}}
	if err := c.Create(ctx, core); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 6*time.Minute)
	return core
}

// assertReleaseNotApplied checks that nothing of a provider refused from
// its release was handed to Flux or reached the cluster: no
// ExternalArtifact, no Kustomization, no OCIRepository, and no Deployment
// of its components (test-controller-manager in its namespace).
func assertReleaseNotApplied(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	key := client.ObjectKey{Namespace: p.GetNamespace(), Name: p.ProviderType() + "-" + p.GetName()}
	for _, obj := range []client.Object{&sourcev1.ExternalArtifact{}, &kustomizev1.Kustomization{}, &sourcev1.OCIRepository{}} {
		if err := c.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("a %T %s was written for refused %s: %v", obj, key, p.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.GetNamespace(), Name: "test-controller-manager"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused %s: its Deployment reached the cluster: %v", p.GetName(), err)
	}
	if status := p.GetStatus(); status.InstalledVersion != "" || status.Artifact != nil {
		t.Errorf("refused %s: status says installed %q, artifact %+v", p.GetName(), status.InstalledVersion, status.Artifact)
	}
}
