package render

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
)

// Cluster API's Cluster is read in one place, internal/clusterapi; these
// names are kept for the tests that build Clusters by hand.
var (
	// ClusterAPIVersion is clusterapi.ClusterAPIVersion.
	ClusterAPIVersion = clusterapi.ClusterAPIVersion
	// ClusterKind is the Cluster's kind.
	ClusterKind = clusterapi.ClusterGVK.Kind
)

// ClusterDecision is what selection decided about one Cluster.
type ClusterDecision struct {
	Cluster types.NamespacedName
	// Selected: the Cluster is in one of the tenant's namespaces and
	// matches its selector or names.
	Selected bool
	// Eligible: selected, and the stack can be installed now. A selected
	// Cluster that is not eligible is Pending, with Reason and Message
	// saying why; what Flux installed on it earlier stays as it is.
	Eligible        bool
	Reason, Message string
}

// ClusterSelection is the outcome of SelectClusters.
type ClusterSelection struct {
	// Clusters holds a decision for every Cluster given, sorted by
	// namespace and name.
	Clusters []ClusterDecision
	// MissingNames are entries of spec.clusters.names that match no
	// Cluster in the tenant's namespaces, sorted.
	MissingNames []string
}

// Selected returns the decisions of the selected Clusters.
func (s ClusterSelection) Selected() []ClusterDecision {
	var out []ClusterDecision
	for _, d := range s.Clusters {
		if d.Selected {
			out = append(out, d)
		}
	}
	return out
}

// TenantNamespaces are the only namespaces a tenant's Clusters are looked
// up in: its management namespace and spec.clusters.namespaces, sorted.
// The controller lists and watches Clusters there only.
func TenantNamespaces(t *tenancyv1alpha1.Tenant) []string {
	out := append([]string{t.ManagementNamespace()}, t.Spec.Clusters.Namespaces...)
	slices.Sort(out)
	return slices.Compact(out)
}

// SelectClusters decides, for every Cluster given, whether the tenant
// selects it and whether the stack can be installed on it now: once its
// control plane is initialized and its kubeconfig Secret exists
// (kubeconfigs holds the namespace and name of the Secrets that exist),
// unless it is paused or being deleted. Clusters outside the tenant's
// namespaces are never selected, whatever their labels or names.
//
// The error is for a selector that does not parse (CheckTenantSelector).
func SelectClusters(t *tenancyv1alpha1.Tenant, clusters []clusterapi.Facts, kubeconfigs sets.Set[types.NamespacedName]) (ClusterSelection, error) {
	sel := t.Spec.Clusters
	selector, err := tenantSelector(t)
	if err != nil {
		return ClusterSelection{}, err
	}
	allowed := sets.New(TenantNamespaces(t)...)
	names := sets.New(sel.Names...)
	found := sets.New[string]()

	out := ClusterSelection{Clusters: make([]ClusterDecision, 0, len(clusters))}
	for _, c := range clusters {
		d := ClusterDecision{Cluster: c.Ref()}
		if allowed.Has(c.Namespace) {
			byName := names.Has(c.Name)
			if byName {
				found.Insert(c.Name)
			}
			d.Selected = byName || selector.Matches(labels.Set(c.Labels))
		}
		if d.Selected {
			d.Reason, d.Message = pending(c, kubeconfigs)
			d.Eligible = d.Reason == ""
		}
		out.Clusters = append(out.Clusters, d)
	}
	slices.SortFunc(out.Clusters, func(a, b ClusterDecision) int { return compareNames(a.Cluster, b.Cluster) })
	out.MissingNames = sets.List(names.Difference(found))
	return out, nil
}

// pending says why the stack cannot be installed on a selected Cluster
// yet, or nothing when it can. None of these is a failure: each clears on
// its own or by the user's choice (resuming the Cluster).
func pending(c clusterapi.Facts, kubeconfigs sets.Set[types.NamespacedName]) (reason, message string) {
	ref := c.Namespace + "/" + c.Name
	secret := types.NamespacedName{Namespace: c.Namespace, Name: KubeconfigSecretName(c.Name)}
	switch {
	case c.Deleting:
		return tenancyv1alpha1.ClusterDeletingReason, "Cluster " + ref + " is being deleted; the stack is neither installed nor updated on it"
	case c.Paused():
		return tenancyv1alpha1.ClusterPausedReason, "Cluster " + ref + " is paused (spec.paused or the " + clusterapi.PausedAnnotation +
			" annotation); the stack is installed or updated once it is resumed"
	case !c.ControlPlaneInitialized:
		return tenancyv1alpha1.ControlPlaneNotInitializedReason, "the control plane of Cluster " + ref +
			" is not initialized yet (status.initialization.controlPlaneInitialized); the stack is installed once it is"
	case !kubeconfigs.Has(secret):
		return tenancyv1alpha1.KubeconfigMissingReason, "Secret " + secret.String() +
			" does not exist yet; Cluster API writes it once the control plane is initialized, and the stack is installed then"
	}
	return "", ""
}

// String formats a decision for logs and test failures.
func (d ClusterDecision) String() string {
	var b strings.Builder
	b.WriteString(d.Cluster.String())
	switch {
	case !d.Selected:
		b.WriteString(": not selected")
	case d.Eligible:
		b.WriteString(": eligible")
	default:
		b.WriteString(": pending (" + d.Reason + ")")
	}
	return b.String()
}

// CheckTenantSelector refuses a spec.clusters.selector that does not
// parse: a label key or value Kubernetes does not allow, beyond what the
// CRD's rules check (the operators and their values).
func CheckTenantSelector(t *tenancyv1alpha1.Tenant) error {
	_, err := tenantSelector(t)
	return err
}

// tenantSelector is spec.clusters.selector parsed; without one it selects
// nothing (the tenant names its Clusters).
func tenantSelector(t *tenancyv1alpha1.Tenant) (labels.Selector, error) {
	if t.Spec.Clusters.Selector == nil {
		return labels.Nothing(), nil
	}
	s, err := metav1.LabelSelectorAsSelector(t.Spec.Clusters.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.clusters.selector of Tenant %s: %w; fix the selector: it takes label keys and values as a Cluster's labels have them, and the operators In, NotIn (with values), Exists and DoesNotExist (without)", t.Name, err)
	}
	return s, nil
}
