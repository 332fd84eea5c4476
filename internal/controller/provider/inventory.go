package provider

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/controller/apply"
)

// inventoryGVK is clusterctl's inventory kind: one Provider object per
// installed provider, which `clusterctl describe`, `clusterctl move` and
// `clusterctl upgrade plan` read.
var inventoryGVK = schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "Provider"}

// clusterctlTypes maps provider types to the inventory's type names.
var clusterctlTypes = map[string]string{
	v1alpha1.CoreProviderType:             "CoreProvider",
	v1alpha1.BootstrapProviderType:        "BootstrapProvider",
	v1alpha1.ControlPlaneProviderType:     "ControlPlaneProvider",
	v1alpha1.InfrastructureProviderType:   "InfrastructureProvider",
	v1alpha1.IPAMProviderType:             "IPAMProvider",
	v1alpha1.RuntimeExtensionProviderType: "RuntimeExtensionProvider",
	v1alpha1.AddonProviderType:            "AddonProvider",
}

// inventoryName is clusterctl's name for the inventory object, the same as
// its provider label value (cluster-api, bootstrap-kubeadm, …).
func inventoryName(obj v1alpha1.Provider) string {
	return clusterctl.ProviderLabelValue(obj.ProviderType(), obj.GetName())
}

// recordInventory keeps the clusterctl inventory object of an installed
// provider in step with its installed version.
func (r *Reconciler) recordInventory(ctx context.Context, obj v1alpha1.Provider) error {
	version := obj.GetStatus().InstalledVersion
	if version == "" {
		return nil
	}
	want := &unstructured.Unstructured{}
	want.SetGroupVersionKind(inventoryGVK)
	want.SetNamespace(obj.GetNamespace())
	want.SetName(inventoryName(obj))
	want.SetLabels(map[string]string{
		clusterctl.LabelProvider:   inventoryName(obj),
		clusterctl.LabelClusterctl: "",
		v1alpha1.ProviderKindLabel: r.Kind.Name,
		v1alpha1.ProviderNameLabel: obj.GetName(),
	})
	want.Object["providerName"] = obj.GetName()
	want.Object["type"] = clusterctlTypes[obj.ProviderType()]
	want.Object["version"] = version

	// The inventory is read as unstructured, which the manager's client
	// does not cache: every read is a request to the API server. A
	// provider reconciles on every status change of its Flux objects, a
	// dozen times or more per upgrade, so what was recorded is remembered
	// and read again only every half resync interval (someone else may
	// have changed it), or when the version moves.
	if r.inventories.fresh(obj.GetUID(), version, r.resyncInterval(obj)/2) {
		return nil
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(inventoryGVK)
	err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(want), existing)
	switch {
	case apimeta.IsNoMatchError(err):
		return fmt.Errorf("the clusterctl inventory CRD (providers.clusterctl.cluster.x-k8s.io) is not installed; install manifests/clusterctl: %w", err)
	case err == nil && apply.Subset(want.Object, existing.Object):
	case err != nil && !apierrors.IsNotFound(err):
		return err
	default:
		if err := r.Client.Apply(ctx, ctrl.ApplyConfigurationFromUnstructured(want), ctrl.FieldOwner(FieldOwner), ctrl.ForceOwnership); err != nil {
			return err
		}
	}
	r.inventories.done(obj.GetUID(), version)
	return nil
}

// inventory reads the provider's clusterctl inventory object; nil when
// there is none (or no inventory CRD).
func (r *Reconciler) inventory(ctx context.Context, obj v1alpha1.Provider) (*unstructured.Unstructured, error) {
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(inventoryGVK)
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: inventoryName(obj)}, inv)
	if apierrors.IsNotFound(err) || isNoMatch(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// inventoryVersion is the version clusterctl's inventory records for the
// provider; "" when there is no inventory object.
func (r *Reconciler) inventoryVersion(ctx context.Context, obj v1alpha1.Provider) (string, error) {
	inv, err := r.inventory(ctx, obj)
	if inv == nil || err != nil {
		return "", err
	}
	v, _, _ := unstructured.NestedString(inv.Object, "version")
	return v, nil
}

// deleteInventory removes the provider's inventory object.
func (r *Reconciler) deleteInventory(ctx context.Context, obj v1alpha1.Provider) error {
	r.inventories.forget(obj.GetUID())
	inv, err := r.inventory(ctx, obj)
	if inv == nil || err != nil {
		return err
	}
	return apply.DeleteExactly(ctx, r.Client, inv)
}

func isNoMatch(err error) bool {
	var noKind *apimeta.NoKindMatchError
	return apimeta.IsNoMatchError(err) || errors.As(err, &noKind)
}
