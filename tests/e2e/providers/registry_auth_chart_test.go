package providers

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// privateChart runs while the core provider is Ready: a provider packaged
// as a Helm chart in a private registry of its own (TLS from its own CA,
// basic auth) goes through the same refusals, install, password rotation
// and upgrade as the core provider's artifact. Here the updated Secret is
// picked up at once through a reconcile request, as `flux reconcile`
// would ask.
func privateChart(t *testing.T, ctx context.Context, c client.Client) {
	if err := helmv2.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	reg := framework.StartPrivateRegistry(t, "chart-robot")
	var url string
	for _, version := range []string{"v0.1.0", "v0.2.0"} {
		var err error
		url, err = framework.PushChartWith(ctx, reg.Host, reg.Access(), "charts/addon-privatechart", "addon-privatechart", version, map[string][]byte{
			"templates/deployment.yaml": []byte(framework.ProviderChartDeployment),
			"values.yaml":               []byte("replicas: 1\n"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	const ns = "helm-private"
	ensureNamespace(t, ctx, c, ns)
	reg.CreateSecrets(t, ctx, c, ns)
	p := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "privatechart"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url,
				SecretRef:     &meta.LocalObjectReference{Name: framework.RegistryCredentialsSecret},
				CertSecretRef: &meta.LocalObjectReference{Name: framework.WrongCASecret}},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 2}`)},
		}}}}
	access := func() *v1alpha1.OCIRegistryAccess { return &p.Spec.Source.Chart.OCIRegistryAccess }
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, p)
	deployment := client.ObjectKey{Namespace: ns, Name: "helmtest-controller-manager"}

	waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason, time.Minute)
	assertRefused(t, p, v1alpha1.ResolveFailedReason, "certificate signed by unknown authority",
		"not signed by the CA in ca.crt of Secret "+ns+"/"+framework.WrongCASecret+" (spec.source.chart.certSecretRef)")
	assertNothingApplied(t, ctx, c, p, false)

	updateProvider(t, ctx, c, p, func() {
		access().CertSecretRef = &meta.LocalObjectReference{Name: framework.RegistryCASecret}
		access().SecretRef = nil
	})
	waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
	assertRefused(t, p, v1alpha1.AuthenticationFailedReason, "the registry requires credentials and none were given",
		"spec.source.chart.secretRef is not set")
	assertNothingApplied(t, ctx, c, p, false)

	since := time.Now()
	updateProvider(t, ctx, c, p, func() { access().SecretRef = &meta.LocalObjectReference{Name: framework.RegistryCredentialsSecret} })
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	assertPrivateSource(t, ctx, c, p)
	var hr helmv2.HelmRelease
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.ObjectName(p.ProviderType(), p.GetName())}, &hr); err != nil {
		t.Fatalf("no HelmRelease for the chart provider: %v", err)
	}
	assertDeploymentAvailable(t, ctx, c, deployment)
	assertPulled(t, reg, since, "the chart's install")

	reg.Rotate(t)
	requestReconcile(t, ctx, c, p)
	waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
	assertRefused(t, p, v1alpha1.AuthenticationFailedReason, "(HTTP 401 Unauthorized)",
		"the credentials come from Secret "+ns+"/"+framework.RegistryCredentialsSecret+" (spec.source.chart.secretRef)")
	assertDeploymentAvailable(t, ctx, c, deployment)

	updated := time.Now()
	reg.UpdateCredentials(t, ctx, c, ns)
	requestReconcile(t, ctx, c, p)
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 30*time.Second)
	t.Logf("Ready again %s after the Secret was updated and a reconcile requested", time.Since(updated).Round(100*time.Millisecond))

	since = time.Now()
	updateProvider(t, ctx, c, p, func() { p.Spec.Version = "v0.2.0" })
	waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	if p.Status.InstalledVersion != "v0.2.0" {
		t.Errorf("installedVersion %q, want v0.2.0", p.Status.InstalledVersion)
	}
	assertPulled(t, reg, since, "the chart's upgrade")
	assertSecretsNotShown(t, ctx, c, p, reg)
}
