package tenant

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/render"
)

// tenantObjects lists what carries the tenant's label, of the kinds
// Capwright writes for tenants: the management objects in the tenant's
// namespace (read uncached: they are not watched) and the Flux objects in
// every namespace (from the cache). Kinds not served are skipped.
func (r *Reconciler) tenantObjects(ctx context.Context, t *tenancyv1alpha1.Tenant, fluxOnly bool) ([]render.ExistingObject, error) {
	selector := ctrl.MatchingLabels{tenancyv1alpha1.TenantLabel: t.Name}
	var out []render.ExistingObject
	if !fluxOnly {
		ns := ctrl.InNamespace(t.ManagementNamespace())
		var sas corev1.ServiceAccountList
		if err := r.Reader.List(ctx, &sas, ns, selector); err != nil {
			return nil, fmt.Errorf("listing the tenant's ServiceAccounts: %w", err)
		}
		for i := range sas.Items {
			out = append(out, render.ExistingObject{Kind: "ServiceAccount", Object: &sas.Items[i]})
		}
		var rbs rbacv1.RoleBindingList
		if err := r.Reader.List(ctx, &rbs, ns, selector); err != nil {
			return nil, fmt.Errorf("listing the tenant's RoleBindings: %w", err)
		}
		for i := range rbs.Items {
			out = append(out, render.ExistingObject{Kind: "RoleBinding", Object: &rbs.Items[i]})
		}
		var quotas corev1.ResourceQuotaList
		if err := r.Reader.List(ctx, &quotas, ns, selector); err != nil {
			return nil, fmt.Errorf("listing the tenant's ResourceQuotas: %w", err)
		}
		for i := range quotas.Items {
			out = append(out, render.ExistingObject{Kind: "ResourceQuota", Object: &quotas.Items[i]})
		}
	}
	// Appliers first: deleting them makes Flux uninstall, which does not
	// need the source.
	var hrs helmv2.HelmReleaseList
	if err := r.Client.List(ctx, &hrs, selector); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's HelmReleases: %w", err)
	}
	for i := range hrs.Items {
		out = append(out, render.ExistingObject{Kind: helmv2.HelmReleaseKind, Object: &hrs.Items[i]})
	}
	var kss kustomizev1.KustomizationList
	if err := r.Client.List(ctx, &kss, selector); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's Kustomizations: %w", err)
	}
	for i := range kss.Items {
		out = append(out, render.ExistingObject{Kind: kustomizev1.KustomizationKind, Object: &kss.Items[i]})
	}
	var repos sourcev1.OCIRepositoryList
	if err := r.Client.List(ctx, &repos, selector); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's OCIRepositories: %w", err)
	}
	for i := range repos.Items {
		out = append(out, render.ExistingObject{Kind: sourcev1.OCIRepositoryKind, Object: &repos.Items[i]})
	}
	var artifacts sourcev1.ExternalArtifactList
	if err := r.Client.List(ctx, &artifacts, selector); ignoreNoMatch(err) != nil {
		return nil, fmt.Errorf("listing the tenant's ExternalArtifacts: %w", err)
	}
	for i := range artifacts.Items {
		out = append(out, render.ExistingObject{Kind: sourcev1.ExternalArtifactKind, Object: &artifacts.Items[i]})
	}
	return out, nil
}

// deleteStale deletes the tenant's objects that rendering no longer holds
// (render.StaleTenantObjects): Flux uninstalls the stack from clusters
// that left the selection as their HelmRelease or Kustomization goes
// (and leaves the target namespace: its Kustomization orphans it). A
// deleted ExternalArtifact's stored artifact goes with it.
func (r *Reconciler) deleteStale(ctx context.Context, t *tenancyv1alpha1.Tenant, rendered *render.RenderedTenant, sel render.ClusterSelection) error {
	existing, err := r.tenantObjects(ctx, t, false)
	if err != nil {
		return err
	}
	for _, e := range render.StaleTenantObjects(t, rendered, sel, existing) {
		if err := r.deleteObject(ctx, e); err != nil {
			return err
		}
		if err := r.removeArtifact(e); err != nil {
			return err
		}
		r.event(t, "Normal", "Deleted", fmt.Sprintf("deleted %s %s, which Tenant %s no longer needs", e.Kind, apply.ObjectRef(e.Object), t.Name))
	}
	return nil
}

// deleteObject deletes exactly the object listed (by UID), so an object
// recreated meanwhile under the same name is not touched.
func (r *Reconciler) deleteObject(ctx context.Context, e render.ExistingObject) error {
	obj, ok := e.Object.(ctrl.Object)
	if !ok {
		return fmt.Errorf("cannot delete %s %s", e.Kind, apply.ObjectRef(e.Object))
	}
	err := apply.DeleteExactly(ctx, r.Client, obj)
	if err != nil {
		return fmt.Errorf("deleting %s %s: %w", e.Kind, apply.ObjectRef(e.Object), err)
	}
	return nil
}

func ignoreNoMatch(err error) error {
	if apimeta.IsNoMatchError(err) || isNoMatch(err) {
		return nil
	}
	return err
}
