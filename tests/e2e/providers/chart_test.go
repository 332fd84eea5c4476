package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// charts runs while the core provider is Ready: a provider packaged as an
// OCI Helm chart is installed by the real helm-controller through a
// HelmRelease, with clusterctl's labels and the chart values of the CR.
// Its chart is signed with the cosign CLI and the provider verifies it;
// two more chart providers, whose charts are unsigned or signed with
// another key, are refused by source-controller at the same time, say
// why, and install nothing.
func charts(t *testing.T, ctx context.Context, c client.Client) {
	t.Run("a provider packaged as a Helm chart is installed by a HelmRelease", func(t *testing.T) {
		if err := helmv2.AddToScheme(c.Scheme()); err != nil {
			t.Fatal(err)
		}
		key, err := framework.NewCosignKey()
		if err != nil {
			t.Fatal(err)
		}
		otherKey, err := framework.NewCosignKey()
		if err != nil {
			t.Fatal(err)
		}
		// The signed chart, and the refused ones (nil: unsigned).
		charts := []struct {
			namespace, name string
			key             *framework.CosignKey
			p               *v1alpha1.AddonProvider
		}{{"helmtest-system", "helmtest", key, nil}, {"verify-chart-unsigned", "unsigned", nil, nil}, {"verify-chart-forged", "forged", otherKey, nil}}
		for i, ch := range charts {
			files := map[string][]byte{
				"templates/deployment.yaml": []byte(framework.ProviderChartDeployment),
				"values.yaml":               []byte("replicas: 1\n"),
			}
			if i == 0 {
				// The installed chart's kind, whose objects hold its deletion.
				files["crds/helmtestaddons.yaml"] = []byte(helmTestAddonCRD)
			}
			url, err := framework.PushChart(ctx, env.Registry.Host, "charts/addon-"+ch.name, "addon-"+ch.name, "v0.1.0", files)
			if err != nil {
				t.Fatal(err)
			}
			if ch.key != nil {
				if err := framework.CosignSignTag(ctx, url, "v0.1.0", ch.key); err != nil {
					t.Fatal(err)
				}
			}
			ensureNamespace(t, ctx, c, ch.namespace)
			keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ch.namespace, Name: "cosign-keys"}, Data: map[string][]byte{"cosign.pub": key.PublicPEM}}
			if err := c.Create(ctx, keys); err != nil {
				t.Fatal(err)
			}
			charts[i].p = &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ch.namespace, Name: ch.name},
				Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
					OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true,
						Verify: &v1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: keys.Name}}},
					Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 2}`)},
				}}}}
			if err := c.Create(ctx, charts[i].p); err != nil {
				t.Fatal(err)
			}
		}
		p := charts[0].p
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
		assertVerified(t, ctx, c, client.ObjectKey{Namespace: p.Namespace, Name: "addon-" + p.Name}, metav1.ConditionTrue)
		for _, ch := range charts[1:] {
			refusedUnverified(t, ctx, c, ch.p, "addon-"+ch.name)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ch.namespace, Name: "helmtest-controller-manager"}, &appsv1.Deployment{}); err == nil {
				t.Errorf("AddonProvider %s/%s: its chart was installed although it failed verification", ch.namespace, ch.name)
			}
			deleteAndWait(t, ctx, c, ch.p)
		}
		if p.Status.InstalledVersion != "v0.1.0" {
			t.Errorf("installedVersion = %q", p.Status.InstalledVersion)
		}
		var hr helmv2.HelmRelease
		if err := c.Get(ctx, client.ObjectKey{Namespace: "helmtest-system", Name: "addon-helmtest"}, &hr); err != nil {
			t.Fatalf("no HelmRelease for the chart provider: %v", err)
		}
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "helmtest-system", Name: "helmtest-controller-manager"}, dep); err != nil {
			t.Fatal(err)
		}
		if *dep.Spec.Replicas != 2 || dep.Labels["cluster.x-k8s.io/provider"] != "addon-helmtest" {
			t.Errorf("chart values or clusterctl labels not applied: replicas %d labels %v", *dep.Spec.Replicas, dep.Labels)
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKeyFromObject(dep))
		// capwright status shows the HelmRelease and its release's objects.
		statusMatchesProvider(t, ctx, statusClient(t), framework.CLI(t, ctx, env), p)

		// Like a provider from OCI components, a chart provider waits
		// while objects of the Cluster API kinds it installed exist
		// (helm-controller's inventory names its CRDs).
		addon := &unstructured.Unstructured{}
		addon.SetGroupVersionKind(schema.GroupVersionKind{Group: "addons.cluster.x-k8s.io", Version: "v1alpha1", Kind: "HelmTestAddon"})
		addon.SetNamespace("default")
		addon.SetName("blocker")
		if err := framework.CreateWithRetry(ctx, c, addon); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.DeletingCondition, metav1.ConditionTrue, v1alpha1.DeletionBlockedReason, time.Minute)
		if msg := conditionMessage(p, v1alpha1.DeletingCondition); !strings.Contains(msg, "HelmTestAddon default/blocker") {
			t.Errorf("Deleting message %q does not name HelmTestAddon default/blocker", msg)
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKeyFromObject(dep))
		if err := c.Delete(ctx, addon); err != nil {
			t.Fatal(err)
		}
		// Asked to look again rather than waiting out its 10 s requeue.
		poke(t, ctx, c, p)
		waitGone(t, ctx, c, p, 3*time.Minute)
		waitGone(t, ctx, c, dep, time.Minute)
	})
}

// helmTestAddonCRD is a CRD of a Cluster API group in the chart's crds/
// directory: its objects hold the chart provider's deletion up.
const helmTestAddonCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: helmtestaddons.addons.cluster.x-k8s.io
spec:
  group: addons.cluster.x-k8s.io
  names:
    kind: HelmTestAddon
    listKind: HelmTestAddonList
    plural: helmtestaddons
    singular: helmtestaddon
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
