package clusters

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestContractKindsRefuseBadInput: the API server refuses what can never
// work, with a message naming the field and the fix (the CRDs' rules);
// what it cannot check — status expressions that do not parse, keyless
// signing identities that are no regular expressions — the manager
// refuses as soon as the object is applied, before any Cluster refers to
// it, and writes nothing.
func TestContractKindsRefuseBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newClient(t)
	ns := "validation"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cp := func(change func(*clustersv1alpha1.CapwrightControlPlane)) *clustersv1alpha1.CapwrightControlPlane {
		o := controlPlane(ns, "bad", "v1.31.0", nil)
		change(o)
		return o
	}
	for _, tt := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a backend interval of 30s", cp(func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.Backend.Interval = &metav1.Duration{Duration: 30 * time.Second}
		}), `spec.backend.interval: Invalid value: "30s": backend.interval must be at least 1m`},
		{"a backend timeout of zero", cp(func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.Backend.Timeout = &metav1.Duration{}
		}), `spec.backend.timeout: Invalid value: "0s": backend.timeout must be at least 10s`},
		{"a statusFrom.apiVersion without its version", cp(func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.StatusFrom.APIVersion = "hcp.example.com"
		}), "statusFrom.apiVersion must be group/version"},
		{"a statusFrom.kind in lower case", cp(func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.StatusFrom.Kind = strings.ToLower(o.Spec.StatusFrom.Kind)
		}), "statusFrom.kind must be a kind as the object's own kind reads"},
		{"a kubeconfig key no Secret holds", cp(func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.Kubeconfig.Key = "admin kubeconfig"
		}), "kubeconfig.key must be a Secret data key"},
		{"a CapwrightCluster's backend interval of a second", &clustersv1alpha1.CapwrightCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
				Backend: &clustersv1alpha1.Backend{Interval: &metav1.Duration{Duration: time.Second}, Kustomize: &clustersv1alpha1.KustomizeBackend{
					OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/network"}, Tag: "v1"}},
			}},
		}, "backend.interval must be at least 1m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(ctx, tt.obj)
			if err == nil {
				_ = c.Delete(ctx, tt.obj)
				t.Fatalf("the API server accepted %s", tt.name)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}

	for _, tt := range []struct {
		name   string
		change func(*clustersv1alpha1.CapwrightControlPlane)
		want   string
	}{
		{"a ready expression that does not parse", func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.StatusFrom.Ready = "status.ready =="
		}, "spec.statusFrom.ready"},
		{"a keyless identity written as a glob", func(o *clustersv1alpha1.CapwrightControlPlane) {
			o.Spec.Backend.Chart.Verify = &providersv1alpha1.OCIVerification{MatchOIDCIdentity: []providersv1alpha1.OIDCIdentityMatch{
				{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "*@example.com"}}}
		}, "spec.backend.chart.verify.matchOIDCIdentity[0].subject is not a regular expression"},
	} {
		t.Run(tt.name+" is refused before any Cluster refers to the object", func(t *testing.T) {
			o := cp(tt.change)
			o.Name = "no-cluster"
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Delete(context.Background(), o) }()
			key := client.ObjectKeyFromObject(o)
			cond := cpCondition(t, ctx, c, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.InvalidSpecReason, time.Minute)
			if !strings.Contains(cond.Message, "CapwrightControlPlane "+key.String()) || !strings.Contains(cond.Message, tt.want) {
				t.Errorf("BackendReady %q does not name the object and say %q", cond.Message, tt.want)
			}
			cpCondition(t, ctx, c, key, "Stalled", metav1.ConditionTrue, clustersv1alpha1.InvalidSpecReason, time.Minute)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "controlplane-no-cluster"}, &helmv2.HelmRelease{}); !apierrors.IsNotFound(err) {
				t.Errorf("a HelmRelease was written for a spec that cannot be used (err %v)", err)
			}
			// Deleted before the next case creates it again.
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			eventually(t, ctx, time.Minute, "CapwrightControlPlane "+key.String()+" gone", func(ctx context.Context) (bool, string) {
				err := c.Get(ctx, key, &clustersv1alpha1.CapwrightControlPlane{})
				return apierrors.IsNotFound(err), "still there"
			})
		})
	}
}
