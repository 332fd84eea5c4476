package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/fluxobjects"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// finalize deletes the provider: it waits while objects of the provider's
// own kinds exist (and, for the core provider, while other providers
// exist), then removes the Flux objects — Flux prunes what it applied, CRDs
// stay — and finally the finalizer.
func (r *Reconciler) finalize(ctx context.Context, obj v1alpha1.Provider) (shell.Outcome, error) {
	r.CorePreflights.forget(obj.GetUID())
	installed, err := r.hasFluxObjects(ctx, obj)
	if err != nil {
		return shell.Outcome{}, err
	}
	// A provider that never got Flux objects (refused by preflight, e.g. a
	// duplicate) installed nothing that others could depend on.
	if !installed {
		return r.removeFinalizer(ctx, obj)
	}
	if blockers, err := r.deletionBlockers(ctx, obj); err != nil {
		return shell.Outcome{}, err
	} else if len(blockers) > 0 {
		conditions.True(obj, v1alpha1.DeletingCondition, v1alpha1.DeletionBlockedReason,
			fmt.Sprintf("waiting until these are deleted: %s", strings.Join(blockers, "; ")))
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: 10 * time.Second}}, nil
	}

	name := objectName(obj)
	// kustomize-controller's finalizer prunes what the Kustomization applied
	// from its inventory; it does not need the source any more.
	remaining, err := r.deleteOwned(ctx, obj, r.owner(obj).Components())
	if err != nil {
		return shell.Outcome{}, err
	}
	if err := r.removeStored(name, obj); err != nil {
		return shell.Outcome{}, err
	}
	if err := r.Source.Copies.Prune(ctx, obj, 0); err != nil {
		return shell.Outcome{}, err
	}
	extra, err := r.removeAdditional(ctx, obj)
	if err != nil {
		return shell.Outcome{}, err
	}
	if remaining || extra {
		conditions.True(obj, v1alpha1.DeletingCondition, v1alpha1.DeletingReason,
			fmt.Sprintf("Flux is pruning what it applied for %s/%s (CustomResourceDefinitions are kept)", obj.GetNamespace(), name))
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: 2 * time.Second}}, nil
	}
	return r.removeFinalizer(ctx, obj)
}

// removeFinalizer drops the inventory object and the installer's
// ClusterRoleBinding (Flux pruned with it already, or never had objects to
// prune); then the shell removes the finalizer.
func (r *Reconciler) removeFinalizer(ctx context.Context, obj v1alpha1.Provider) (shell.Outcome, error) {
	if err := r.deleteInventory(ctx, obj); err != nil {
		return shell.Outcome{}, err
	}
	if err := r.deleteInstallerBinding(ctx, obj); err != nil {
		return shell.Outcome{}, err
	}
	return shell.Outcome{Done: true}, nil
}

// hasFluxObjects tells whether any Flux object of the provider exists:
// one with its name under its controller reference (an object of the same
// name that is not the provider's installed nothing for it).
func (r *Reconciler) hasFluxObjects(ctx context.Context, obj v1alpha1.Provider) (bool, error) {
	for _, o := range append(r.owner(obj).Components(), r.owner(obj).Additional()...) {
		err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o)
		if err == nil {
			if render.ControlledBy(o, obj.GetUID()) {
				return true, nil
			}
			continue
		}
		if !apierrors.IsNotFound(err) && !fluxobjects.NotServed(err) {
			return false, err
		}
	}
	return false, nil
}

// deletionBlockers names what must go before the provider can: objects of
// the CRD kinds the provider installed, and for the core provider the other
// providers.
func (r *Reconciler) deletionBlockers(ctx context.Context, obj v1alpha1.Provider) ([]string, error) {
	var blockers []string
	if obj.ProviderType() == v1alpha1.CoreProviderType {
		for _, k := range r.Kinds {
			if k.Name == r.Kind.Name {
				continue
			}
			list := k.NewList()
			if err := r.Client.List(ctx, list); err != nil {
				return nil, err
			}
			for _, p := range list.GetItems() {
				blockers = append(blockers, fmt.Sprintf("%s %s/%s", k.Name, p.GetNamespace(), p.GetName()))
			}
		}
	}
	kinds, err := r.installedKinds(ctx, obj)
	if err != nil {
		return nil, err
	}
	// Objects the provider's additional manifests created are its own:
	// Flux prunes them with it, so they cannot hold it up.
	own, err := r.additionalInventory(ctx, obj)
	if err != nil {
		return nil, err
	}
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Reader.List(ctx, list, ctrl.Limit(3)); err != nil {
			if apierrors.IsNotFound(err) || fluxobjects.NotServed(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			if own[fluxobjects.ID(item.Namespace, item.Name, gvk.Group, gvk.Kind)] {
				continue
			}
			blockers = append(blockers, fmt.Sprintf("%s %s/%s", gvk.Kind, item.Namespace, item.Name))
		}
	}
	sort.Strings(blockers)
	return blockers, nil
}

// clusterAPIGroups are the API groups of the Cluster API contract, whose
// objects hold a provider's deletion up; the manager's RBAC lets it list
// these and no other groups (see setup.go). A provider's CRDs in other
// groups (helpers, or another project's CRDs it ships) do not block it.
var clusterAPIGroups = map[string]bool{
	"cluster.x-k8s.io": true, "addons.cluster.x-k8s.io": true, "bootstrap.cluster.x-k8s.io": true,
	"controlplane.cluster.x-k8s.io": true, "infrastructure.cluster.x-k8s.io": true,
	"ipam.cluster.x-k8s.io": true, "runtime.cluster.x-k8s.io": true,
}

// installedKinds lists the Cluster API kinds of the CRDs Flux applied for
// the provider, from the inventory of its Kustomization, or of its
// HelmRelease for a chart (entries <ns>_<name>_<group>_<kind>; helm-controller
// records the CRDs of the chart's crds/ directory there too).
func (r *Reconciler) installedKinds(ctx context.Context, obj v1alpha1.Provider) ([]schema.GroupVersionKind, error) {
	entries, err := r.appliedInventory(ctx, obj)
	if err != nil {
		return nil, err
	}
	var kinds []schema.GroupVersionKind
	for _, e := range entries {
		applied, err := e.Object()
		if err != nil || applied.Group != apiextensionsv1.GroupName || applied.Kind != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := r.Reader.Get(ctx, ctrl.ObjectKey{Name: applied.Name}, &crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if !clusterAPIGroups[crd.Spec.Group] {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				kinds = append(kinds, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
			}
		}
	}
	return kinds, nil
}

// appliedInventory is what Flux applied for the provider: its
// Kustomization's inventory, or its HelmRelease's for a chart.
func (r *Reconciler) appliedInventory(ctx context.Context, obj v1alpha1.Provider) ([]fluxobjects.Entry, error) {
	var applier ctrl.Object = &kustomizev1.Kustomization{}
	if render.IsChart(obj) {
		applier = &helmv2.HelmRelease{}
	}
	return r.inventoryOf(ctx, obj, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}, applier)
}

// additionalInventory is the set of objects the Kustomization of the
// provider's additional manifests applied, by inventory ID.
func (r *Reconciler) additionalInventory(ctx context.Context, obj v1alpha1.Provider) (map[string]bool, error) {
	entries, err := r.inventoryOf(ctx, obj, additionalKey(obj), &kustomizev1.Kustomization{})
	if err != nil || entries == nil {
		return nil, err
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		ids[e.ID] = true
	}
	return ids, nil
}

// inventoryOf reads applier (a Kustomization or HelmRelease) at key and
// returns its inventory; none when it does not exist or is not the
// provider's (an object of the same name that is not the provider's
// applied nothing for it).
func (r *Reconciler) inventoryOf(ctx context.Context, obj v1alpha1.Provider, key ctrl.ObjectKey, applier ctrl.Object) ([]fluxobjects.Entry, error) {
	if err := r.Client.Get(ctx, key, applier); err != nil {
		return nil, ctrl.IgnoreNotFound(err)
	}
	if !render.ControlledBy(applier, obj.GetUID()) {
		return nil, nil
	}
	return fluxobjects.Inventory(applier), nil
}

// removeAdditional deletes the Flux objects and the stored artifact of
// additional manifests the provider no longer asks for; Flux prunes what
// the Kustomization applied. It reports whether any object remains.
func (r *Reconciler) removeAdditional(ctx context.Context, obj v1alpha1.Provider) (remaining bool, err error) {
	if remaining, err = r.deleteOwned(ctx, obj, r.owner(obj).Additional()); err != nil {
		return remaining, err
	}
	return remaining, r.removeStored(additionalKey(obj).Name, obj)
}

// deleteOwned deletes those of objects (named, empty) that exist and that
// the provider controls, and reports whether any of them is still there.
func (r *Reconciler) deleteOwned(ctx context.Context, obj v1alpha1.Provider, objects []plan.Object) (remaining bool, err error) {
	for _, o := range objects {
		err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o)
		if apierrors.IsNotFound(err) || fluxobjects.NotServed(err) {
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

// deleteInstallerBinding deletes the provider's ClusterRoleBinding once
// Flux no longer needs it (its objects are gone). The ServiceAccount goes
// with the provider through its owner reference.
func (r *Reconciler) deleteInstallerBinding(ctx context.Context, obj v1alpha1.Provider) error {
	r.installers.forget(obj.GetUID())
	crb := &rbacv1.ClusterRoleBinding{}
	err := r.Reader.Get(ctx, ctrl.ObjectKey{Name: render.InstallerBindingName(obj)}, crb)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", render.InstallerBindingName(obj), err)
	case !isInstallerBindingOf(crb, r.owner(obj)):
		return nil
	}
	if err := apply.DeleteExactly(ctx, r.Client, crb); err != nil {
		return fmt.Errorf("deleting ClusterRoleBinding %s: %w", crb.Name, err)
	}
	return nil
}

// deleteInventory removes the provider's clusterctl inventory object.
func (r *Reconciler) deleteInventory(ctx context.Context, obj v1alpha1.Provider) error {
	r.inventories.forget(obj.GetUID())
	inv, err := r.inventory(ctx, obj)
	if inv == nil || err != nil {
		return err
	}
	return apply.DeleteExactly(ctx, r.Client, inv)
}

// removeStored removes the stored artifact of the provider's
// ExternalArtifact name, if any.
func (r *Reconciler) removeStored(name string, obj v1alpha1.Provider) error {
	if r.Artifacts == nil {
		return nil
	}
	return r.Artifacts.Remove(sourcev1.ExternalArtifactKind, obj.GetNamespace(), name)
}
