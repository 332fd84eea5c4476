package tenant

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// foldHealth observes, for every selected cluster, the tenant's source in
// the Cluster's namespace and the cluster's Flux objects (the stack's,
// and the Kustomization of a kustomize stack's target namespace), and
// folds them into status.clusters, the counts and ClustersReady. It
// returns what it observed.
func (r *Reconciler) foldHealth(ctx context.Context, t *tenancyv1alpha1.Tenant, sel render.ClusterSelection, rendered *render.RenderedTenant,
	conflicts map[types.NamespacedName]string) []health.TenantClusterInput {
	in := health.TenantInput{
		Generation:   t.Generation,
		Suspended:    t.Spec.Suspend,
		MissingNames: sel.MissingNames,
		Previous:     t.Status.Clusters,
		Now:          nowTime(),
	}
	for _, d := range sel.Selected() {
		c := health.TenantClusterInput{
			Cluster:        d.Cluster,
			PendingReason:  d.Reason,
			PendingMessage: d.Message,
			Conflict:       conflicts[d.Cluster],
			Source:         r.observeSource(ctx, d.Cluster.Namespace, render.TenantSourceName(t.Name)),
			Apply:          r.observeApplier(ctx, t, d.Cluster),
		}
		if rendered.NamespaceArtifact != nil {
			c.Namespace = r.observeKustomization(ctx, ctrl.ObjectKey{Namespace: d.Cluster.Namespace, Name: render.TenantNamespaceObjectName(t.Name, d.Cluster)})
		}
		in.Clusters = append(in.Clusters, c)
	}
	health.SetTenantClusters(&t.Status, health.FoldTenant(in))
	return in.Clusters
}

func (r *Reconciler) observeSource(ctx context.Context, namespace, name string) health.Observation {
	var repo sourcev1.OCIRepository
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, &repo); err != nil {
		return health.Observation{Kind: sourcev1.OCIRepositoryKind, Namespace: namespace, Name: name, Missing: true}
	}
	return health.ObserveOCIRepository(&repo)
}

// observeApplier observes the cluster's HelmRelease (chart stack) or
// Kustomization.
func (r *Reconciler) observeApplier(ctx context.Context, t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) health.Observation {
	key := ctrl.ObjectKey{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(t.Name, cluster)}
	if t.Spec.Stack.Chart != nil {
		var hr helmv2.HelmRelease
		if err := r.Client.Get(ctx, key, &hr); err != nil {
			return health.Observation{Kind: helmv2.HelmReleaseKind, Namespace: key.Namespace, Name: key.Name, Missing: true}
		}
		return health.ObserveHelmRelease(&hr)
	}
	return r.observeKustomization(ctx, key)
}

func (r *Reconciler) observeKustomization(ctx context.Context, key ctrl.ObjectKey) health.Observation {
	var ks kustomizev1.Kustomization
	if err := r.Client.Get(ctx, key, &ks); err != nil {
		return health.Observation{Kind: kustomizev1.KustomizationKind, Namespace: key.Namespace, Name: key.Name, Missing: true}
	}
	return health.ObserveKustomization(&ks)
}
