package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestCRDValidation proves the CEL rules of the CRDs: the API server
// refuses what can never work, with a message a user understands.
func TestCRDValidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(t)
	oci := func(url, digest string) *v1alpha1.ProviderSource {
		return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url}, Digest: digest}}
	}
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"core provider with another name",
			&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "capi"}, Spec: v1alpha1.ProviderSpec{Version: "v1.14.2"}},
			"the core provider must be named cluster-api"},
		{"version without a leading v",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "2.8.0"}},
			"version must be a semantic version with a leading v"},
		{"URL with a tag",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Source: oci("oci://ghcr.io/capa/manifests/infrastructure-aws:v2.8.0", "")}},
			"without a tag or digest"},
		{"URL with another scheme",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Source: oci("https://ghcr.io/capa", "")}},
			"url must be oci://"},
		{"bad digest",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Source: oci("oci://ghcr.io/capa/manifests/infrastructure-aws", "sha256:abc")}},
			"digest must be sha256:"},
		{"two source kinds",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Source: &v1alpha1.ProviderSource{
				OCI:   &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/a"}},
				Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/b"}},
			}}},
			"set exactly one of oci, chart or release"},
		{"notation signatures, which Capwright does not offer",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Source: &v1alpha1.ProviderSource{
				OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/capa", Verify: &v1alpha1.OCIVerification{Provider: "notation"}}},
			}}},
			"verify.provider: only cosign is supported"},
		{"variable name that is no clusterctl variable",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0", Variables: map[string]string{"AWS-REGION": "x"}}},
			"clusterctl variable names"},
		{"rollback of a chart, which Capwright does not offer",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0",
				Source:  &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/capa"}}},
				Upgrade: &v1alpha1.UpgradePolicy{OnFailure: v1alpha1.UpgradeRollback}}},
			"upgrade.onFailure: Rollback is not supported for a provider installed from source.chart"},
		{"an unknown onFailure",
			&v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0",
				Upgrade: &v1alpha1.UpgradePolicy{OnFailure: "Retry"}}},
			`supported values: "Hold", "Rollback"`},
		// Durations: Flux would re-apply every component each second, or
		// give up on every install and upgrade at once.
		{"an interval of a second",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Interval = &metav1.Duration{Duration: time.Second} }),
			"spec.interval: Invalid value: \"1s\": interval must be at least 1m"},
		{"an interval just below a minute",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Interval = &metav1.Duration{Duration: 59 * time.Second} }),
			"to have Flux reconcile now, annotate the provider with reconcile.fluxcd.io/requestedAt"},
		{"a timeout of a millisecond",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Timeout = &metav1.Duration{Duration: time.Millisecond} }),
			"spec.timeout: Invalid value: \"1ms\": timeout must be at least 10s"},
		{"a timeout of zero",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Timeout = &metav1.Duration{} }),
			"timeout must be at least 10s"},
		{"an upgrade timeout of a second",
			withSpec(func(s *v1alpha1.ProviderSpec) {
				s.Upgrade = &v1alpha1.UpgradePolicy{Timeout: &metav1.Duration{Duration: time.Second}}
			}),
			"spec.upgrade.timeout: Invalid value: \"1s\": upgrade.timeout must be at least 10s"},
		// What a provider's manager would be started with and die on.
		{"a sync period that is no duration",
			unstructuredProvider(map[string]any{"manager": map[string]any{"syncPeriod": "ten minutes"}}),
			"spec.manager.syncPeriod in body should match"},
		{"a sync period of 30s",
			withSpec(func(s *v1alpha1.ProviderSpec) {
				s.Manager = &v1alpha1.ManagerSpec{SyncPeriod: &metav1.Duration{Duration: 30 * time.Second}}
			}),
			"spec.manager.syncPeriod: Invalid value: \"30s\": manager.syncPeriod must be at least 1m"},
		// Durations past what Go holds (about 2562047h) would be stored,
		// and then no client could read any provider of the kind.
		{"an interval past what a duration holds",
			unstructuredProvider(map[string]any{"interval": "9999999999h"}), "spec.interval"},
		{"a timeout past what a duration holds",
			unstructuredProvider(map[string]any{"timeout": "9999999999h"}), "spec.timeout"},
		{"an upgrade timeout past what a duration holds",
			unstructuredProvider(map[string]any{"upgrade": map[string]any{"timeout": "9999999999h"}}), "spec.upgrade.timeout"},
		{"a sync period past what a duration holds",
			unstructuredProvider(map[string]any{"manager": map[string]any{"syncPeriod": "9999999999h"}}), "spec.manager.syncPeriod"},
		{"a metrics address without a colon",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Manager = &v1alpha1.ManagerSpec{MetricsBindAddress: "8443"} }),
			"manager.metricsBindAddress must be host:port or :port"},
		{"a health address without a port",
			withSpec(func(s *v1alpha1.ProviderSpec) { s.Manager = &v1alpha1.ManagerSpec{HealthProbeBindAddress: "localhost"} }),
			"manager.healthProbeBindAddress must be host:port or :port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(ctx, tt.obj)
			if err == nil {
				_ = c.Delete(ctx, tt.obj)
				t.Fatalf("the API server accepted %s", tt.name)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
			t.Log(err)
		})
	}

	// What the rules take: the floors themselves, and what Cluster API's
	// managers take for addresses.
	fine := withSpec(func(s *v1alpha1.ProviderSpec) {
		s.Interval, s.Timeout = &metav1.Duration{Duration: time.Minute}, &metav1.Duration{Duration: 10 * time.Second}
		s.Upgrade = &v1alpha1.UpgradePolicy{Timeout: &metav1.Duration{Duration: 10 * time.Second}}
		s.Manager = &v1alpha1.ManagerSpec{SyncPeriod: &metav1.Duration{Duration: time.Minute}, MetricsBindAddress: "0", HealthProbeBindAddress: "[::]:9440"}
	})
	if err := c.Create(ctx, fine); err != nil {
		t.Fatalf("the API server refused the floors themselves: %v", err)
	}
	_ = c.Delete(ctx, fine)
}

// withSpec is an InfrastructureProvider default/aws v2.8.0, its spec
// changed as change says.
func withSpec(change func(*v1alpha1.ProviderSpec)) client.Object {
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aws"}, Spec: v1alpha1.ProviderSpec{Version: "v2.8.0"}}
	change(&p.Spec)
	return p
}

// unstructuredProvider is an InfrastructureProvider default/aws v2.8.0
// with more spec fields, as YAML would give them: what the Go types
// cannot hold (a duration that does not parse).
func unstructuredProvider(spec map[string]any) client.Object {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": "v2.8.0"}}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("InfrastructureProvider"))
	u.SetNamespace("default")
	u.SetName("aws")
	for k, v := range spec {
		u.Object["spec"].(map[string]any)[k] = v
	}
	return u
}
