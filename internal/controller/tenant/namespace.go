package tenant

import (
	"context"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// A kustomize stack's target namespace reaches each workload cluster
// through Flux (render/tenant_createnamespace.go): the controller stores
// its artifact, announces it in the status of the tenant's
// ExternalArtifacts, and asks Flux to go on where it would wait.

// storeNamespaceArtifact makes sure the artifact of the target namespace
// is stored and that the ExternalArtifact ea (just applied) points Flux
// at it. It writes nothing when both already hold it: a resync stats a
// file and compares a status.
func (r *Reconciler) storeNamespaceArtifact(ctx context.Context, t *tenancyv1alpha1.Tenant, ea *sourcev1.ExternalArtifact, data []byte) error {
	key := ctrl.ObjectKeyFromObject(ea)
	current := &sourcev1.ExternalArtifact{}
	if err := r.Client.Get(ctx, key, current); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading ExternalArtifact %s: %w", key, err)
		}
		// Created a moment ago: the cache has not seen it yet.
		if err := r.Reader.Get(ctx, key, current); err != nil {
			return fmt.Errorf("reading ExternalArtifact %s: %w", key, err)
		}
	}
	art, err := r.Artifacts.Artifact(sourcev1.ExternalArtifactKind, key.Namespace, key.Name, data, time.Now())
	if err != nil {
		return err
	}
	if old := current.Status.Artifact; old != nil && old.Digest == art.Digest && old.URL == art.URL {
		art.LastUpdateTime = old.LastUpdateTime
	}
	if !r.Artifacts.Exists(art) {
		if err := r.Artifacts.Store(art, data); err != nil {
			return fmt.Errorf("storing the target namespace of Tenant %s for ExternalArtifact %s: %w", t.Name, key, err)
		}
	}
	want := current.DeepCopy()
	want.Status.Artifact = &art
	apimeta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: current.Generation,
		Message: fmt.Sprintf("stored revision %s: the Namespace %s of Tenant %s's stack", art.Revision, t.TargetNamespace(), t.Name),
	})
	if equality.Semantic.DeepEqual(current.Status, want.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, want, ctrl.MergeFrom(current), ctrl.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("updating the status of ExternalArtifact %s: %w", key, err)
	}
	return nil
}

// nudgeKustomizations asks kustomize-controller to reconcile a cluster's
// stack or namespace Kustomization at once where it would otherwise wait
// (health.TenantClusterNudge): once per state, so a resync writes
// nothing. Not for clusters whose objects are someone else's, nor while
// the tenant is suspended (Flux ignores suspended objects).
func (r *Reconciler) nudgeKustomizations(ctx context.Context, t *tenancyv1alpha1.Tenant, clusters []health.TenantClusterInput) error {
	if t.Spec.Suspend {
		return nil
	}
	for _, c := range clusters {
		if c.Conflict != "" || c.PendingReason != "" {
			continue
		}
		n, ok := health.TenantClusterNudge(c)
		if !ok {
			continue
		}
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}}
		if err := apply.RequestReconcile(ctx, r.Client, ks, n.Token, FieldOwner); err != nil {
			return err
		}
	}
	return nil
}

// removeArtifact deletes the stored artifact of an ExternalArtifact the
// controller deleted.
func (r *Reconciler) removeArtifact(e render.ExistingObject) error {
	if r.Artifacts == nil || e.Kind != sourcev1.ExternalArtifactKind {
		return nil
	}
	return r.Artifacts.Remove(sourcev1.ExternalArtifactKind, e.Object.GetNamespace(), e.Object.GetName())
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
