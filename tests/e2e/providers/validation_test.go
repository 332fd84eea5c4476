package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		})
	}
}
