package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
)

// Serving again what the artifact storage lost: a new manager pod starts
// with an empty volume, or another replica stored an artifact. The
// storage asks RestoreAdditional for the ExternalArtifact's file — when
// kustomize-controller fetches it, or when a reconcile that writes nothing
// finds it missing (restoreServed) — and the provider that controls it
// packs it again, only if that gives the very digest it serves.

// RestoreAdditional is the artifact server's Storage.Restore: asked for
// an artifact of an ExternalArtifact this replica does not hold (another
// replica stored it, or a restart emptied the storage), it packs it again
// from the ConfigMap of the provider that controls it, if that still packs
// to the digest the ExternalArtifact points at (restoreAdditional).
// reconcilers are the provider kinds' reconcilers.
func RestoreAdditional(reconcilers ...*Reconciler) func(ctx context.Context, kind, namespace, name string) error {
	return func(ctx context.Context, kind, namespace, name string) error {
		if kind != strings.ToLower(sourcev1.ExternalArtifactKind) || len(reconcilers) == 0 {
			return fmt.Errorf("no artifacts of %s are stored", kind)
		}
		var ea sourcev1.ExternalArtifact
		if err := reconcilers[0].Client.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, &ea); err != nil {
			return err
		}
		owner := metav1.GetControllerOf(&ea)
		if owner == nil {
			return fmt.Errorf("ExternalArtifact %s/%s has no controller", namespace, name)
		}
		for _, r := range reconcilers {
			if r.Kind.Name != owner.Kind || owner.APIVersion != v1alpha1.GroupVersion.String() {
				continue
			}
			obj := r.Kind.NewObject()
			if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: owner.Name}, obj); err != nil {
				return err
			}
			return r.restore(ctx, obj, name)
		}
		return fmt.Errorf("ExternalArtifact %s/%s is controlled by %s %s, not by a provider", namespace, name, owner.Kind, owner.Name)
	}
}

// restore serves again what the provider's ExternalArtifact name points
// kustomize-controller at, when the artifact storage lost it (a new
// manager pod starts with an empty volume, or another replica stored it)
// and the checks cannot pass to store it (the registry is down, say): the
// additional manifests packed again from their ConfigMap, or the release
// packed again from the files checked (in memory, else fetched again),
// only if that gives the very digest the ExternalArtifact serves.
// Anything newer waits for the checks.
func (r *Reconciler) restore(ctx context.Context, obj v1alpha1.Provider, name string) error {
	if r.Artifacts == nil || render.IsChart(obj) {
		return nil
	}
	key := ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: name}
	var pack func(served string) []byte
	switch name {
	case additionalKey(obj).Name:
		if obj.GetSpec().AdditionalManifests == nil || render.CheckAdditionalManifests(obj) != nil {
			return nil // the plan says why
		}
		pack = func(string) []byte {
			packed, problem := r.packAdditional(ctx, obj)
			if problem != "" {
				return nil // the ConfigMap no longer packs: the plan says why
			}
			return packed
		}
	case objectName(obj):
		pack = func(served string) []byte { return r.Source.PackedRelease(ctx, obj, served) }
	case render.RollbackSourceName(obj.ProviderType(), obj.GetName()):
		// The last good release a rollback serves (providerplan.Upgrade).
		pack = func(served string) []byte {
			return r.Source.PackedRelease(ctx, providerplan.UpgradeOf(obj).Target(obj), served)
		}
	default:
		return nil
	}
	var ea sourcev1.ExternalArtifact
	if err := r.Client.Get(ctx, key, &ea); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	served := ea.Status.Artifact
	if served == nil || !render.ControlledBy(&ea, obj.GetUID()) || r.Artifacts.Exists(*served) {
		return nil
	}
	packed := pack(served.Digest)
	if packed == nil {
		return nil
	}
	art, err := r.Artifacts.Artifact(sourcev1.ExternalArtifactKind, key.Namespace, key.Name, packed, time.Now())
	if err != nil || art.Digest != served.Digest || art.Path != served.Path {
		return err
	}
	return r.Artifacts.Store(art, packed)
}
