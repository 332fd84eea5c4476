package render

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// ConflictError is an object Capwright would write for a tenant that
// exists and was not created by Capwright for that tenant. Capwright
// leaves such objects alone and reports the conflict.
type ConflictError struct {
	Kind, Namespace, Name string
	Tenant                string
	// Why says what tells the object apart from the tenant's.
	Why string
}

func (e *ConflictError) Error() string {
	ref := e.Name
	if e.Namespace != "" {
		ref = e.Namespace + "/" + e.Name
	}
	msg := fmt.Sprintf("%s %s exists and was not created by Capwright for Tenant %s (%s); Capwright leaves it alone", e.Kind, ref, e.Tenant, e.Why)
	if e.Kind == "Namespace" {
		return msg + ": set spec.management.namespace to a namespace that does not exist, or label this one " +
			tenancyv1alpha1.TenantLabel + "=" + e.Tenant + " to hand it over"
	}
	return msg + ": rename or delete it"
}

// CheckTenantObject tells whether Capwright may update or delete existing
// in place of desired, an object it rendered for a tenant: nil when
// existing is controlled by the same Tenant (by UID, so objects left
// behind by an earlier Tenant of the same name are not taken over),
// whatever its labels, or — where desired has no controller — carries the
// tenant's label; a *ConflictError otherwise.
func CheckTenantObject(kind string, existing, desired metav1.Object) error {
	tenant := desired.GetLabels()[tenancyv1alpha1.TenantLabel]
	conflict := func(why string) error {
		return &ConflictError{Kind: kind, Namespace: existing.GetNamespace(), Name: existing.GetName(), Tenant: tenant, Why: why}
	}
	want := ControllerUID(desired)
	if want != "" && ControlledBy(existing, want) {
		// Controlled by this very Tenant: its own, also when someone took
		// the label off (applying puts it back).
		return nil
	}
	switch has, ok := existing.GetLabels()[tenancyv1alpha1.TenantLabel]; {
	case !ok:
		return conflict("it has no " + tenancyv1alpha1.TenantLabel + " label")
	case has != tenant:
		return conflict("it is labelled for Tenant " + has)
	}
	if want == "" {
		return nil
	}
	return conflict(fmt.Sprintf("it is not owned by this Tenant (uid %s); it may be left over from an earlier Tenant of the same name", want))
}

// ExistingObject is an object found labelled for a tenant, with its kind
// (typed objects read through a client have an empty TypeMeta).
type ExistingObject struct {
	Kind   string
	Object metav1.Object
}

// StaleTenantObjects returns what the controller should delete: the
// tenant's objects (labelled and owned by it, see CheckTenantObject) that
// rendered no longer holds — the Flux objects of clusters no longer
// selected, sources of namespaces without selected clusters, the quota
// once spec.management.quota is gone, a HelmRelease once the stack became
// a kustomize artifact, the target namespace's ExternalArtifacts and
// Kustomizations once it became a chart. (Deleting those never deletes
// the namespace on a workload cluster: see tenant_createnamespace.go.)
//
// Never stale: the Namespace, which holds the tenant's Cluster API
// clusters; the Flux object of a cluster that is selected but Pending
// (paused, being deleted, not reachable), which keeps what it installed
// until the cluster is eligible again; objects of kinds Capwright does not
// write, whatever their labels.
func StaleTenantObjects(t *tenancyv1alpha1.Tenant, rendered *RenderedTenant, sel ClusterSelection, existing []ExistingObject) []ExistingObject {
	type key struct{ kind, namespace, name string }
	keep := map[key]bool{}
	for _, o := range rendered.Objects() {
		keep[key{o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName()}] = true
	}
	pending := map[types.NamespacedName]bool{}
	for _, d := range sel.Clusters {
		if d.Selected && !d.Eligible {
			pending[d.Cluster] = true
		}
	}
	var stale []ExistingObject
	for _, e := range existing {
		o := e.Object
		switch {
		case !tenantKinds[e.Kind],
			keep[key{e.Kind, o.GetNamespace(), o.GetName()}],
			CheckTenantObject(e.Kind, o, ownedMeta(t)) != nil:
			continue
		case e.Kind == helmv2.HelmReleaseKind || e.Kind == kustomizev1.KustomizationKind:
			l := o.GetLabels()
			if pending[types.NamespacedName{Namespace: l[tenancyv1alpha1.ClusterNamespaceLabel], Name: l[tenancyv1alpha1.ClusterNameLabel]}] {
				continue
			}
		}
		stale = append(stale, e)
	}
	return stale
}

// tenantKinds are the kinds StaleTenantObjects may return: those Capwright
// writes for a tenant, but the Namespace.
var tenantKinds = map[string]bool{
	"ServiceAccount": true, "RoleBinding": true, "ResourceQuota": true, "ControllerRevision": true,
	sourcev1.OCIRepositoryKind: true, sourcev1.ExternalArtifactKind: true, helmv2.HelmReleaseKind: true, kustomizev1.KustomizationKind: true,
}

// ownedMeta is the label and owner every owned object of the tenant
// carries.
func ownedMeta(t *tenancyv1alpha1.Tenant) *metav1.ObjectMeta {
	m := tenantMeta(t, "", "", true)
	return &m
}
