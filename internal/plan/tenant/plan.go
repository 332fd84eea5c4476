package tenant

import (
	"fmt"
	"slices"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Desired is what one reconcile of a Tenant wants: the sync's share
// (plan.Desired: the writes in order, what to prune, observe and nudge)
// and what the fold needs to read the sync's result.
type Desired struct {
	plan.Desired
	// Management are the tenant's namespace and RBAC; nil when its
	// management namespace is not allowed (nothing is written then).
	Management *render.TenantManagementObjects
	// Selection and Rendered are nil when the plan refused before them.
	Selection *render.ClusterSelection
	Rendered  *render.RenderedTenant
	// Poll: Clusters are not watched, so look again within a minute.
	Poll bool
	// Rollout is the rollout step of a tenant with spec.rollout, and
	// Sources the source each selected cluster's object uses then (its
	// revision's); nil without spec.rollout.
	Rollout *Rollout
	Sources map[types.NamespacedName]string
}

// The groups of the writes (plan.Write.Group): the management objects,
// which everything else needs (without its namespace and RBAC the tenant
// gets nothing else: its clusters' namespace may be someone else's); the
// source and target namespace artifact of one namespace, which every
// cluster there needs; and one cluster's Flux objects.
const managementGroup = "management"

func namespaceGroup(namespace string) string { return "namespace " + namespace }

func clusterGroup(c types.NamespacedName) string { return "cluster " + c.String() }

// Plan is what the facts call for: the tenant's namespace and RBAC, then
// — unless it is refused — a source (and a kustomize stack's target
// namespace artifact) per namespace with selected clusters and each
// eligible cluster's Flux objects, the tenant's objects no longer needed
// to prune, the objects the fold reads, and the nudges.
//
// A refusal is a *plan.Refusal, returned with what is still written:
// nothing when the management namespace is not allowed; the tenant's own
// namespace and RBAC when another namespace is not allowed, the Cluster
// API is missing, or the selector or stack cannot be used (nothing is
// written or deleted for its clusters then).
func Plan(f Facts) (Desired, error) {
	t := f.Tenant
	if err := render.CheckManagementNamespace(t, f.Forbidden); err != nil {
		return Desired{}, plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.NamespaceNotAllowedReason, err.Error(), 0)
	}
	m := render.TenantManagement(t)
	d := Desired{Management: &m}
	d.Writes = managementWrites(m)
	if err := render.CheckTenantNamespaces(t, f.Forbidden, f.Tenants); err != nil {
		return d, plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.NamespaceNotAllowedReason, err.Error(), 0)
	}
	if err := checkSpec(t); err != nil {
		return d, err
	}
	if f.ClusterAPIMissing != nil {
		return d, plan.Failing(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.ClusterAPIMissingReason, clusterAPIMissing(f.ClusterAPIMissing), time.Minute)
	}
	sel, err := render.SelectClusters(t, f.Clusters, f.Kubeconfigs)
	if err != nil {
		return d, plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidSelectorReason, err.Error(), 0)
	}
	opts := render.TenantOptions{NoArtifactServer: f.NoArtifactServer}
	if t.Spec.Rollout != nil {
		d.Rollout, opts.Rollout, d.Sources = planRollout(f, sel)
	}
	rendered, err := render.Tenant(t, sel, opts)
	if err != nil {
		return d, plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidStackReason, err.Error(), 0)
	}
	mirrorSources(f, rendered.Sources)
	d.Selection, d.Rendered, d.Poll = &sel, rendered, !f.ClustersWatched
	d.Writes = append(d.Writes, snapshotWrites(rendered)...)
	d.Writes = append(d.Writes, fluxWrites(t, rendered, f.Stacks)...)
	for _, e := range render.StaleTenantObjects(t, rendered, sel, f.Existing) {
		if o, ok := e.Object.(object); ok {
			d.Prune = append(d.Prune, o)
			if unreachable(t, e, f.Kubeconfigs) {
				if d.Orphan == nil {
					d.Orphan = map[string]bool{}
				}
				d.Orphan[plan.ObservedKey(e.Kind, o.GetNamespace(), o.GetName())] = true
			}
		}
	}
	d.PruneNeeds = []string{managementGroup}
	observe(&d, t, sel, rendered)
	if !t.Spec.Suspend {
		// Flux ignores suspended objects.
		sources := d.Sources
		d.Nudges = func(o plan.Observed) []plan.Nudge { return nudges(t, sel, rendered, o, sources) }
	}
	shardFlux(f, d.Writes)
	return d, nil
}

// checkSpec refuses, whatever the tenant selects (no Cluster at all, or
// Cluster API not served yet), a selector or a stack that could never be
// used: a tenant applied with a semver range Flux cannot parse fails at
// once, not when its first Cluster comes.
func checkSpec(t *tenancyv1alpha1.Tenant) error {
	if err := render.CheckTenantSelector(t); err != nil {
		return plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidSelectorReason, err.Error(), 0)
	}
	if err := render.CheckTenantStack(t); err != nil {
		return plan.Stalling(tenancyv1alpha1.ClustersReadyCondition, tenancyv1alpha1.InvalidStackReason, err.Error(), 0)
	}
	return nil
}

// mirrorSources sends the stack's sources where the manager's registry
// mirror rules send its URL, over plain HTTP where --insecure-registry
// names the host, as for a provider's artifact: an air-gapped site applies
// the Tenants of a connected one.
func mirrorSources(f Facts, sources []*sourcev1.OCIRepository) {
	for _, s := range sources {
		var insecure bool
		s.Spec.URL, insecure = f.Mirrors.OCISource(s.Spec.URL, f.InsecureRegistries)
		s.Spec.Insecure = s.Spec.Insecure || insecure
	}
}

// object is what apply writes and deletes (controller-runtime's
// client.Object has the same method set).
type object interface {
	metav1.Object
	runtime.Object
}

// clusterAPIMissing says the Cluster kind is not served, and what then.
func clusterAPIMissing(cause error) string {
	return fmt.Sprintf("the management cluster does not serve %s %s (%v): install Cluster API (the core provider) to select clusters; "+
		"the tenant's namespace and RBAC are written meanwhile, and Capwright starts watching Clusters as soon as Cluster API is served",
		clusterapi.ClusterAPIVersion, clusterapi.ClusterGVK.Kind, cause)
}

// managementWrites are the tenant's namespace, ServiceAccount,
// RoleBinding and quota, read without the cache (the manager does not
// watch them all), first: a conflict stops them and everything else.
func managementWrites(m render.TenantManagementObjects) []plan.Write {
	out := []plan.Write{
		{Object: m.Namespace, Uncached: true, Group: managementGroup},
		{Object: m.ServiceAccount, Uncached: true, Group: managementGroup},
		{Object: m.RoleBinding, Uncached: true, Group: managementGroup},
	}
	if m.ResourceQuota != nil {
		out = append(out, plan.Write{Object: m.ResourceQuota, Uncached: true, Group: managementGroup})
	}
	return out
}

// snapshotWrites are the ControllerRevisions of the revisions a tenant
// with spec.rollout keeps, with its management objects: a cluster's
// objects are never at a revision that is not kept.
func snapshotWrites(rendered *render.RenderedTenant) []plan.Write {
	var out []plan.Write
	for _, s := range rendered.Snapshots {
		out = append(out, plan.Write{Object: s, Uncached: true, Group: managementGroup})
	}
	return out
}

// fluxWrites are the sources, the target namespace's ExternalArtifacts
// (their artifact stored once applied) and the clusters' Flux objects,
// each cluster's namespace Kustomization before its stack's, and the
// stack's only once the namespace exists (stackWaits). An object that
// exists and is not the tenant's is left alone: the conflict fails that
// cluster (or every cluster of a namespace whose source or
// ExternalArtifact conflicts) on its own status line, and the others go
// on. Like the tenant's, they are read without the cache, so a write is
// never decided on an old read.
func fluxWrites(t *tenancyv1alpha1.Tenant, rendered *render.RenderedTenant, stacks map[types.NamespacedName]StackFacts) []plan.Write {
	var out []plan.Write
	needs := []string{managementGroup}
	for _, s := range rendered.Sources {
		out = append(out, plan.Write{Object: s, Uncached: true, Group: namespaceGroup(s.Namespace), Needs: needs, Request: true})
	}
	for _, a := range rendered.NamespaceArtifacts {
		out = append(out, plan.Write{Object: a, Uncached: true, Group: namespaceGroup(a.Namespace), Needs: needs,
			Artifact: &plan.Artifact{Data: rendered.NamespaceArtifact, Of: fmt.Sprintf("the Namespace %s of Tenant %s's stack", t.TargetNamespace(), t.Name)}})
	}
	for _, c := range rendered.Clusters {
		group, needs := clusterGroup(c.Cluster), []string{managementGroup, namespaceGroup(c.Cluster.Namespace)}
		if c.Namespace != nil {
			out = append(out, plan.Write{Object: c.Namespace, Uncached: true, Group: group, Needs: needs, Request: true})
			if stackWaits(stacks[c.Cluster]) {
				continue
			}
		}
		out = append(out, plan.Write{Object: c.Object(), Uncached: true, Group: group, Needs: needs, Request: true})
	}
	return out
}

// stackWaits tells whether a cluster's stack Kustomization is not written
// yet and must wait for the Kustomization creating its target namespace
// to be Ready (health.TenantNamespaceCreated): its first apply would fail
// on a missing namespace. A stack that exists is always written. The
// wait is not a dependsOn, with which kustomize-controller would run the
// namespace Kustomization again, against the workload cluster, on every
// new revision of the stack; the namespace Kustomization's status
// changes wake the controller instead.
func stackWaits(s StackFacts) bool {
	return !s.StackExists && !health.TenantNamespaceCreated(s.Namespace)
}

// observe are the objects the fold reads for every selected cluster: the
// tenant's source in the Cluster's namespace, the cluster's HelmRelease
// or Kustomization, and the Kustomization of a kustomize stack's target
// namespace.
func observe(d *Desired, t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, rendered *render.RenderedTenant) {
	sources := map[types.NamespacedName]bool{}
	for _, c := range sel.Selected() {
		ns := c.Cluster.Namespace
		source := types.NamespacedName{Namespace: ns, Name: sourceName(t, c.Cluster, d.Sources)}
		if !sources[source] {
			sources[source] = true
			d.Observe = append(d.Observe, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: source.Name}})
		}
		key := metav1.ObjectMeta{Namespace: ns, Name: render.TenantClusterObjectName(t.Name, c.Cluster)}
		if t.Spec.Stack.Chart != nil {
			d.Observe = append(d.Observe, &helmv2.HelmRelease{ObjectMeta: key})
		} else {
			d.Observe = append(d.Observe, &kustomizev1.Kustomization{ObjectMeta: key})
		}
		if rendered.NamespaceArtifact != nil {
			d.Observe = append(d.Observe, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: render.TenantNamespaceObjectName(t.Name, c.Cluster)}})
		}
	}
}

// nudges ask kustomize-controller to reconcile a cluster's stack or
// namespace Kustomization at once where it would otherwise wait
// (health.TenantClusterNudge): once per state, so a resync writes
// nothing. Not for pending clusters, nor for clusters whose objects are
// someone else's (Needs).
func nudges(t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, rendered *render.RenderedTenant, o plan.Observed, sources map[types.NamespacedName]string) []plan.Nudge {
	var out []plan.Nudge
	for _, c := range clusterInputs(t, sel, rendered.NamespaceArtifact != nil, o, nil, sources) {
		if c.PendingReason != "" {
			continue
		}
		n, ok := health.TenantClusterNudge(c)
		if !ok {
			continue
		}
		out = append(out, plan.Nudge{
			Object: &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}},
			Token:  n.Token,
			Needs:  []string{managementGroup, namespaceGroup(c.Cluster.Namespace), clusterGroup(c.Cluster)},
		})
	}
	return out
}

// clusterInputs are the selected clusters as the fold of their health
// reads them from the observed objects: a missing object is Missing.
// createsNamespace: a Kustomization creates the stack's target
// namespace; conflicts are the sync's; sources are the source each
// cluster's object uses, where it is not the one following the spec.
func clusterInputs(t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, createsNamespace bool, o plan.Observed,
	conflicts map[string]string, sources map[types.NamespacedName]string) []health.TenantClusterInput {
	var out []health.TenantClusterInput
	for _, d := range sel.Selected() {
		ns := d.Cluster.Namespace
		conflict := conflicts[namespaceGroup(ns)]
		if conflict == "" {
			conflict = conflicts[clusterGroup(d.Cluster)]
		}
		c := health.TenantClusterInput{
			Cluster:        d.Cluster,
			PendingReason:  d.Reason,
			PendingMessage: d.Message,
			Conflict:       conflict,
			Source:         observation(o, sourcev1.OCIRepositoryKind, ns, sourceName(t, d.Cluster, sources)),
		}
		name := render.TenantClusterObjectName(t.Name, d.Cluster)
		if t.Spec.Stack.Chart != nil {
			c.Apply = observation(o, helmv2.HelmReleaseKind, ns, name)
		} else {
			c.Apply = observation(o, kustomizev1.KustomizationKind, ns, name)
		}
		if createsNamespace {
			c.Namespace = observation(o, kustomizev1.KustomizationKind, ns, render.TenantNamespaceObjectName(t.Name, d.Cluster))
		}
		out = append(out, c)
	}
	return out
}

// sourceName is the source a cluster's object uses: its revision's, or
// the one following the spec.
func sourceName(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName, sources map[types.NamespacedName]string) string {
	if name, ok := sources[cluster]; ok {
		return name
	}
	return render.TenantSourceName(t.Name)
}

// observation is the observed object of kind namespace/name as the fold
// reads it.
func observation(o plan.Observed, kind, namespace, name string) health.Observation {
	return health.Observe(o.Get(kind, namespace, name), kind, namespace, name)
}

// unreachable tells a Flux applier of the tenant's, in one of its
// namespaces, whose workload cluster's kubeconfig Secret is gone: the
// Cluster was moved to another management cluster (clusterctl move takes
// the Secret first) or deleted. Flux cannot prune what it applied there,
// and its finalizer would retry forever, so it goes without pruning
// (plan.Desired.Orphan); whoever holds the Cluster now holds its stack.
// In a namespace the tenant no longer selects the Secrets are not read,
// and the applier is pruned as before.
func unreachable(t *tenancyv1alpha1.Tenant, e render.ExistingObject, kubeconfigs sets.Set[types.NamespacedName]) bool {
	var ref *meta.KubeConfigReference
	switch o := e.Object.(type) {
	case *kustomizev1.Kustomization:
		ref = o.Spec.KubeConfig
	case *helmv2.HelmRelease:
		ref = o.Spec.KubeConfig
	}
	if ref == nil || ref.SecretRef == nil || !slices.Contains(render.TenantNamespaces(t), e.Object.GetNamespace()) {
		return false
	}
	return !kubeconfigs.Has(types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: ref.SecretRef.Name})
}
