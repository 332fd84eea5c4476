package providers

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// charts runs while the core provider is Ready: a provider packaged as an
// OCI Helm chart is installed by the real helm-controller through a
// HelmRelease, with clusterctl's labels and the chart values of the CR.
func charts(t *testing.T, ctx context.Context, c client.Client) {
	t.Run("a provider packaged as a Helm chart is installed by a HelmRelease", func(t *testing.T) {
		if err := helmv2.AddToScheme(c.Scheme()); err != nil {
			t.Fatal(err)
		}
		url, err := framework.PushChart(ctx, env.Registry.Host, "charts/addon-helmtest", "addon-helmtest", "v0.1.0", map[string][]byte{
			"templates/deployment.yaml": []byte(framework.ProviderChartDeployment),
			"values.yaml":               []byte("replicas: 1\n"),
		})
		if err != nil {
			t.Fatal(err)
		}
		ensureNamespace(t, ctx, c, "helmtest-system")
		p := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "helmtest-system", Name: "helmtest"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
				OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true},
				Values:            &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 2}`)},
			}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
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
		deleteAndWait(t, ctx, c, p)
		waitGone(t, ctx, c, dep, time.Minute)
	})
}
