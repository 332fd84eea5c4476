package install

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// The install the kustomize artifact makes (manifests/).
const (
	kustomizeNamespace  = "capwright-system"
	kustomizeDeployment = "capwright-manager"
	kustomizeSA         = "capwright-manager"
)

// TestInstallWithFluxKustomization installs Capwright as an air-gapped site
// does: its release mirrored into the site's registry with `capwright
// mirror`, then docs/examples/capwright-airgap.yaml (the manifests artifact
// through an OCIRepository and a Kustomization whose images send the
// manager to the site's copy, provider artifacts through a registry
// mirror). It runs the manager from the released image,
// installs the three Cluster API providers with it
// (docs/examples/repository/infrastructure/providers), upgrades Capwright
// through Flux, and removes it, keeping the providers.
func TestInstallWithFluxKustomization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := newClient(t)
	first := released(ctx, t, firstVersion)
	upgrade := released(ctx, t, upgradeVersion)

	// The same commit gives the same image: build it again, into an OCI
	// layout this time.
	again, err := release.Image(ctx, release.Options{
		Version: firstVersion, Registry: releasePrefix(), RepoRoot: env.RepoRoot(), AllowDirty: true,
		Output: filepath.Join(t.TempDir(), "layout"), CLIPlatforms: []string{}, Log: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if again.Image.Digest != first.Image.Digest {
		t.Errorf("the image of %s is not reproducible: %s, then %s", firstVersion, first.Image.Digest, again.Image.Digest)
	}

	// The site mirrors the release first (docs/install.md, air-gapped
	// sites); the manager's image then comes from the site's registry.
	mirrorRelease(ctx, t, first)
	mirrorRelease(ctx, t, upgrade)
	siteImage := func(r *release.Result) string {
		return sitePrefix() + "/capwright/capwright-manager@" + r.Image.Digest
	}

	// The site's overlay over docs/examples/capwright-airgap.yaml: the
	// plane's registry, over plain HTTP, is the site's; the manager's
	// mirror rule sends the providers to where the suite published them.
	host := env.Registry.Host
	managerArgs, err := json.Marshal([]map[string]any{
		op("add", "/spec/template/spec/containers/0/args/-", "--registry-mirror=registry.k8s.io/cluster-api/manifests="+host+"/cluster-api/manifests"),
		op("add", "/spec/template/spec/containers/0/args/-", "--insecure-registry="+host),
	})
	if err != nil {
		t.Fatal(err)
	}
	install := siteOverlay(ctx, t, "capwright-airgap.yaml",
		sourcePatch("oci://"+sitePrefix()+"/capwright/capwright-manifests", firstVersion),
		jsonPatch{kind: kustomizev1.KustomizationKind, name: "capwright", ops: []map[string]any{
			// The suite's release registry stands in for ghcr.io/capwright.
			op("replace", "/spec/images/0/name", releasePrefix()+"/capwright-manager"),
			op("replace", "/spec/images/0/newName", sitePrefix()+"/capwright/capwright-manager"),
			op("replace", "/spec/patches/0/patch", string(managerArgs)),
		}})
	ks := only(t, install, kustomizev1.KustomizationKind)

	start := time.Now()
	apply(ctx, t, install...)
	kustomization := &kustomizev1.Kustomization{}
	kustomization.SetNamespace(ks.GetNamespace())
	kustomization.SetName(ks.GetName())
	if err := framework.WaitApplied(ctx, c, kustomization, firstVersion+"@"+first.Manifests.Digest, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("Flux applied Capwright %s in %s", firstVersion, time.Since(start).Round(time.Millisecond))
	// The release's signature verified at the site's mirror.
	checkVerified(ctx, t, c, ks.GetNamespace(), "capwright")
	checkKustomizeInstall(ctx, t, c)

	deploy := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: kustomizeNamespace, Name: kustomizeDeployment}, deploy); err != nil {
		t.Fatal(err)
	}
	manager := runDeployedManager(ctx, t, deploy, siteImage(first))
	defer func() { manager.stop() }()
	t.Run("capwright version reads the version of the image pinned by digest", func(t *testing.T) {
		versionReportsManager(t, ctx, deploy, firstVersion, "image annotation org.opencontainers.image.version")
	})

	providers := installExampleProviders(ctx, t, c, start, "install YAML applied")

	// Upgrade Capwright through Flux: the one-line change of the tag.
	upgradeStart := time.Now()
	retag(ctx, t, c, ks.GetNamespace(), "capwright", upgradeVersion)
	if err := framework.WaitApplied(ctx, c, kustomization, upgradeVersion+"@"+upgrade.Manifests.Digest, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	manager = checkUpgraded(ctx, t, c, deploy, manager, siteImage(upgrade), providers, upgradeStart)

	// Remove Capwright: Flux prunes what it applied, but not the CRDs, so
	// providers and what they installed stay.
	if err := c.Delete(ctx, kustomization); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, c, kustomization, 2*time.Minute)
	manager.stop()
	if err := c.Get(ctx, client.ObjectKeyFromObject(deploy), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the manager Deployment was not pruned with the Kustomization: %v", err)
	}
	if n := len(capwrightCRDs(ctx, t, c)); n != len(capwrightCRDNames) {
		t.Errorf("%d Capwright CRDs left after removing the Kustomization, want all %d", n, len(capwrightCRDNames))
	}
	for _, p := range providers {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Errorf("provider %s/%s after removing Capwright: %v", p.GetNamespace(), p.GetName(), err)
		}
	}
	for _, key := range []client.ObjectKey{{Name: "clusters.cluster.x-k8s.io"}} {
		if err := c.Get(ctx, key, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("Cluster API CRD %s after removing Capwright: %v", key.Name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("the Cluster API core manager after removing Capwright: %v", err)
	}
}

// capwrightCRDNames are the CRDs of the release: seven provider kinds and
// the Tenant.
var capwrightCRDNames = []string{
	"coreproviders.providers.capwright.io", "bootstrapproviders.providers.capwright.io",
	"controlplaneproviders.providers.capwright.io", "infrastructureproviders.providers.capwright.io",
	"ipamproviders.providers.capwright.io", "runtimeextensionproviders.providers.capwright.io",
	"addonproviders.providers.capwright.io", "tenants.tenancy.capwright.io",
}

// checkKustomizeInstall checks what Flux applied from the manifests
// artifact: CRDs (kept when pruned), RBAC, the manager, the artifact
// Service and its NetworkPolicy.
func checkKustomizeInstall(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, name := range append(capwrightCRDNames, "providers.clusterctl.cluster.x-k8s.io") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		if crd.Annotations["kustomize.toolkit.fluxcd.io/prune"] != "disabled" {
			t.Errorf("CRD %s is not protected from pruning: annotations %v", name, crd.Annotations)
		}
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
	} {
		if err := c.Get(ctx, client.ObjectKey{Name: "capwright-manager"}, o); err != nil {
			t.Errorf("%T capwright-manager: %v", o, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-tenant"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole capwright-tenant: %v", err)
	}
	for _, o := range []client.Object{&corev1.ServiceAccount{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
		name := "capwright-artifacts"
		if _, ok := o.(*corev1.ServiceAccount); ok {
			name = kustomizeSA
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: kustomizeNamespace, Name: name}, o); err != nil {
			t.Errorf("%T %s/%s: %v", o, kustomizeNamespace, name, err)
		}
	}
}
