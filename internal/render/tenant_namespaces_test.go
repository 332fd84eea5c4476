package render

import (
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

func TestCheckTenantNamespaces(t *testing.T) {
	beta := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}
	gamma := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "gamma"},
		Spec: tenancyv1alpha1.TenantSpec{Management: &tenancyv1alpha1.ManagementSpec{Namespace: "gamma-clusters"}}}
	forbidden := ForbiddenNamespaces{
		"flux-system":      "listed in the manager's --tenant-forbidden-namespaces",
		"capwright-system": "the Capwright manager's own namespace",
	}
	for _, tt := range []struct {
		name       string
		namespaces []string
		// want are the parts of the refusal; none for no refusal.
		want []string
	}{
		{"a shared namespace", []string{"shared-clusters"}, nil},
		{"its own management namespace again", []string{"tenant-team-a"}, nil},
		{"a namespace the manager forbids", []string{"shared-clusters", "flux-system"},
			[]string{"spec.clusters.namespaces of Tenant team-a lists namespace flux-system (listed in the manager's --tenant-forbidden-namespaces), where the tenant may not select Clusters",
				"remove it from spec.clusters.namespaces", "nothing is read there and nothing is written for the tenant's clusters"}},
		{"the manager's own namespace", []string{"capwright-system"}, []string{"namespace capwright-system (the Capwright manager's own namespace)"}},
		{"a Kubernetes namespace stored before the CRD refused it", []string{"kube-system"}, []string{"namespace kube-system (a Kubernetes system namespace)"}},
		{"another tenant's default management namespace", []string{"tenant-beta"},
			[]string{"lists namespace tenant-beta (the management namespace of Tenant beta)", "remove it"}},
		{"another tenant's management namespace set in its spec", []string{"gamma-clusters"},
			[]string{"namespace gamma-clusters (the management namespace of Tenant gamma)"}},
		{"several", []string{"tenant-beta", "shared-clusters", "kube-public"},
			[]string{"lists namespaces tenant-beta (the management namespace of Tenant beta), kube-public (a Kubernetes system namespace), where",
				"remove them from spec.clusters.namespaces"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tenant := chartTenant()
			tenant.Spec.Clusters.Namespaces = tt.namespaces
			// The tenant is among the cluster's Tenants, as the
			// controller lists them.
			err := CheckTenantNamespaces(tenant, forbidden, []tenancyv1alpha1.Tenant{*tenant.DeepCopy(), beta, gamma})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("not refused, want %q", tt.want)
			}
			for _, part := range tt.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("refusal %q does not say %q", err, part)
				}
			}
		})
	}
}

func TestCheckManagementNamespace(t *testing.T) {
	forbidden := ForbiddenNamespaces{"flux-system": "listed in the manager's --tenant-forbidden-namespaces"}
	for _, tt := range []struct {
		namespace string
		want      string
	}{
		{"", ""},
		{"team-a-clusters", ""},
		{"flux-system", "spec.management.namespace of Tenant team-a is flux-system (listed in the manager's --tenant-forbidden-namespaces), which cannot be a tenant's namespace"},
		{"kube-public", "is kube-public (a Kubernetes system namespace)"},
	} {
		tenant := chartTenant()
		tenant.Spec.Management = &tenancyv1alpha1.ManagementSpec{Namespace: tt.namespace}
		err := CheckManagementNamespace(tenant, forbidden)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("management namespace %q refused: %v", tt.namespace, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "delete this Tenant and create it again")):
			t.Errorf("management namespace %q: %v, want a refusal saying %q and how to fix it", tt.namespace, err, tt.want)
		}
	}
}

// The CRD's CEL rule on spec.clusters.namespaces refuses exactly the
// Kubernetes namespaces CheckTenantNamespaces refuses for Tenants stored
// before the rule: one list, written twice, kept equal here.
func TestCRDRefusesTheSystemNamespaces(t *testing.T) {
	data, err := os.ReadFile("../../manifests/crd/bases/tenancy.capwright.io_tenants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	namespaces := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["clusters"].Properties["namespaces"]
	if len(namespaces.XValidations) != 1 {
		t.Fatalf("spec.clusters.namespaces has %d CEL rules, want 1 (run make manifests)", len(namespaces.XValidations))
	}
	rule := namespaces.XValidations[0]
	want := "'" + strings.Join(systemNamespaces, "', '") + "'"
	if !strings.Contains(rule.Rule, "["+want+"]") {
		t.Errorf("the CRD's rule %q does not refuse exactly %s", rule.Rule, want)
	}
	for _, ns := range systemNamespaces {
		if !strings.Contains(rule.Message, ns) {
			t.Errorf("the CRD's message %q does not name %s", rule.Message, ns)
		}
	}
	management := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["management"].Properties["namespace"]
	found := false
	for _, r := range management.XValidations {
		found = found || strings.Contains(r.Rule, "in ["+want+"]")
	}
	if !found {
		t.Errorf("spec.management.namespace has no CEL rule refusing exactly %s: %+v", want, management.XValidations)
	}
}
