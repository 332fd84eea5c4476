package providers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/plane"
)

// clusterctlURL is the release URL clusterctl's provider list gives the
// Cluster API providers (the catalog's, which the manager's mirror rule
// sends to the plane's stand-in for github.com).
func clusterctlURL(file string) *v1alpha1.ProviderSource {
	return &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{
		URL: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/" + file}}
}

// TestProvidersFromReleases installs real provider releases from where
// their projects publish them — GitHub release assets, served on the
// plane by a stand-in for github.com in GitHub's layout and redirect —
// through the manager's mirror rule github.com=https://<stand-in>:
// Cluster API's core (into namespace capi-moved), kubeadm bootstrap and
// control plane v1.13.6 from clusterctl's release URLs, and Cluster API
// Provider AWS v2.13.0 with only spec.version (the catalog is
// clusterctl's list). They are created while cert-manager is not
// installed (its CRDs removed): the core waits with MissingAPI, nothing
// applied, and goes on once cert-manager's CRDs are back. Then the
// kubeadm family is upgraded to v1.14.2 by changing spec.version; the
// moved core's webhooks are called with the real Cluster API manager
// behind them (webhooksOfMovedCore); Cluster API's test runtime extension
// and IPAM and add-on providers install from OCI artifacts beside them
// (otherKinds); a resync asks the release host nothing; a re-uploaded
// asset and the host going down keep the providers Ready and say why; a
// version never released is refused naming the URL.
func TestProvidersFromReleases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := newClient(t)
	// The core provider goes into a namespace of the user's choosing, not
	// the capi-system its release names (clusterctl's namespace fixes).
	const coreNamespace = "capi-moved"
	for _, ns := range []string{coreNamespace, "capi-system", "kubeadm-bootstrap", "capi-kubeadm-control-plane-system", "capa-system"} {
		ensureNamespace(t, ctx, c, ns)
	}
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: coreNamespace, Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion, Source: clusterctlURL("core-components.yaml")}}
	bootstrap := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeadm-bootstrap", Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion, Source: clusterctlURL("bootstrap-components.yaml")}}
	controlPlane := &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion, Source: clusterctlURL("control-plane-components.yaml")}}
	aws := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capa-system", Name: "aws"},
		Spec: v1alpha1.ProviderSpec{Version: plane.CAPAVersion,
			// What clusterawsadm bootstrap credentials encode-as-profile
			// gives; any value passes on the plane. The controller's IAM
			// role is optional for clusterctl (one occurrence defaults
			// it) but required by Capwright, for which any bare
			// occurrence needs a value.
			Variables: map[string]string{"AWS_B64ENCODED_CREDENTIALS": "Cg==", "AWS_CONTROLLER_IAM_ROLE": ""}}}
	kubeadmFamily := []installed{
		{core, client.ObjectKey{Namespace: coreNamespace, Name: "capi-controller-manager"}},
		{bootstrap, client.ObjectKey{Namespace: "kubeadm-bootstrap", Name: "capi-kubeadm-bootstrap-controller-manager"}},
		{controlPlane, client.ObjectKey{Namespace: "capi-kubeadm-control-plane-system", Name: "capi-kubeadm-control-plane-controller-manager"}},
	}
	all := append(kubeadmFamily, installed{aws, client.ObjectKey{Namespace: "capa-system", Name: "capa-controller-manager"}})

	// cert-manager is not installed when the providers are created: the
	// core waits for it, saying so, and goes on once it is.
	certManagerMissing := withoutCertManager(t, ctx, c)
	start := time.Now()
	for _, p := range all {
		if err := c.Create(ctx, p.obj.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for i := len(all) - 1; i >= 0; i-- {
			deleteAndWait(t, ctx, c, all[i].obj)
		}
	}()
	certManagerMissing(core)
	for _, p := range all {
		waitCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 6*time.Minute)
	}
	t.Logf("four providers Ready from their releases %s after their CRs were applied", time.Since(start).Round(time.Millisecond))
	for _, p := range kubeadmFamily {
		assertFromRelease(t, ctx, c, p, oldVersion, "registry.k8s.io/cluster-api/")
	}
	assertFromRelease(t, ctx, c, all[3], plane.CAPAVersion, "registry.k8s.io/cluster-api-aws/cluster-api-aws-controller:"+plane.CAPAVersion)
	if got := aws.Status.Artifact.URL; got != "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml" {
		t.Errorf("aws came from %s, want clusterctl's release URL for it", got)
	}

	t.Run("the latest release shows as an upgrade, in the status and in upgrade plan", func(t *testing.T) {
		releaseUpgradeShown(t, ctx, c, kubeadmFamily, newVersion)
	})

	t.Run("upgrade to v1.14.2 by changing spec.version", func(t *testing.T) {
		for _, p := range kubeadmFamily {
			updateProvider(t, ctx, c, p.obj, func() { p.obj.GetSpec().Version = newVersion })
		}
		for _, p := range kubeadmFamily {
			waitCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
			assertFromRelease(t, ctx, c, p, newVersion, "registry.k8s.io/cluster-api/")
		}
	})

	t.Run("the moved core's webhooks are called by the API server", func(t *testing.T) { webhooksOfMovedCore(t, ctx, c, core) })

	t.Run("runtime extension, IPAM and add-on providers install from OCI artifacts", func(t *testing.T) { otherKinds(t, ctx, c) })

	t.Run("capwright build prints what the manager applied from the releases", func(t *testing.T) {
		var owners []client.Object
		for _, p := range all {
			owners = append(owners, p.obj.(client.Object))
		}
		buildSameAsManager(t, ctx, c, owners, 4*3)
	})

	t.Run("a resync asks the release host nothing", func(t *testing.T) {
		since := time.Now()
		for _, p := range all {
			poke(t, ctx, c, p.obj)
		}
		// The manager's resync interval is 30s: one passes too.
		time.Sleep(35 * time.Second)
		if reqs := releases.Requests(since); len(reqs) != 0 {
			t.Errorf("a resync made %d requests to the release host, want 0: %+v", len(reqs), reqs)
		}
	})

	t.Run("a re-uploaded asset is refused naming both digests; the provider stays Ready", func(t *testing.T) {
		var before string
		for _, f := range aws.Status.Artifact.Files {
			if f.Name == "infrastructure-components.yaml" {
				before = f.SHA256
			}
		}
		files := map[string][]byte{}
		for _, name := range []string{"metadata.yaml", "infrastructure-components.yaml"} {
			files[name] = readFixture(t, "capa", plane.CAPAVersion, name)
		}
		files["infrastructure-components.yaml"] = append(files["infrastructure-components.yaml"],
			[]byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slipped-in\n  namespace: capa-system\n")...)
		releases.Publish("kubernetes-sigs", "cluster-api-provider-aws", plane.CAPAVersion, files)
		requestReconcile(t, ctx, c, aws)
		waitCondition(t, ctx, c, aws, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ReleaseChangedReason, 2*time.Minute)
		msg := conditionMessage(aws, v1alpha1.ArtifactResolvedCondition)
		if !strings.Contains(msg, "infrastructure-components.yaml was "+before+" and is now sha256:") {
			t.Errorf("ReleaseChanged message should name the file and both digests: %q", msg)
		}
		waitCondition(t, ctx, c, aws, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capa-system", Name: "slipped-in"}, &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}); !apierrors.IsNotFound(err) {
			t.Errorf("the re-uploaded file's object reached the cluster: %v", err)
		}
	})

	t.Run("the release host down keeps the providers Ready and says why", func(t *testing.T) {
		if err := releases.Stop(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := releases.Start(); err != nil {
				t.Fatal(err)
			}
		}()
		requestReconcile(t, ctx, c, core)
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ReleaseUnreachableReason, 2*time.Minute)
		if msg := conditionMessage(core, v1alpha1.ArtifactResolvedCondition); !strings.Contains(msg, "cannot reach the release host") {
			t.Errorf("ReleaseUnreachable message: %q", msg)
		}
		waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
	})

	t.Run("a version never released is refused naming the URL, nothing applied", func(t *testing.T) {
		p := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "helm"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.99.0"}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		defer deleteAndWait(t, ctx, c, p)
		waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ReleaseNotFoundReason, 2*time.Minute)
		msg := conditionMessage(p, v1alpha1.ArtifactResolvedCondition)
		if !strings.Contains(msg, "v0.99.0 was never released") || !strings.Contains(msg, "/kubernetes-sigs/cluster-api-addon-provider-helm/releases/download/v0.99.0/metadata.yaml") {
			t.Errorf("ReleaseNotFound message should name the version and the URL: %q", msg)
		}
		assertNothingApplied(t, ctx, c, p, false)
	})
}

// assertFromRelease checks a provider installed from its release: the
// version and the files' digests in status, its Kustomization reading the
// ExternalArtifact the manager serves at that digest (no OCIRepository),
// and its controller Deployment running the image the release names.
func assertFromRelease(t *testing.T, ctx context.Context, c client.Client, p installed, version, image string) {
	t.Helper()
	status := p.obj.GetStatus()
	if status.InstalledVersion != version || status.Artifact == nil || !strings.HasPrefix(status.Artifact.Revision, version+"@sha256:") ||
		len(status.Artifact.Files) != 2 {
		t.Fatalf("%s: installedVersion %q, artifact %+v; want %s from its two release files", p.obj.GetName(), status.InstalledVersion, status.Artifact, version)
	}
	key := client.ObjectKey{Namespace: p.obj.GetNamespace(), Name: p.obj.ProviderType() + "-" + p.obj.GetName()}
	var ea sourcev1.ExternalArtifact
	if err := c.Get(ctx, key, &ea); err != nil {
		t.Fatal(err)
	}
	if ea.Status.Artifact == nil || ea.Status.Artifact.Digest != status.Artifact.Digest {
		t.Errorf("%s: ExternalArtifact serves %+v, want digest %s", key, ea.Status.Artifact, status.Artifact.Digest)
	}
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, key, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.SourceRef.Kind != sourcev1.ExternalArtifactKind || ks.Status.LastAppliedRevision != status.Artifact.Digest {
		t.Errorf("%s: Kustomization reads %s and applied %s, want the ExternalArtifact at %s", key, ks.Spec.SourceRef.Kind, ks.Status.LastAppliedRevision, status.Artifact.Digest)
	}
	if err := c.Get(ctx, key, &sourcev1.OCIRepository{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: an OCIRepository exists for a provider installed from its release: %v", key, err)
	}
	assertDeploymentAvailable(t, ctx, c, p.deployment)
	var dep appsv1.Deployment
	if err := c.Get(ctx, p.deployment, &dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(got, image) || !strings.HasSuffix(got, ":"+version) {
		t.Errorf("%s runs %s, want the image the release names (%s…:%s)", p.deployment, got, image, version)
	}
}

// readFixture reads a file of a release `make fixtures` rendered.
func readFixture(t *testing.T, dir, version, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), "bin", "fixtures", dir, version, file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
