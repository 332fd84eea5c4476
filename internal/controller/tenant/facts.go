package tenant

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	tenantplan "github.com/capwright/capwright/internal/plan/tenant"
	"github.com/capwright/capwright/internal/render"
)

// secretGVK is a Secret, read as metadata only: the controller needs to
// know a kubeconfig Secret exists, never what it holds (Flux reads it).
var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// NewSecretMetadata is an empty metadata-only Secret, for watches.
func NewSecretMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(secretGVK)
	return m
}

// Facts gathers what the plan of t needs, as a reconcile does (facts):
// `capwright build` plans from them what the manager would write.
func (r *Reconciler) Facts(ctx context.Context, t *tenancyv1alpha1.Tenant) (tenantplan.Facts, error) {
	return r.facts(ctx, t)
}

// facts gathers what the plan of t needs. Before anything is read there,
// the namespaces are checked: a namespace the tenant may not use is never
// looked at on its behalf (the plan refuses the tenant then).
func (r *Reconciler) facts(ctx context.Context, t *tenancyv1alpha1.Tenant) (tenantplan.Facts, error) {
	f := tenantplan.Facts{Tenant: t, Forbidden: r.ForbiddenNamespaces, NoArtifactServer: r.Artifacts == nil, Sharding: r.Sharding,
		Mirrors: r.Mirrors, InsecureRegistries: r.InsecureRegistries}
	var tenants tenancyv1alpha1.TenantList
	// Read only: not copied (a fleet's thousand Tenants, on every reconcile).
	if err := r.Client.List(ctx, &tenants, ctrl.UnsafeDisableDeepCopy); err != nil {
		return f, fmt.Errorf("listing Tenants to check the namespaces of Tenant %s: %w", t.Name, err)
	}
	f.Tenants = tenants.Items
	if tenantplan.CheckNamespaces(f) != nil {
		return f, nil
	}
	if err := r.findClusters(ctx, &f); err != nil || f.ClusterAPIMissing != nil {
		return f, err
	}
	if tenantplan.WantsStacks(f) {
		f.Stacks = map[types.NamespacedName]tenantplan.StackFacts{}
		for _, c := range f.Clusters {
			s, err := r.stackFacts(ctx, t, c.Ref())
			if err != nil {
				return f, err
			}
			f.Stacks[c.Ref()] = s
		}
	}
	existing, err := r.tenantObjects(ctx, t, false)
	f.Existing = existing
	if err != nil {
		return f, err
	}
	return f, r.snapshots(ctx, t, &f)
}

// snapshots reads the revisions of a tenant's stack kept as
// ControllerRevisions in its management namespace (uncached: they are not
// watched), for a tenant that has or had spec.rollout: the plan renders
// clusters at them, and prunes those no longer needed (and those that do
// not read back) with the tenant's other objects.
func (r *Reconciler) snapshots(ctx context.Context, t *tenancyv1alpha1.Tenant, f *tenantplan.Facts) error {
	f.Now = time.Now()
	if t.Spec.Rollout == nil && t.Status.Rollout == nil {
		return nil
	}
	var list appsv1.ControllerRevisionList
	if err := r.Reader.List(ctx, &list, ctrl.InNamespace(t.ManagementNamespace()), ctrl.MatchingLabels{tenancyv1alpha1.TenantLabel: t.Name}); err != nil {
		return fmt.Errorf("listing the revisions of Tenant %s's stack in namespace %s: %w", t.Name, t.ManagementNamespace(), err)
	}
	f.Snapshots = map[string]render.StackSnapshot{}
	for i := range list.Items {
		cr := &list.Items[i]
		f.Existing = append(f.Existing, render.ExistingObject{Kind: "ControllerRevision", Object: cr})
		if s, err := render.SnapshotOf(cr); err == nil {
			f.Snapshots[s.ID] = s
		} else {
			log.FromContext(ctx).Info("ignoring a revision that does not read back; it is pruned", "error", err.Error())
		}
	}
	return nil
}

// findClusters reads the Clusters and kubeconfig Secrets of the tenant's
// namespaces (render.TenantNamespaces), and nothing outside them.
func (r *Reconciler) findClusters(ctx context.Context, f *tenantplan.Facts) error {
	reader, watched := r.clusterReader()
	f.Kubeconfigs, f.ClustersWatched = sets.New[types.NamespacedName](), watched
	for _, ns := range render.TenantNamespaces(f.Tenant) {
		var list clusterapi.ClusterList
		if err := reader.List(ctx, &list, ctrl.InNamespace(ns)); err != nil {
			if apimeta.IsNoMatchError(err) || tenantplan.IsNotServed(err) {
				f.ClusterAPIMissing = err
				return nil
			}
			return fmt.Errorf("listing Clusters in namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			f.Clusters = append(f.Clusters, clusterapi.FactsOf(&list.Items[i]))
		}
		secrets := &metav1.PartialObjectMetadataList{}
		secrets.SetGroupVersionKind(secretGVK.GroupVersion().WithKind("SecretList"))
		if err := reader.List(ctx, secrets, ctrl.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing Secrets in namespace %s: %w", ns, err)
		}
		// SelectClusters looks up each Cluster's own Secret by name.
		for _, s := range secrets.Items {
			f.Kubeconfigs.Insert(types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return nil
}

// clusterReader is where the controller reads Clusters and kubeconfig
// Secrets, and whether they are watched.
func (r *Reconciler) clusterReader() (ctrl.Reader, bool) {
	if late := r.clusterWatch.Reader(); late != nil {
		return late, true
	}
	return r.Clusters, r.WatchClusters
}

// stackFacts reads, from the cache, whether a cluster's stack
// Kustomization exists and the Kustomization creating its target
// namespace (tenantplan.StackFacts).
func (r *Reconciler) stackFacts(ctx context.Context, t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) (tenantplan.StackFacts, error) {
	var out tenantplan.StackFacts
	var stack kustomizev1.Kustomization
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(t.Name, cluster)}, &stack)
	if err != nil && !apierrors.IsNotFound(err) && ignoreNoMatch(err) != nil {
		// A Kustomization kind not served is the sync's to report
		// (FluxAPIMissing), as it writes the first Flux object.
		return out, err
	}
	out.StackExists = err == nil
	key := ctrl.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantNamespaceObjectName(t.Name, cluster)}
	var ns *kustomizev1.Kustomization
	if got := (&kustomizev1.Kustomization{}); r.Client.Get(ctx, key, got) == nil {
		ns = got
	}
	out.Namespace = health.Observe(ns, kustomizev1.KustomizationKind, key.Namespace, key.Name)
	return out, nil
}

// isKubeconfigSecret tells whether a Secret's name is that of some
// Cluster's kubeconfig Secret.
func isKubeconfigSecret(name string) bool {
	return strings.HasSuffix(name, clusterapi.KubeconfigSecretName(""))
}

// tenantObjects lists what carries the tenant's label, of the kinds
// Capwright writes for tenants: the management objects in the tenant's
// namespace, as metadata (all that pruning them needs), and the Flux
// objects in every namespace, all from the cache (which holds the
// labelled management objects as metadata: CacheByObject). Kinds not
// served are skipped.
func (r *Reconciler) tenantObjects(ctx context.Context, t *tenancyv1alpha1.Tenant, fluxOnly bool) ([]render.ExistingObject, error) {
	selector := ctrl.MatchingLabels{tenancyv1alpha1.TenantLabel: t.Name}
	var out []render.ExistingObject
	if !fluxOnly {
		ns := ctrl.InNamespace(t.ManagementNamespace())
		for _, gvk := range inNamespaceKinds {
			var list metav1.PartialObjectMetadataList
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.Client.List(ctx, &list, ns, selector); err != nil {
				return nil, fmt.Errorf("listing the tenant's %ss: %w", gvk.Kind, err)
			}
			for i := range list.Items {
				list.Items[i].SetGroupVersionKind(gvk)
				out = append(out, render.ExistingObject{Kind: gvk.Kind, Object: &list.Items[i]})
			}
		}
	}
	// Appliers first: deleting them makes Flux uninstall, which does not
	// need the source. From the cache's index of the tenant label
	// (TenantIndex), in every namespace.
	byTenant := ctrl.MatchingFields{TenantIndex: t.Name}
	var hrs helmv2.HelmReleaseList
	if err := r.Client.List(ctx, &hrs, byTenant); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's HelmReleases: %w", err)
	}
	for i := range hrs.Items {
		out = append(out, render.ExistingObject{Kind: helmv2.HelmReleaseKind, Object: &hrs.Items[i]})
	}
	var kss kustomizev1.KustomizationList
	if err := r.Client.List(ctx, &kss, byTenant); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's Kustomizations: %w", err)
	}
	for i := range kss.Items {
		out = append(out, render.ExistingObject{Kind: kustomizev1.KustomizationKind, Object: &kss.Items[i]})
	}
	var repos sourcev1.OCIRepositoryList
	if err := r.Client.List(ctx, &repos, byTenant); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's OCIRepositories: %w", err)
	}
	for i := range repos.Items {
		out = append(out, render.ExistingObject{Kind: sourcev1.OCIRepositoryKind, Object: &repos.Items[i]})
	}
	var artifacts sourcev1.ExternalArtifactList
	if err := r.Client.List(ctx, &artifacts, byTenant); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's ExternalArtifacts: %w", err)
	}
	for i := range artifacts.Items {
		out = append(out, render.ExistingObject{Kind: sourcev1.ExternalArtifactKind, Object: &artifacts.Items[i]})
	}
	return out, nil
}

// deleteObject deletes exactly the object listed (by UID), so an object
// recreated meanwhile under the same name is not touched.
func (r *Reconciler) deleteObject(ctx context.Context, e render.ExistingObject) error {
	obj, ok := e.Object.(ctrl.Object)
	if !ok {
		return fmt.Errorf("cannot delete %s %s", e.Kind, plan.ObjectRef(e.Object))
	}
	err := apply.DeleteExactly(ctx, r.Client, obj)
	if err != nil {
		return fmt.Errorf("deleting %s %s: %w", e.Kind, plan.ObjectRef(e.Object), err)
	}
	return nil
}

func ignoreNoMatch(err error) error {
	if err == nil {
		return nil
	}
	if apimeta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind") || tenantplan.IsNotServed(err) {
		return nil
	}
	return err
}
