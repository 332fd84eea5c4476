package tenant

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// finalize deletes the tenant's Flux objects — Flux uninstalls the stack
// from every workload cluster as their HelmReleases and Kustomizations go,
// and leaves the target namespace a namespace Kustomization created —
// and waits until they are gone before releasing the Tenant. The
// ServiceAccount, RoleBinding and quota go with the Tenant through their
// owner references; the Namespace stays, since it holds the tenant's
// Cluster API clusters. Objects the controller did not create for this
// Tenant (render.CheckTenantObject) are never touched.
func (r *Reconciler) finalize(ctx context.Context, t *tenancyv1alpha1.Tenant) (shell.Outcome, error) {
	existing, err := r.tenantObjects(ctx, t, true)
	if err != nil {
		return shell.Outcome{}, err
	}
	var appliers, sources []render.ExistingObject
	// Any owned object rendered for the tenant carries the label and
	// owner reference its objects must have.
	owner := render.TenantManagement(t).ServiceAccount
	for _, e := range existing {
		if render.CheckTenantObject(e.Kind, e.Object, owner) != nil {
			continue
		}
		if e.Kind == helmv2.HelmReleaseKind || e.Kind == kustomizev1.KustomizationKind {
			appliers = append(appliers, e)
		} else {
			sources = append(sources, e)
		}
	}
	// Sources (OCIRepositories and the target namespace's
	// ExternalArtifacts) go once the appliers are gone: a HelmRelease being
	// uninstalled does not need its chart, but deleting the source first
	// would make the appliers report failures meanwhile.
	pending := appliers
	if len(appliers) == 0 {
		pending = sources
	}
	var names []string
	for _, e := range pending {
		if e.Object.GetDeletionTimestamp() == nil {
			if err := r.deleteObject(ctx, e); err != nil {
				return shell.Outcome{}, err
			}
			if err := r.removeArtifact(e.Kind, e.Object); err != nil {
				return shell.Outcome{}, err
			}
		}
		name := e.Kind + " " + plan.ObjectRef(e.Object)
		if l := e.Object.GetLabels(); l[tenancyv1alpha1.ClusterNameLabel] != "" {
			name += " (cluster " + l[tenancyv1alpha1.ClusterNamespaceLabel] + "/" + l[tenancyv1alpha1.ClusterNameLabel] + ")"
		}
		names = append(names, name)
	}
	if len(existing) > 0 && len(pending) > 0 {
		msg := fmt.Sprintf("waiting for Flux to uninstall the stack and delete %s; the Namespace %s stays", strings.Join(names, ", "), t.ManagementNamespace())
		if len(appliers) > 0 {
			msg += "; a cluster that cannot be reached holds its uninstall until it can be"
		}
		conditions.True(t, tenancyv1alpha1.DeletingCondition, tenancyv1alpha1.DeletingReason, msg)
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: 5 * time.Second}}, nil
	}
	return shell.Outcome{Done: true}, nil
}
