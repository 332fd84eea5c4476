// Package tenant is the plan of a Tenant: from the facts a controller (or
// a CLI) gathered — the Tenant, the other Tenants, the Clusters of its
// namespaces, what exists of its Flux objects — to the objects it wants
// written, pruned and observed, and the refusals, with no client, no
// clock and no network (Plan); and back, from what the sync observed, to
// the Tenant's status (Fold).
package tenant

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// Facts are what was gathered for one Tenant.
type Facts struct {
	Tenant *tenancyv1alpha1.Tenant
	// Tenants are every Tenant (this one included): another Tenant's
	// management namespace is not this one's to select Clusters in.
	Tenants []tenancyv1alpha1.Tenant
	// Forbidden are the namespaces no tenant may select Clusters in
	// (the manager's --tenant-forbidden-namespaces and its own).
	Forbidden render.ForbiddenNamespaces
	// NoArtifactServer: the manager serves no artifacts, so a kustomize
	// stack's target namespace is not handed to Flux
	// (render.TenantOptions).
	NoArtifactServer bool
	// Sharding is how the tenant's Flux objects carry Flux's shard label
	// (the manager's --flux-sharding; render.Sharding); zero is off.
	Sharding render.Sharding
	// Mirrors are the manager's registry mirror rules and
	// InsecureRegistries the hosts it reaches over plain HTTP: the stack's
	// sources pull from where they send its URL.
	Mirrors            catalog.Mirrors
	InsecureRegistries []string

	// What follows is read only in the namespaces the tenant may use
	// (CheckNamespaces), render.TenantNamespaces.

	// ClusterAPIMissing is why Clusters could not be listed: the Cluster
	// kind is not served. Nothing below is gathered then.
	ClusterAPIMissing error
	// Clusters are the Clusters of the tenant's namespaces.
	Clusters []clusterapi.Facts
	// Kubeconfigs are the kubeconfig Secrets there.
	Kubeconfigs sets.Set[types.NamespacedName]
	// ClustersWatched is false while Clusters are not watched (Cluster API
	// came after the manager, and no watch started yet): nothing tells
	// the controller of a new Cluster, so it looks again every minute.
	ClustersWatched bool
	// Stacks are, per Cluster, what exists of its kustomize stack on the
	// management cluster (only for a kustomize stack whose target
	// namespace Flux creates).
	Stacks map[types.NamespacedName]StackFacts
	// Existing are the objects labelled for the tenant, of the kinds
	// Capwright writes for it: what is no longer desired among them is
	// pruned.
	Existing []render.ExistingObject

	// For a tenant with spec.rollout: the revisions of its stack kept as
	// ControllerRevisions in its management namespace, by ID (those that
	// do not read back are left out, and pruned), and the time the
	// rollout's bake times are measured against.
	Snapshots map[string]render.StackSnapshot
	Now       time.Time
}

// StackFacts are what exists of one cluster's kustomize stack.
type StackFacts struct {
	// StackExists: the stack's Kustomization exists (whoever's it is).
	StackExists bool
	// Namespace is the Kustomization that creates the target namespace
	// on the cluster, as observed before this reconcile's writes.
	Namespace health.Observation
}

// CheckNamespaces is the refusal of a tenant whose namespaces it may not
// use, or nil: it comes before anything is read in them
// (render.CheckManagementNamespace, render.CheckTenantNamespaces).
func CheckNamespaces(f Facts) error {
	if err := render.CheckManagementNamespace(f.Tenant, f.Forbidden); err != nil {
		return err
	}
	return render.CheckTenantNamespaces(f.Tenant, f.Forbidden, f.Tenants)
}

// WantsStacks tells whether the plan needs Facts.Stacks: a kustomize
// stack whose target namespace Flux creates.
func WantsStacks(f Facts) bool {
	return f.Tenant.Spec.Stack.Kustomize != nil && !f.NoArtifactServer
}
