package install

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestInstallWithFluxHelmRelease installs Capwright from its released
// chart as docs/examples/capwright-helm.yaml says (an OCIRepository of the
// chart and a HelmRelease), runs the manager from the released image with
// the args the chart gives it, installs the three Cluster API providers,
// upgrades Capwright through the chart (CRDs included), then uninstalls
// everything as docs/install.md says: providers first,
// then the HelmRelease, then Capwright's CRDs.
func TestInstallWithFluxHelmRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t)
	rel := released(ctx, t, firstVersion)
	upgrade := released(ctx, t, upgradeVersion)

	// The site's overlay over docs/examples/capwright-helm.yaml: the
	// release from the plane's registry, which is also the providers'
	// mirror, over plain HTTP (the chart's values for an air-gapped site).
	install := siteOverlay(ctx, t, "capwright-helm.yaml",
		sourcePatch("oci://"+releasePrefix()+"/charts/capwright", firstVersion),
		jsonPatch{kind: helmv2.HelmReleaseKind, name: "capwright", ops: []map[string]any{
			op("add", "/spec/values/registryMirrors", []string{"registry.k8s.io/cluster-api/manifests=" + env.Registry.Host + "/cluster-api/manifests"}),
			op("add", "/spec/values/insecureRegistries", []string{env.Registry.Host}),
		}})
	hrObj := only(t, install, helmv2.HelmReleaseKind)
	start := time.Now()
	apply(ctx, t, install...)
	hr := &helmv2.HelmRelease{}
	hr.SetNamespace(hrObj.GetNamespace())
	hr.SetName(hrObj.GetName())
	// helm-controller patches its conditions before the rest of its
	// status (fluxcd/pkg runtime/patch), so Ready can be read a moment
	// before the release history it goes with: wait for both.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
			return false, err
		}
		return hr.Status.History.Latest() != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Flux installed the chart %s in %s", firstVersion, time.Since(start).Round(time.Millisecond))
	checkVerified(ctx, t, c, hr.Namespace, hr.Spec.ChartRef.Name)
	// helm-controller records a chart from an OCIRepository as
	// <semver>+<digest>, without the v.
	if got := hr.Status.History.Latest(); !strings.HasPrefix(got.ChartVersion, strings.TrimPrefix(firstVersion, "v")+"+") || got.AppVersion != firstVersion {
		t.Errorf("HelmRelease installed chart %+v, want version %s, appVersion %s", got, firstVersion, firstVersion)
	}
	namespace := hr.GetReleaseNamespace()
	var deploys appsv1.DeploymentList
	if err := c.List(ctx, &deploys, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(deploys.Items) != 1 {
		t.Fatalf("want the manager Deployment in %s, found %d Deployments", namespace, len(deploys.Items))
	}
	deploy := &deploys.Items[0]
	manager := runDeployedManager(ctx, t, deploy, rel.Image.Repository+"@"+rel.Image.Digest)
	defer func() { manager.stop() }()
	t.Run("capwright version reports the chart's version", func(t *testing.T) {
		versionReportsManager(t, ctx, deploy, firstVersion, "label app.kubernetes.io/version")
	})

	providers := installExampleProviders(ctx, t, c, start, "HelmRelease applied")

	// Upgrade Capwright through Flux: the chart's new version, whose CRDs
	// helm-controller applies (Helm itself never upgrades crds/; the
	// example asks for CreateReplace, as Flux documents).
	upgradeStart := time.Now()
	retag(ctx, t, c, hr.Namespace, hr.Spec.ChartRef.Name, upgradeVersion)
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
			return false, err
		}
		latest := hr.Status.History.Latest()
		return latest != nil && latest.AppVersion == upgradeVersion, nil
	})
	if err != nil {
		t.Fatalf("HelmRelease did not upgrade to %s: %v", upgradeVersion, err)
	}
	manager = checkUpgraded(ctx, t, c, deploy, manager, upgrade.Image.Repository+"@"+upgrade.Image.Digest, providers, upgradeStart)

	// Uninstall as the guide says. 1: the providers, while the manager
	// runs, so that Flux uninstalls them.
	for _, p := range providers {
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range providers {
		waitGone(ctx, t, c, p, 3*time.Minute)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, &appsv1.Deployment{}); err == nil {
		t.Error("the Cluster API core manager is still installed after its CoreProvider was deleted")
	}
	// 2: the HelmRelease; Helm keeps the CRDs.
	if err := c.Delete(ctx, hr); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, c, hr, 2*time.Minute)
	manager.stop()
	if n := len(capwrightCRDs(ctx, t, c)); n != len(capwrightCRDNames) {
		t.Errorf("%d Capwright CRDs after the HelmRelease was removed, want all %d (Helm keeps CRDs)", n, len(capwrightCRDNames))
	}
	// 3: Capwright's CRDs.
	for _, crd := range capwrightCRDs(ctx, t, c) {
		if err := c.Delete(ctx, &crd); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, c, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: crd.ObjectMeta}, time.Minute)
	}
}
