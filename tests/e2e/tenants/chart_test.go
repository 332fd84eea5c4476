package tenants

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// chartConfigMap is the chart stack's only template; its data comes from
// the Tenant's values.
const chartConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  tier: {{ .Values.tier | quote }}
`

// A chart stack goes through the real helm-controller: one HelmRelease
// per cluster, installed into the target namespace (which Helm creates)
// and uninstalled when the Tenant goes.
func TestTenantChartStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	w := workloads[0]
	remote := newClient(t, w.Config)

	url, err := framework.PushChart(ctx, env.Registry.Host, "tenants/charts/platform", "platform", "0.1.0", map[string][]byte{
		"templates/configmap.yaml": []byte(chartConfigMap),
		"values.yaml":              []byte("tier: default\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	const name = "globex"
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{w.Name}, Namespaces: []string{clusterNamespace}},
			Stack: tenancyv1alpha1.StackSpec{
				Chart: &tenancyv1alpha1.ChartStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: url, Insecure: true},
					Version:             "0.1.0",
					Values:              &apiextensionsv1.JSON{Raw: []byte(`{"tier":"gold"}`)},
				},
				Timeout: &metav1.Duration{Duration: time.Minute},
			},
		},
	}
	start := time.Now()
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	tn = waitTenant(t, ctx, c, name, 3*time.Minute, "chart Tenant Ready", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	t.Logf("chart Tenant Ready on %s %s after it was created", w.Name, time.Since(start).Round(time.Millisecond))
	if l := clusterLine(tn, w.Name); l == nil || l.FluxObject == nil || l.FluxObject.Kind != helmv2.HelmReleaseKind {
		t.Errorf("the cluster's Flux object is not a HelmRelease: %s", tenantState(tn))
	}
	var cm corev1.ConfigMap
	if err := remote.Get(ctx, client.ObjectKey{Namespace: name, Name: name + "-settings"}, &cm); err != nil {
		t.Fatalf("%s: the chart's ConfigMap: %v", w.Name, err)
	}
	if cm.Data["tier"] != "gold" || cm.Labels[tenancyv1alpha1.TenantLabel] != name {
		t.Errorf("%s: ConfigMap %s/%s: data %v labels %v; want the Tenant's values and label", w.Name, cm.Namespace, cm.Name, cm.Data, cm.Labels)
	}

	if err := c.Delete(ctx, tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "chart Tenant gone and release uninstalled", func() (bool, string) {
		errT := c.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
		errCM := remote.Get(ctx, client.ObjectKeyFromObject(&cm), &corev1.ConfigMap{})
		return apierrors.IsNotFound(errT) && apierrors.IsNotFound(errCM), "Tenant or ConfigMap still there"
	})
}
