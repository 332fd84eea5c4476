package render

import (
	"fmt"
	"slices"
	"strings"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// systemNamespaces are Kubernetes' own namespaces. The Tenant CRD refuses
// them in spec.clusters.namespaces (a CEL rule that lists the same
// names); CheckTenantNamespaces refuses them again for a Tenant stored
// before that rule, which the API server keeps serving unchanged.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// ForbiddenNamespaces are the namespaces of the management cluster that
// the manager closes to tenants, each with why (e.g. "listed in the
// manager's --tenant-forbidden-namespaces"); the why is quoted in the
// refusal.
type ForbiddenNamespaces map[string]string

// DefaultTenantForbiddenNamespaces are the manager's default
// --tenant-forbidden-namespaces: they hold Flux's and cert-manager's
// credentials and controllers on a management cluster that `flux
// bootstrap` made, where no tenant has Clusters.
var DefaultTenantForbiddenNamespaces = []string{"flux-system", "cert-manager"}

// TenantForbidden are the namespaces closed to Tenants besides
// Kubernetes' own and other Tenants' (which the controller always
// refuses): those listed (--tenant-forbidden-namespaces) and the
// manager's own namespace, which no flag opens ("" for none), each with
// why for the refusal's message.
func TenantForbidden(listed []string, managerNamespace string) ForbiddenNamespaces {
	out := ForbiddenNamespaces{}
	for _, ns := range listed {
		out[ns] = "listed in the manager's --tenant-forbidden-namespaces"
	}
	if managerNamespace != "" {
		out[managerNamespace] = "the Capwright manager's own namespace"
	}
	return out
}

// CheckTenantNamespaces refuses a tenant whose spec.clusters.namespaces
// lists a namespace no tenant may select Clusters in: Kubernetes' own, a
// forbidden one, or the management namespace of another of tenants (the
// Tenants of the cluster; t itself among them is ignored). A management
// cluster holds every workload cluster's kubeconfig Secret, and the
// controller, which may read Clusters and Secrets everywhere, must not
// look in a namespace on behalf of a tenant whose clusters are not there
// (a confused deputy): the check comes before any read.
func CheckTenantNamespaces(t *tenancyv1alpha1.Tenant, forbidden ForbiddenNamespaces, tenants []tenancyv1alpha1.Tenant) error {
	managedBy := map[string]string{}
	for i := range tenants {
		if tenants[i].Name != t.Name {
			managedBy[tenants[i].ManagementNamespace()] = tenants[i].Name
		}
	}
	var refused []string
	for _, ns := range t.Spec.Clusters.Namespaces {
		if ns == t.ManagementNamespace() {
			// The tenant's own: listing it again changes nothing.
			continue
		}
		switch other, why := managedBy[ns], forbidden[ns]; {
		case slices.Contains(systemNamespaces, ns):
			refused = append(refused, ns+" (a Kubernetes system namespace)")
		case other != "":
			refused = append(refused, fmt.Sprintf("%s (the management namespace of Tenant %s)", ns, other))
		case why != "":
			refused = append(refused, fmt.Sprintf("%s (%s)", ns, why))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	what, it := "namespace "+refused[0], "it"
	if len(refused) > 1 {
		what, it = "namespaces "+strings.Join(refused, ", "), "them"
	}
	return fmt.Errorf("spec.clusters.namespaces of Tenant %s lists %s, where the tenant may not select Clusters: "+
		"a management cluster holds every workload cluster's credentials, and those there are not the tenant's; "+
		"remove %s from spec.clusters.namespaces. Until then nothing is read there and nothing is written for the tenant's clusters",
		t.Name, what, it)
}

// CheckManagementNamespace refuses a tenant whose management namespace is
// one of Kubernetes' own or a forbidden one: Capwright would create or
// label it, set its Pod Security level and bind the tenant's
// ServiceAccount as admin there, so nothing at all may be written for
// such a tenant.
func CheckManagementNamespace(t *tenancyv1alpha1.Tenant, forbidden ForbiddenNamespaces) error {
	ns := t.ManagementNamespace()
	why := forbidden[ns]
	if slices.Contains(systemNamespaces, ns) {
		why = "a Kubernetes system namespace"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("spec.management.namespace of Tenant %s is %s (%s), which cannot be a tenant's namespace: "+
		"Capwright would label it, set its Pod Security level and bind the tenant's ServiceAccount as admin there. "+
		"The namespace cannot change: delete this Tenant and create it again with another spec.management.namespace. "+
		"Until then nothing is written for the tenant", t.Name, ns, why)
}
