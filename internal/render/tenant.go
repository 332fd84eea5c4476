package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
)

// A tenant's objects, and why they look the way they do:
//
//   - On the management cluster, a Namespace for the tenant's Cluster API
//     objects, a ServiceAccount its own Flux Kustomizations impersonate,
//     a RoleBinding of that ServiceAccount to the ClusterRole
//     capwright-tenant (so the grant stops at the namespace, and the
//     platform team curates one role for all tenants instead of Capwright
//     inventing rules), and an optional ResourceQuota.
//   - In every namespace with selected clusters, one OCIRepository shared
//     by the tenant's clusters there, and per eligible cluster one
//     HelmRelease or Kustomization that installs the stack through the
//     Cluster's kubeconfig Secret.
//   - For a kustomize stack, also the target namespace: one
//     ExternalArtifact of a Namespace manifest per namespace with
//     selected clusters, and per eligible cluster a Kustomization that
//     creates it before the stack's (see tenant_createnamespace.go).
//
// Everything but the Namespace is controlled by the Tenant through an
// owner reference (a cluster-scoped owner may own namespaced dependents),
// so deleting the Tenant garbage-collects it even without the
// controller. The Namespace only carries the tenant label: it holds the
// tenant's Cluster API clusters, and deleting the Tenant must uninstall
// the stack, not deprovision the clusters.

// TenantObjectName names the RoleBinding and the ResourceQuota Capwright
// writes in a tenant's namespace.
const TenantObjectName = "capwright-tenant"

// kubeconfigSecretKey is the key of the kubeconfig in a Cluster's
// kubeconfig Secret (clusterapi.KubeconfigSecretName), as Cluster API
// writes it (sigs.k8s.io/cluster-api util/secret).
const kubeconfigSecretKey = "value"

// KubeconfigSecretName is the name of a Cluster's kubeconfig Secret, in the
// Cluster's namespace (clusterapi.KubeconfigSecretName).
func KubeconfigSecretName(cluster string) string { return clusterapi.KubeconfigSecretName(cluster) }

// Name length bounds. Flux labels everything a HelmRelease or
// Kustomization applies with its name, so those names are label values
// (63); Helm release names are at most 53 characters.
const (
	maxLabelValue      = 63
	nameHashLength     = 8
	tenantSourceSuffix = "-stack"
)

// TenantSourceName names a tenant's OCIRepository in each namespace:
// "<tenant>-stack". Appending a fixed suffix keeps names of different
// tenants apart, and a Tenant's name (at most 56 characters, validated by
// the API) keeps it within 63.
func TenantSourceName(tenant string) string { return tenant + tenantSourceSuffix }

// TenantClusterObjectName names the HelmRelease or Kustomization of a
// tenant on one cluster: "<tenant>-<cluster>-<hash>", at most 63
// characters. The hash of tenant, namespace and cluster makes it unique
// even where the readable part is ambiguous (tenant a-b with cluster c, and
// tenant a with cluster b-c) or cut short, and stable across resyncs.
func TenantClusterObjectName(tenant string, cluster types.NamespacedName) string {
	return hashedName(tenant+"-"+cluster.Name, tenant+"/"+cluster.Namespace+"/"+cluster.Name, maxLabelValue)
}

// tenantReleaseName is the Helm release on each workload cluster: the
// tenant's name, which is what `helm list` there should show, cut to
// Helm's 53 characters with a hash when longer.
func tenantReleaseName(tenant string) string {
	if len(tenant) <= helmReleaseNameMax {
		return tenant
	}
	return hashedName(tenant, tenant, helmReleaseNameMax)
}

// hashedName is readable, cut so that "-" and the hash of key fit in
// limit, followed by that hash.
func hashedName(readable, key string, limit int) string {
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:])[:nameHashLength]
	if keep := limit - len(hash) - 1; len(readable) > keep {
		readable = readable[:keep]
	}
	return strings.TrimRight(readable, "-.") + "-" + hash
}

// RenderedTenant is every object Capwright writes for a tenant.
type RenderedTenant struct {
	Management TenantManagementObjects
	// Sources holds one OCIRepository per namespace with selected
	// clusters, sorted by namespace. Clusters that are selected but not
	// eligible keep their source, so that what Flux installed on them
	// earlier keeps working while they are paused.
	Sources []*sourcev1.OCIRepository
	// NamespaceArtifacts holds, for a kustomize stack, the ExternalArtifact
	// of the target namespace in the same namespaces as Sources; their
	// artifact is NamespaceArtifact (TenantNamespaceArtifact), which the
	// controller stores and announces in their status.
	NamespaceArtifacts []*sourcev1.ExternalArtifact
	NamespaceArtifact  []byte
	// Clusters holds the Flux object of every eligible cluster, sorted by
	// namespace and name.
	Clusters []TenantClusterObjects
	// Snapshots are the ControllerRevisions of the revisions a tenant with
	// spec.rollout keeps (TenantRollout), sorted by name; Sources then also
	// holds each namespace's pinned sources after the one that follows
	// the tag.
	Snapshots []*appsv1.ControllerRevision
}

// TenantManagementObjects are the tenant's objects on the management
// cluster. ResourceQuota is nil without spec.management.quota.
type TenantManagementObjects struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	RoleBinding    *rbacv1.RoleBinding
	ResourceQuota  *corev1.ResourceQuota
}

// TenantClusterObjects is the Flux object installing the stack on one
// cluster: exactly one of HelmRelease (chart stack) or Kustomization.
// Namespace is the Kustomization that creates the target namespace,
// which the stack's Kustomization is written after; nil for a chart
// stack.
type TenantClusterObjects struct {
	Cluster       types.NamespacedName
	HelmRelease   *helmv2.HelmRelease
	Kustomization *kustomizev1.Kustomization
	Namespace     *kustomizev1.Kustomization
}

// Object is the cluster's HelmRelease or Kustomization.
func (c TenantClusterObjects) Object() Object {
	if c.HelmRelease != nil {
		return c.HelmRelease
	}
	return c.Kustomization
}

// Object is what Capwright writes: a Kubernetes object with metadata
// (controller-runtime's client.Object has the same method set).
type Object interface {
	metav1.Object
	runtime.Object
}

// Objects lists everything rendered, management objects first, then the
// sources, then the clusters' objects (each cluster's namespace
// Kustomization before the stack's): the order to apply them in.
func (r *RenderedTenant) Objects() []Object {
	m := r.Management
	out := []Object{m.Namespace, m.ServiceAccount, m.RoleBinding}
	if m.ResourceQuota != nil {
		out = append(out, m.ResourceQuota)
	}
	for _, s := range r.Snapshots {
		out = append(out, s)
	}
	for _, s := range r.Sources {
		out = append(out, s)
	}
	for _, a := range r.NamespaceArtifacts {
		out = append(out, a)
	}
	for _, c := range r.Clusters {
		if c.Namespace != nil {
			out = append(out, c.Namespace)
		}
		out = append(out, c.Object())
	}
	return out
}

// TenantOptions are what rendering needs to know of the manager beyond
// the Tenant.
type TenantOptions struct {
	// NoArtifactServer is set when the manager serves no artifacts to
	// Flux (it runs without --artifact-storage-path): it cannot hand Flux
	// a kustomize stack's target namespace, so none is rendered and the
	// stack's artifact must carry a Namespace manifest, as before
	// Capwright created it.
	NoArtifactServer bool
	// Rollout renders a tenant with spec.rollout: each cluster at its
	// revision, from that revision's pinned source. Nil renders every
	// cluster from the source that follows spec.stack.
	Rollout *TenantRollout
}

// Tenant renders every object of a tenant for a cluster selection (see
// SelectClusters): the management objects, a source (and for a kustomize
// stack the target namespace's artifact) in each namespace with selected
// clusters, and the Flux objects of each eligible cluster. It returns an
// error when the spec asks for something Flux cannot do; the message
// names the field and the fix.
func Tenant(t *tenancyv1alpha1.Tenant, sel ClusterSelection, opts TenantOptions) (*RenderedTenant, error) {
	if t == nil {
		return nil, errors.New("render: no tenant given")
	}
	if err := CheckTenantStack(t); err != nil {
		return nil, err
	}
	out := &RenderedTenant{Management: TenantManagement(t)}
	createNamespace := t.Spec.Stack.Kustomize != nil && !opts.NoArtifactServer
	if createNamespace {
		data, err := TenantNamespaceArtifact(t)
		if err != nil {
			return nil, err
		}
		out.NamespaceArtifact = data
	}
	var namespaces []string
	for _, d := range sel.Clusters {
		if !d.Selected {
			continue
		}
		namespaces = append(namespaces, d.Cluster.Namespace)
		if !d.Eligible {
			continue
		}
		objs, err := clusterObjects(t, d.Cluster, createNamespace, opts.Rollout)
		if err != nil {
			return nil, err
		}
		if objs != nil {
			out.Clusters = append(out.Clusters, *objs)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range slices.Compact(namespaces) {
		out.Sources = append(out.Sources, tenantSource(t, ns))
		if opts.Rollout != nil {
			for _, s := range opts.Rollout.Sources[ns] {
				out.Sources = append(out.Sources, pinnedSource(t, ns, s))
			}
		}
		if createNamespace {
			out.NamespaceArtifacts = append(out.NamespaceArtifacts, tenantNamespaceArtifact(t, ns))
		}
	}
	if opts.Rollout != nil {
		for _, s := range opts.Rollout.Snapshots {
			cr, err := Snapshot(t, s)
			if err != nil {
				return nil, err
			}
			out.Snapshots = append(out.Snapshots, cr)
		}
		slices.SortFunc(out.Snapshots, func(a, b *appsv1.ControllerRevision) int { return cmp.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(out.Clusters, func(a, b TenantClusterObjects) int { return compareNames(a.Cluster, b.Cluster) })
	return out, nil
}

// clusterObjects renders one eligible cluster's objects: from the source
// that follows the spec, or at its pinned revision (nil when a rollout
// gave it none yet).
func clusterObjects(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName, createNamespace bool, rollout *TenantRollout) (*TenantClusterObjects, error) {
	if rollout == nil {
		return tenantCluster(t, cluster, createNamespace)
	}
	pin, ok := rollout.Pins[cluster]
	if !ok {
		return nil, nil
	}
	return pinnedCluster(t, cluster, pin, createNamespace)
}

func compareNames(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// tenantMeta is fresh metadata for one object of a tenant: labelled with
// the tenant (how the controller finds its objects and maps events back),
// and controlled by it when owned.
func tenantMeta(t *tenancyv1alpha1.Tenant, namespace, name string, owned bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:      name,
		Namespace: namespace,
		Labels:    map[string]string{tenancyv1alpha1.TenantLabel: t.Name},
	}
	if owned {
		controller, block := true, true
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         tenancyv1alpha1.GroupVersion.String(),
			Kind:               tenancyv1alpha1.TenantKind,
			Name:               t.Name,
			UID:                t.UID,
			Controller:         &controller,
			BlockOwnerDeletion: &block,
		}}
	}
	return m
}

// tenantClusterMeta is tenantMeta for a cluster's Flux object, which also
// names the Cluster it installs into.
func tenantClusterMeta(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) metav1.ObjectMeta {
	m := tenantMeta(t, cluster.Namespace, TenantClusterObjectName(t.Name, cluster), true)
	m.Labels[tenancyv1alpha1.ClusterNamespaceLabel] = cluster.Namespace
	m.Labels[tenancyv1alpha1.ClusterNameLabel] = cluster.Name
	return m
}
