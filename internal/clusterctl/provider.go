package clusterctl

import (
	"slices"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// Labels clusterctl sets on every object of a provider; Capwright sets the
// same ones so that clusterctl, cluster-api-operator and CAPI itself find
// the objects as they would after `clusterctl init`.
const (
	// LabelProvider identifies the provider; see ProviderLabelValue.
	LabelProvider = "cluster.x-k8s.io/provider"
	// LabelClusterctl marks objects managed by clusterctl; its value is "".
	LabelClusterctl = "clusterctl.cluster.x-k8s.io"
	// LabelCore with value LabelCoreInventory marks clusterctl's
	// inventory objects (its InventoryObject sets it).
	LabelCore          = "clusterctl.cluster.x-k8s.io/core"
	LabelCoreInventory = "inventory"
)

// ProviderTypes are the clusterctl provider types, in clusterctl's order.
func ProviderTypes() []string {
	return []string{
		v1alpha1.CoreProviderType,
		v1alpha1.BootstrapProviderType,
		v1alpha1.ControlPlaneProviderType,
		v1alpha1.InfrastructureProviderType,
		v1alpha1.IPAMProviderType,
		v1alpha1.RuntimeExtensionProviderType,
		v1alpha1.AddonProviderType,
	}
}

// IsProviderType reports whether t is one of the seven clusterctl provider
// types (core, bootstrap, control-plane, infrastructure, ipam,
// runtime-extension, addon).
func IsProviderType(t string) bool {
	return slices.Contains(ProviderTypes(), t)
}

// ComponentsFile is the name of the components file a provider of the given
// type ships, e.g. core-components.yaml or control-plane-components.yaml.
// It is "" for an unknown type.
func ComponentsFile(providerType string) string {
	if !IsProviderType(providerType) {
		return ""
	}
	return providerType + "-components.yaml"
}

// ProviderLabelValue is the value of LabelProvider for a provider, as
// clusterctl's ManifestLabel computes it: "cluster-api" for the core
// provider, "<type>-<name>" otherwise (bootstrap-kubeadm,
// control-plane-kubeadm, infrastructure-aws), and the bare name for an
// unknown type, as clusterctl does. Provider manifests carry the same value,
// so it must match exactly.
func ProviderLabelValue(providerType, name string) string {
	if providerType == v1alpha1.CoreProviderType {
		return "cluster-api"
	}
	if !IsProviderType(providerType) {
		return name
	}
	return providerType + "-" + name
}
