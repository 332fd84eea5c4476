package tenants

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
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
// and uninstalled when the Tenant goes. The chart is signed with the
// cosign CLI and the stack verifies it: a new version that is unsigned,
// or signed with another key, fails the cluster's line naming the
// verification and the fix, and what was installed stays.
func TestTenantChartStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	w := workloads[0]
	remote := newClient(t, w.Config)

	key, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	// 0.1.0 signed with the key the stack trusts, 0.2.0 unsigned, 0.3.0
	// signed with another key.
	var url string
	for version, signer := range map[string]*framework.CosignKey{"0.1.0": key, "0.2.0": nil, "0.3.0": otherKey} {
		if url, err = framework.PushChart(ctx, env.Registry.Host, "tenants/charts/platform", "platform", version, map[string][]byte{
			"templates/configmap.yaml": []byte(chartConfigMap),
			"values.yaml":              []byte("tier: default\n"),
		}); err != nil {
			t.Fatal(err)
		}
		if signer != nil {
			if err := framework.CosignSignTag(ctx, url, version, signer); err != nil {
				t.Fatal(err)
			}
		}
	}
	const name = "globex"
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name + "-cosign"}, Data: map[string][]byte{"cosign.pub": key.PublicPEM}}
	if err := c.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), keys) })
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{w.Name}, Namespaces: []string{clusterNamespace}},
			Stack: tenancyv1alpha1.StackSpec{
				Chart: &tenancyv1alpha1.ChartStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: url, Insecure: true,
						Verify: &tenancyv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: keys.Name}}},
					Version: "0.1.0",
					Values:  &apiextensionsv1.JSON{Raw: []byte(`{"tier":"gold"}`)},
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

	for _, version := range []string{"0.2.0", "0.3.0"} {
		updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Stack.Chart.Version = version })
		tn = waitTenant(t, ctx, c, name, 2*time.Minute, "chart "+version+" refused on the cluster's line", func(tn *tenancyv1alpha1.Tenant) bool {
			l := clusterLine(tn, w.Name)
			return !isReady(tn) && l != nil && strings.Contains(l.Message, "verif") && strings.Contains(l.Message, "cosign sign")
		})
		t.Logf("chart %s: cluster line: %s", version, clusterLine(tn, w.Name).Message)
		if l := clusterLine(tn, w.Name); !strings.Contains(l.Message, "OCIRepository "+clusterNamespace+"/") || l.Reason != sourcev1.VerificationError {
			t.Errorf("cluster line %s %q does not name the OCIRepository with Flux's reason %s", l.Reason, l.Message, sourcev1.VerificationError)
		}
		var release helmv2.HelmRelease
		if err := c.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: clusterLine(tn, w.Name).FluxObject.Name}, &release); err != nil {
			t.Fatal(err)
		}
		if got := release.Status.LastAttemptedRevision; !strings.HasPrefix(got, "0.1.0+") {
			t.Errorf("chart %s: HelmRelease lastAttemptedRevision %q, want the signed 0.1.0 only", version, got)
		}
	}
	if err := remote.Get(ctx, client.ObjectKeyFromObject(&cm), &cm); err != nil || cm.Data["tier"] != "gold" {
		t.Errorf("%s: the signed chart's ConfigMap after the refusals: %v %v", w.Name, cm.Data, err)
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
