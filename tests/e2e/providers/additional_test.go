package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/plane"
)

// widgetCRD is a namespaced Cluster API CRD of the test provider: its
// additional manifests create an ExtrasWidget, a kind the API server does
// not serve before the provider is installed, and whose objects hold the
// provider's deletion up unless they are the provider's own.
const widgetCRD = `
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: extraswidgets.infrastructure.cluster.x-k8s.io
spec:
  group: infrastructure.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: ExtrasWidget, listKind: ExtrasWidgetList, plural: extraswidgets, singular: extraswidget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// extraManifests are the additional manifests of the test: a cluster-scoped
// ClusterRole, a ConfigMap without a namespace (it goes to the provider's)
// using a clusterctl variable, a ServiceAccount in a namespace of its own
// choosing, and a Widget of the provider's own CRD without a namespace.
const extraManifests = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: extras-reader
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extras-settings
data:
  region: ${TEST_REGION}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: extras-agent
  namespace: default
---
apiVersion: infrastructure.cluster.x-k8s.io/v1
kind: ExtrasWidget
metadata:
  name: extras-widget
spec:
  size: 3
`

// additionalManifests runs while the core provider is Ready: a provider's
// spec.additionalManifests ConfigMap is installed by Flux after the
// components, follows edits of the ConfigMap (pruning what left it), is
// refused with a condition when it holds a Secret (keeping what is
// installed), and is uninstalled when the field goes — never touching the
// user's ConfigMap.
func additionalManifests(t *testing.T, ctx context.Context, c client.Client) {
	const ns = "extras-system"
	ensureNamespace(t, ctx, c, ns)
	url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "extras", "v0.1.0", map[string][]byte{
		"metadata.yaml":                  testMetadata("v1beta2"),
		"infrastructure-components.yaml": append(testComponents(ns, "x"), widgetCRD...),
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extras"}, Data: map[string]string{"manifests": extraManifests}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extras"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url),
			Variables:           map[string]string{"TEST_REGION": "eu-1"},
			AdditionalManifests: &v1alpha1.ConfigMapReference{Name: "extras"}}}
	start := time.Now()
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	t.Logf("provider with additional manifests Ready %s after its CR was applied", time.Since(start).Round(time.Millisecond))

	t.Run("Flux applies them with the provider's labels and variables", func(t *testing.T) {
		if msg := conditionMessage(p, v1alpha1.InstalledCondition); !strings.Contains(msg, "additional manifests") || !strings.Contains(msg, "Kustomization extras-system/infrastructure-extras-additional") {
			t.Errorf("Installed should say the additional manifests are applied: %q", msg)
		}
		var role rbacv1.ClusterRole
		if err := c.Get(ctx, client.ObjectKey{Name: "extras-reader"}, &role); err != nil {
			t.Fatal(err)
		}
		if got := role.Labels["cluster.x-k8s.io/provider"]; got != "infrastructure-extras" {
			t.Errorf("ClusterRole extras-reader: label cluster.x-k8s.io/provider=%q, want infrastructure-extras", got)
		}
		var settings corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extras-settings"}, &settings); err != nil {
			t.Fatalf("the ConfigMap without a namespace should be in the provider's namespace %s: %v", ns, err)
		}
		if settings.Data["region"] != "eu-1" {
			t.Errorf("variable not substituted in the additional manifests: region=%q", settings.Data["region"])
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "extras-agent"}, &corev1.ServiceAccount{}); err != nil {
			t.Errorf("the ServiceAccount should stay in the namespace it names: %v", err)
		}
		// Its kind was not served when the manifests were first read.
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extras-widget"}, widget()); err != nil {
			t.Errorf("the Widget without a namespace should be in the provider's namespace %s: %v", ns, err)
		}
		// fluxObjects mirror Flux as it reports (a routine re-check is
		// Unknown there), so only their presence is checked here;
		// Installed above says both are applied and healthy.
		kinds := map[string]metav1.ConditionStatus{}
		for _, o := range p.Status.FluxObjects {
			kinds[o.Kind+"/"+o.Name] = o.Ready
		}
		for _, want := range []string{"ExternalArtifact/infrastructure-extras-additional", "Kustomization/infrastructure-extras-additional"} {
			if _, ok := kinds[want]; !ok {
				t.Errorf("status.fluxObjects lacks %s: %v", want, kinds)
			}
		}
		var ks kustomizev1.Kustomization
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "infrastructure-extras-additional"}, &ks); err != nil {
			t.Fatal(err)
		}
		if len(ks.Spec.DependsOn) != 1 || ks.Spec.DependsOn[0].Name != "infrastructure-extras" {
			t.Errorf("the additional Kustomization should wait for the provider's: dependsOn %+v", ks.Spec.DependsOn)
		}
	})

	t.Run("a resync with nothing changed writes nothing", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		since := time.Now()
		poke(t, ctx, c, p)
		time.Sleep(3 * time.Second)
		writes, err := env.Writes(plane.CapwrightUser, since)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range writes {
			t.Errorf("a resync with nothing changed wrote: %s", w)
		}
	})

	t.Run("an edit of the ConfigMap reaches the cluster and prunes what left it", func(t *testing.T) {
		edited := strings.Replace(extraManifests, `verbs: ["get"]`, `verbs: ["get", "list"]`, 1)
		sa := strings.Index(edited, "---\napiVersion: v1\nkind: ServiceAccount")
		edited = edited[:sa] + edited[strings.Index(edited, "---\napiVersion: infrastructure.cluster.x-k8s.io/v1"):]
		updateConfigMap(t, ctx, c, cm, edited)
		start := time.Now()
		waitGone(t, ctx, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "extras-agent"}}, 2*time.Minute)
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var role rbacv1.ClusterRole
			if err := c.Get(ctx, client.ObjectKey{Name: "extras-reader"}, &role); err != nil {
				return false, nil
			}
			return len(role.Rules) == 1 && len(role.Rules[0].Verbs) == 2, nil
		})
		if err != nil {
			t.Fatal("the ClusterRole did not get the edited verbs")
		}
		t.Logf("ConfigMap edit applied and pruned in %s", time.Since(start).Round(time.Millisecond))
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
	})

	t.Run("a Secret in the ConfigMap is refused and what is installed stays", func(t *testing.T) {
		updateConfigMap(t, ctx, c, cm, cm.Data["manifests"]+"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: leaked\nstringData:\n  password: hunter2\n")
		waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.AdditionalManifestsInvalidReason, time.Minute)
		msg := conditionMessage(p, v1alpha1.CompatibleCondition)
		for _, want := range []string{"ConfigMap extras-system/extras", "document 4", "kind Secret (leaked)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Compatible message %q does not name %q", msg, want)
			}
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("the condition leaks the Secret's data: %q", msg)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "extras-reader"}, &rbacv1.ClusterRole{}); err != nil {
			t.Errorf("a refused ConfigMap must leave what is installed: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "leaked"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused Secret reached the cluster: %v", err)
		}
	})

	t.Run("dropping spec.additionalManifests uninstalls them and keeps the ConfigMap", func(t *testing.T) {
		updateProvider(t, ctx, c, p, func() { p.Spec.AdditionalManifests = nil })
		waitGone(t, ctx, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extras-reader"}}, 2*time.Minute)
		waitGone(t, ctx, c, &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infrastructure-extras-additional"}}, time.Minute)
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			t.Errorf("the user's ConfigMap must stay: %v", err)
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "test-controller-manager"})
	})

	t.Run("deleting the provider uninstalls them with the components", func(t *testing.T) {
		updateConfigMap(t, ctx, c, cm, extraManifests)
		updateProvider(t, ctx, c, p, func() { p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: cm.Name} })
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
		if err := c.Get(ctx, client.ObjectKey{Name: "extras-reader"}, &rbacv1.ClusterRole{}); err != nil {
			t.Fatalf("re-adding spec.additionalManifests should install them again: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extras-widget"}, widget()); err != nil {
			t.Fatalf("re-adding spec.additionalManifests should install the Widget again: %v", err)
		}
		// The ExtrasWidget is an object of the provider's own kind, which
		// would hold the deletion up were it the user's; it is the
		// provider's own, and Flux prunes it with the provider.
		deleteAndWait(t, ctx, c, p)
		w := widget()
		w.SetNamespace(ns)
		w.SetName("extras-widget")
		for _, o := range []client.Object{
			w,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extras-reader"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "extras-agent"}},
			&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infrastructure-extras-additional"}},
			&sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infrastructure-extras-additional"}},
		} {
			waitGone(t, ctx, c, o, time.Minute)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			t.Errorf("the user's ConfigMap must stay: %v", err)
		}
	})
}

func widget() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1")
	w.SetKind("ExtrasWidget")
	return w
}

func updateConfigMap(t *testing.T, ctx context.Context, c client.Client, cm *corev1.ConfigMap, manifests string) {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["manifests"] = manifests
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
}
