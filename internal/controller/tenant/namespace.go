package tenant

import (
	"context"
	"fmt"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
)

// A kustomize stack's target namespace reaches each workload cluster
// through Flux (render/tenant_createnamespace.go): the sync stores its
// artifact and announces it in the status of the tenant's
// ExternalArtifacts (plan.Artifact); any replica restores it when asked
// (RestoreArtifacts); it goes with its ExternalArtifact.

// removeArtifact deletes the stored artifact of an ExternalArtifact the
// controller deleted.
func (r *Reconciler) removeArtifact(kind string, o metav1.Object) error {
	if r.Artifacts == nil || kind != sourcev1.ExternalArtifactKind {
		return nil
	}
	return r.Artifacts.Remove(sourcev1.ExternalArtifactKind, o.GetNamespace(), o.GetName())
}

// RestoreArtifacts wraps the artifact server's Storage.Restore (next, the
// providers'; may be nil): asked for an artifact of an ExternalArtifact a
// Tenant controls, which this replica does not hold (the leader stored
// it, or a restart emptied the storage), it packs the tenant's target
// namespace again and stores it if that is still exactly what the
// ExternalArtifact points at. Anything newer waits for the leader's
// reconcile. Other ExternalArtifacts go to next.
func (r *Reconciler) RestoreArtifacts(next func(ctx context.Context, kind, namespace, name string) error) func(ctx context.Context, kind, namespace, name string) error {
	return func(ctx context.Context, kind, namespace, name string) error {
		var ea sourcev1.ExternalArtifact
		if kind == strings.ToLower(sourcev1.ExternalArtifactKind) && r.Artifacts != nil {
			if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, &ea); err != nil {
				return err
			}
			if owner := metav1.GetControllerOf(&ea); owner != nil && owner.APIVersion == tenancyv1alpha1.GroupVersion.String() && owner.Kind == tenancyv1alpha1.TenantKind {
				return r.restoreNamespaceArtifact(ctx, owner.Name, &ea)
			}
		}
		if next == nil {
			return fmt.Errorf("no artifacts of %s %s/%s are stored", kind, namespace, name)
		}
		return next(ctx, kind, namespace, name)
	}
}

func (r *Reconciler) restoreNamespaceArtifact(ctx context.Context, tenant string, ea *sourcev1.ExternalArtifact) error {
	served := ea.Status.Artifact
	if served == nil {
		return fmt.Errorf("ExternalArtifact %s/%s has no artifact yet", ea.Namespace, ea.Name)
	}
	var t tenancyv1alpha1.Tenant
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Name: tenant}, &t); err != nil {
		return err
	}
	if !render.ControlledBy(ea, t.UID) {
		return fmt.Errorf("ExternalArtifact %s/%s is not controlled by Tenant %s (uid %s)", ea.Namespace, ea.Name, t.Name, t.UID)
	}
	data, err := render.TenantNamespaceArtifact(&t)
	if err != nil {
		return err
	}
	if data == nil {
		return fmt.Errorf("no target namespace of Tenant %s to restore: its stack is a chart", t.Name)
	}
	art, err := r.Artifacts.Artifact(sourcev1.ExternalArtifactKind, ea.Namespace, ea.Name, data, time.Now())
	if err != nil {
		return err
	}
	if art.Digest != served.Digest || art.Path != served.Path {
		return fmt.Errorf("ExternalArtifact %s/%s points at %s, and Tenant %s now packs %s", ea.Namespace, ea.Name, served.Digest, t.Name, art.Digest)
	}
	return r.Artifacts.Store(art, data)
}
