package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/render"
)

// checkAdditionalManifests reads the ConfigMap of spec.additionalManifests
// and packs its objects into the artifact Flux will apply, refusing the
// version (nothing new written) when the ConfigMap is missing or holds
// anything Flux could not or should not apply.
func (r *Reconciler) checkAdditionalManifests(ctx context.Context, obj v1alpha1.Provider, res *PreflightResult) *preflightError {
	ref := obj.GetSpec().AdditionalManifests
	if ref == nil {
		return nil
	}
	refuse := func(format string, args ...any) *preflightError {
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.AdditionalManifestsInvalidReason, Retry: time.Minute,
			Message: fmt.Sprintf(format, args...)}
	}
	if err := render.CheckAdditionalManifests(obj); err != nil {
		return refuse("%v", err)
	}
	if r.Artifacts == nil {
		return refuse("spec.additionalManifests needs the Capwright manager to serve artifacts to Flux, and it runs without --artifact-storage-path; set --artifact-storage-path and --artifact-advertise-url on the manager (the manifests and chart of Capwright do)")
	}
	source := fmt.Sprintf("ConfigMap %s/%s (spec.additionalManifests)", obj.GetNamespace(), ref.Name)
	var cm corev1.ConfigMap
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse("%s does not exist; create it with the objects under data key %q, or drop spec.additionalManifests", source, render.AdditionalManifestsKey)
		}
		return refuse("reading %s: %v", source, err)
	}
	manifests, ok := cm.Data[render.AdditionalManifestsKey]
	if !ok {
		return refuse("%s has no data key %q; put the objects (multi-document YAML) under it", source, render.AdditionalManifestsKey)
	}
	packed, err := render.AdditionalManifests(source, manifests, obj.GetNamespace(), r.scope)
	if err != nil {
		return refuse("%v", err)
	}
	res.AdditionalManifests = packed
	return nil
}

// scope asks the API server (through the manager's REST mapper, which
// refreshes when it misses a kind) whether a kind is namespaced.
func (r *Reconciler) scope(gvk schema.GroupVersionKind) (namespaced, known bool) {
	if r.RESTMapper == nil {
		return false, false
	}
	m, err := r.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, false
	}
	return m.Scope.Name() == apimeta.RESTScopeNameNamespace, true
}

// storeAdditionalArtifact makes sure the packed additional manifests are
// stored and that the ExternalArtifact's status points Flux at them. It
// writes nothing when both already hold this artifact (a manager restart
// with empty storage writes the file again, not the status).
func (r *Reconciler) storeAdditionalArtifact(ctx context.Context, obj v1alpha1.Provider, ea *sourcev1.ExternalArtifact, packed []byte) error {
	key := ctrl.ObjectKeyFromObject(ea)
	current := &sourcev1.ExternalArtifact{}
	if err := r.Client.Get(ctx, key, current); err != nil {
		return fmt.Errorf("reading ExternalArtifact %s: %w", key, err)
	}
	art, err := r.Artifacts.Artifact(sourcev1.ExternalArtifactKind, key.Namespace, key.Name, packed, time.Now())
	if err != nil {
		return err
	}
	if old := current.Status.Artifact; old != nil && old.Digest == art.Digest && old.URL == art.URL {
		art.LastUpdateTime = old.LastUpdateTime
	}
	if !r.Artifacts.Exists(art) {
		if err := r.Artifacts.Store(art, packed); err != nil {
			return fmt.Errorf("storing the additional manifests of %s %s/%s: %w", r.Kind.Name, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	want := current.DeepCopy()
	want.Status.Artifact = &art
	conds := want.Status.Conditions
	apimeta.SetStatusCondition(&conds, metav1.Condition{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: current.Generation,
		Message: fmt.Sprintf("stored revision %s of ConfigMap %s/%s", art.Revision, obj.GetNamespace(), obj.GetSpec().AdditionalManifests.Name),
	})
	want.Status.Conditions = conds
	if equality.Semantic.DeepEqual(current.Status, want.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, want, ctrl.MergeFrom(current), ctrl.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("updating the status of ExternalArtifact %s: %w", key, err)
	}
	return nil
}

// restoreAdditional serves again the additional manifests Flux was last
// given, when the artifact storage lost them (a new manager pod starts
// with an empty volume) and preflight cannot pass to store them (the
// registry is down, say): the artifact the ExternalArtifact points
// kustomize-controller at is packed again from the ConfigMap, if the
// ConfigMap still packs to that very digest. Anything newer waits for
// preflight.
func (r *Reconciler) restoreAdditional(ctx context.Context, obj v1alpha1.Provider) error {
	if obj.GetSpec().AdditionalManifests == nil || r.Artifacts == nil || isChart(obj) {
		return nil
	}
	key := additionalKey(obj)
	var ea sourcev1.ExternalArtifact
	if err := r.Client.Get(ctx, key, &ea); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	served := ea.Status.Artifact
	if served == nil || !render.ControlledBy(&ea, obj.GetUID()) || r.Artifacts.Exists(*served) {
		return nil
	}
	var res PreflightResult
	if perr := r.checkAdditionalManifests(ctx, obj, &res); perr != nil {
		return nil // the ConfigMap no longer packs: preflight says why
	}
	art, err := r.Artifacts.Artifact(sourcev1.ExternalArtifactKind, key.Namespace, key.Name, res.AdditionalManifests, time.Now())
	if err != nil || art.Digest != served.Digest || art.Path != served.Path {
		return err
	}
	return r.Artifacts.Store(art, res.AdditionalManifests)
}

// additionalKey names the ExternalArtifact and Kustomization of
// spec.additionalManifests.
func additionalKey(obj v1alpha1.Provider) ctrl.ObjectKey {
	return ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: render.AdditionalObjectName(obj.ProviderType(), obj.GetName())}
}

// additionalObjects are the Flux objects of spec.additionalManifests,
// existing or not.
func additionalObjects(obj v1alpha1.Provider) []ctrl.Object {
	m := metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: additionalKey(obj).Name}
	return []ctrl.Object{&kustomizev1.Kustomization{ObjectMeta: m}, &sourcev1.ExternalArtifact{ObjectMeta: m}}
}

// componentObjects are the Flux objects named after the provider, existing
// or not: its OCIRepository and its Kustomization or HelmRelease.
func componentObjects(obj v1alpha1.Provider) []ctrl.Object {
	m := metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: objectName(obj)}
	return []ctrl.Object{&kustomizev1.Kustomization{ObjectMeta: m}, &helmv2.HelmRelease{ObjectMeta: m}, &sourcev1.OCIRepository{ObjectMeta: m}}
}

// removeAdditional deletes the Flux objects and the stored artifact of
// additional manifests the provider no longer asks for; Flux prunes what
// the Kustomization applied. It reports whether any object remains.
func (r *Reconciler) removeAdditional(ctx context.Context, obj v1alpha1.Provider) (remaining bool, err error) {
	if remaining, err = r.deleteOwned(ctx, obj, additionalObjects(obj)); err != nil {
		return remaining, err
	}
	if r.Artifacts != nil {
		key := additionalKey(obj)
		if err := r.Artifacts.Remove(sourcev1.ExternalArtifactKind, key.Namespace, key.Name); err != nil {
			return remaining, err
		}
	}
	return remaining, nil
}

// deleteOwned deletes those of objects (named, empty) that exist and that
// the provider controls, and reports whether any of them is still there.
func (r *Reconciler) deleteOwned(ctx context.Context, obj v1alpha1.Provider, objects []ctrl.Object) (remaining bool, err error) {
	for _, o := range objects {
		err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o)
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			continue
		}
		if err != nil {
			return remaining, err
		}
		if !render.ControlledBy(o, obj.GetUID()) {
			continue
		}
		remaining = true
		if o.GetDeletionTimestamp().IsZero() {
			if err := apply.DeleteExactly(ctx, r.Client, o); err != nil {
				return true, fmt.Errorf("deleting %s/%s: %w", o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	return remaining, nil
}

// configMapProviders maps a ConfigMap to the providers of this kind in its
// namespace that name it in spec.additionalManifests.
func (r *Reconciler) configMapProviders(ctx context.Context, cm ctrl.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, ctrl.InNamespace(cm.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.GetItems() {
		if ref := p.GetSpec().AdditionalManifests; ref != nil && ref.Name == cm.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
		}
	}
	return reqs
}

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
			return r.restoreAdditional(ctx, obj)
		}
		return fmt.Errorf("ExternalArtifact %s/%s is controlled by %s %s, not by a provider", namespace, name, owner.Kind, owner.Name)
	}
}
