package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// appliedHashAnnotation records what the controller last applied, so a
// resync with nothing changed writes nothing, and a field it stopped
// setting is still removed by the next apply.
const appliedHashAnnotation = "tenancy.capwright.io/applied-hash"

// writeManagement applies the tenant's namespace, ServiceAccount,
// RoleBinding and quota, and sets ManagementReady. It reports false when
// an object it would write belongs to someone else; nothing further is
// written for the tenant then.
func (r *Reconciler) writeManagement(ctx context.Context, t *tenancyv1alpha1.Tenant, m render.TenantManagementObjects) (bool, error) {
	objects := []render.Object{m.Namespace, m.ServiceAccount, m.RoleBinding}
	if m.ResourceQuota != nil {
		objects = append(objects, m.ResourceQuota)
	}
	for _, o := range objects {
		err := r.applyIfChanged(ctx, o)
		var conflict *render.ConflictError
		switch {
		case errors.As(err, &conflict):
			setFalse(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ObjectConflictReason, conflict.Error())
			return false, nil
		case err != nil:
			setFalse(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ApplyFailedReason, err.Error())
			return false, err
		}
	}
	ns := m.Namespace.Name
	msg := fmt.Sprintf("Namespace %s, ServiceAccount %s/%s and RoleBinding %s/%s (to ClusterRole %s) are in place",
		ns, ns, m.ServiceAccount.Name, ns, m.RoleBinding.Name, tenancyv1alpha1.TenantClusterRole)
	if m.ResourceQuota != nil {
		msg += fmt.Sprintf(", with ResourceQuota %s/%s", ns, m.ResourceQuota.Name)
	}
	setTrue(t, tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ProvisionedReason, msg)
	return true, nil
}

// writeFluxObjects applies the sources, the target namespace's
// ExternalArtifacts (and stores their artifact) and the clusters' Flux
// objects, each cluster's namespace Kustomization before its stack's, and
// the stack's only once the namespace exists. An object that exists and
// is not the tenant's is left alone: the conflict fails that cluster (or
// every cluster of a namespace whose source or ExternalArtifact
// conflicts) on its own status line, and the others go on.
func (r *Reconciler) writeFluxObjects(ctx context.Context, t *tenancyv1alpha1.Tenant, rendered *render.RenderedTenant) (map[types.NamespacedName]string, error) {
	conflicts := map[types.NamespacedName]string{}
	badSource := map[string]string{}
	for _, s := range rendered.Sources {
		err := r.applyIfChanged(ctx, s)
		var conflict *render.ConflictError
		switch {
		case errors.As(err, &conflict):
			badSource[s.Namespace] = conflict.Error()
		case err != nil:
			return nil, err
		}
	}
	for _, a := range rendered.NamespaceArtifacts {
		if _, bad := badSource[a.Namespace]; bad {
			continue
		}
		err := r.applyIfChanged(ctx, a)
		var conflict *render.ConflictError
		switch {
		case errors.As(err, &conflict):
			badSource[a.Namespace] = conflict.Error()
			continue
		case err != nil:
			return nil, err
		}
		if err := r.storeNamespaceArtifact(ctx, t, a, rendered.NamespaceArtifact); err != nil {
			return nil, err
		}
	}
	for _, c := range rendered.Clusters {
		if msg, bad := badSource[c.Cluster.Namespace]; bad {
			conflicts[c.Cluster] = msg
			continue
		}
		if c.Namespace != nil {
			conflict, err := r.applyClusterObject(ctx, c.Namespace)
			if err != nil {
				return nil, err
			}
			if conflict != "" {
				// Not the stack either: it would wait for someone
				// else's namespace Kustomization.
				conflicts[c.Cluster] = conflict
				continue
			}
			wait, err := r.stackWaitsForNamespace(ctx, c)
			if err != nil {
				return nil, err
			}
			if wait {
				continue
			}
		}
		conflict, err := r.applyClusterObject(ctx, c.Object())
		if err != nil {
			return nil, err
		}
		if conflict != "" {
			conflicts[c.Cluster] = conflict
		}
	}
	return conflicts, nil
}

// applyClusterObject applies one of a cluster's Flux objects; it returns
// the conflict when the object exists and is someone else's.
func (r *Reconciler) applyClusterObject(ctx context.Context, o render.Object) (string, error) {
	err := r.applyIfChanged(ctx, o)
	var conflict *render.ConflictError
	if errors.As(err, &conflict) {
		return conflict.Error(), nil
	}
	return "", err
}

// stackWaitsForNamespace tells whether a cluster's stack Kustomization is
// not written yet and must wait for the Kustomization creating its target
// namespace to be Ready (health.TenantNamespaceCreated): its first apply
// would fail on a missing namespace. A stack that exists is always
// written. The wait is not a dependsOn, with which kustomize-controller
// would run the namespace Kustomization again, against the workload
// cluster, on every new revision of the stack; the namespace
// Kustomization's status changes wake the controller instead.
func (r *Reconciler) stackWaitsForNamespace(ctx context.Context, c render.TenantClusterObjects) (bool, error) {
	var stack kustomizev1.Kustomization
	err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(c.Kustomization), &stack)
	if err == nil || !apierrors.IsNotFound(err) {
		return false, ctrl.IgnoreNotFound(err)
	}
	return !health.TenantNamespaceCreated(r.observeKustomization(ctx, ctrl.ObjectKeyFromObject(c.Namespace))), nil
}

// applyIfChanged applies desired with server-side apply unless the object
// already holds exactly what was last applied and nobody changed those
// fields since. An existing object that render.CheckTenantObject does not
// recognise as the tenant's is never written: the error is a
// *render.ConflictError.
func (r *Reconciler) applyIfChanged(ctx context.Context, desired render.Object) error {
	return apply.IfChanged(ctx, r.Reader, r.Client, desired, appliedHashAnnotation, FieldOwner, func(existing *unstructured.Unstructured) error {
		return render.CheckTenantObject(existing.GetKind(), existing, desired)
	})
}

// isNoMatch tells whether err says a kind is not served.
func isNoMatch(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no matches for kind") || isNotServed(err))
}
