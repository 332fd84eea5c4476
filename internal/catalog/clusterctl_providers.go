package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/providerrelease"
)

// ClusterctlVersion is the Cluster API release whose clusterctl provider
// list ClusterctlProviders copies (cmd/clusterctl/client/config/providers_client.go
// of the sigs.k8s.io/cluster-api module); a unit test compares the two.
const ClusterctlVersion = "v1.14.2"

// ClusterctlProvider is one provider of clusterctl's built-in list: what
// `clusterctl init --infrastructure aws` installs from.
type ClusterctlProvider struct {
	// Type is the clusterctl provider type as Capwright names it (core,
	// infrastructure, control-plane, …).
	Type string
	// Name is the provider name (cluster-api, aws, kubeadm, …).
	Name string
	// URL is the release URL in clusterctl's form, with the version
	// "latest": https://github.com/{owner}/{repo}/releases/latest/{file}.
	// The version to install replaces "latest"; it is never resolved.
	URL string
}

// clusterctlProviders is clusterctl's list, in clusterctl's order.
var clusterctlProviders = []ClusterctlProvider{
	{v1alpha1.CoreProviderType, "cluster-api", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "linode-linode", "https://github.com/linode/cluster-api-provider-linode/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "aws", "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "azure", "https://github.com/kubernetes-sigs/cluster-api-provider-azure/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "docker", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/infrastructure-components-development.yaml"},
	{v1alpha1.InfrastructureProviderType, "cloudscale-ch-cloudscale", "https://github.com/cloudscale-ch/cluster-api-provider-cloudscale/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "cloudstack", "https://github.com/kubernetes-sigs/cluster-api-provider-cloudstack/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "digitalocean", "https://github.com/kubernetes-sigs/cluster-api-provider-digitalocean/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "gcp", "https://github.com/kubernetes-sigs/cluster-api-provider-gcp/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "tinkerbell-tinkerbell", "https://github.com/tinkerbell/cluster-api-provider-tinkerbell/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "metal3", "https://github.com/metal3-io/cluster-api-provider-metal3/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "nested", "https://github.com/kubernetes-sigs/cluster-api-provider-nested/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "oci", "https://github.com/oracle/cluster-api-provider-oci/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "openstack", "https://github.com/kubernetes-sigs/cluster-api-provider-openstack/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "sidero", "https://github.com/siderolabs/sidero/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "vcd", "https://github.com/vmware/cluster-api-provider-cloud-director/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "vsphere", "https://github.com/kubernetes-sigs/cluster-api-provider-vsphere/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "maas", "https://github.com/spectrocloud/cluster-api-provider-maas/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "coxedge", "https://github.com/coxedge/cluster-api-provider-coxedge/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "byoh", "https://github.com/vmware-tanzu/cluster-api-provider-bringyourownhost/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "harvester-harvester", "https://github.com/rancher-sandbox/cluster-api-provider-harvester/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "hetzner", "https://github.com/syself/cluster-api-provider-hetzner/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "hivelocity-hivelocity", "https://github.com/hivelocity/cluster-api-provider-hivelocity/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "huawei", "https://github.com/HuaweiCloudDeveloper/cluster-api-provider-huawei/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "outscale", "https://github.com/outscale/cluster-api-provider-outscale/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "ibmcloud", "https://github.com/kubernetes-sigs/cluster-api-provider-ibmcloud/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "nutanix", "https://github.com/nutanix-cloud-native/cluster-api-provider-nutanix/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "kubekey", "https://github.com/kubesphere/kubekey/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "kubevirt", "https://github.com/kubernetes-sigs/cluster-api-provider-kubevirt/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "vcluster", "https://github.com/loft-sh/cluster-api-provider-vcluster/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "virtink", "https://github.com/smartxworks/cluster-api-provider-virtink/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "proxmox", "https://github.com/ionos-cloud/cluster-api-provider-proxmox/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "k0sproject-k0smotron", "https://github.com/k0sproject/k0smotron/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "ionoscloud-ionoscloud", "https://github.com/ionos-cloud/cluster-api-provider-ionoscloud/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "vultr-vultr", "https://github.com/vultr/cluster-api-provider-vultr/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "opennebula", "https://github.com/OpenNebula/cluster-api-provider-opennebula/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "scaleway", "https://github.com/scaleway/cluster-api-provider-scaleway/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "metal-stack", "https://github.com/metal-stack/cluster-api-provider-metal-stack/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "oxide", "https://github.com/oxidecomputer/cluster-api-provider-oxide/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.InfrastructureProviderType, "kubeswift-io", "https://github.com/kubeswift-io/cluster-api-provider-kubeswift/releases/latest/infrastructure-components.yaml"},
	{v1alpha1.BootstrapProviderType, "kubeadm", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "kubekey-k3s", "https://github.com/kubesphere/kubekey/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "talos", "https://github.com/siderolabs/cluster-api-bootstrap-provider-talos/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "microk8s", "https://github.com/canonical/cluster-api-bootstrap-provider-microk8s/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "rke2", "https://github.com/rancher/cluster-api-provider-rke2/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "k0sproject-k0smotron", "https://github.com/k0sproject/k0smotron/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.BootstrapProviderType, "canonical-kubernetes", "https://github.com/canonical/cluster-api-k8s/releases/latest/bootstrap-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "kubeadm", "https://github.com/kubernetes-sigs/cluster-api/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "kubekey-k3s", "https://github.com/kubesphere/kubekey/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "talos", "https://github.com/siderolabs/cluster-api-control-plane-provider-talos/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "microk8s", "https://github.com/canonical/cluster-api-control-plane-provider-microk8s/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "nested", "https://github.com/kubernetes-sigs/cluster-api-provider-nested/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "kamaji", "https://github.com/clastix/cluster-api-control-plane-provider-kamaji/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "rke2", "https://github.com/rancher/cluster-api-provider-rke2/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "k0sproject-k0smotron", "https://github.com/k0sproject/k0smotron/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "canonical-kubernetes", "https://github.com/canonical/cluster-api-k8s/releases/latest/control-plane-components.yaml"},
	{v1alpha1.ControlPlaneProviderType, "hosted-control-plane", "https://github.com/teutonet/cluster-api-provider-hosted-control-plane/releases/latest/control-plane-components.yaml"},
	{v1alpha1.IPAMProviderType, "in-cluster", "https://github.com/kubernetes-sigs/cluster-api-ipam-provider-in-cluster/releases/latest/ipam-components.yaml"},
	{v1alpha1.IPAMProviderType, "metal3", "https://github.com/metal3-io/ip-address-manager/releases/latest/ipam-components.yaml"},
	{v1alpha1.IPAMProviderType, "nutanix", "https://github.com/nutanix-cloud-native/cluster-api-ipam-provider-nutanix/releases/latest/ipam-components.yaml"},
	{v1alpha1.AddonProviderType, "rancher-fleet", "https://github.com/rancher/cluster-api-addon-provider-fleet/releases/latest/addon-components.yaml"},
	{v1alpha1.AddonProviderType, "helm", "https://github.com/kubernetes-sigs/cluster-api-addon-provider-helm/releases/latest/addon-components.yaml"},
	{v1alpha1.AddonProviderType, "eitco-cdk8s", "https://github.com/eitco/cluster-api-addon-provider-cdk8s/releases/latest/addon-components.yaml"},
	{v1alpha1.RuntimeExtensionProviderType, "nutanix", "https://github.com/nutanix-cloud-native/cluster-api-runtime-extensions-nutanix/releases/latest/runtime-extensions-components.yaml"},
}

// ClusterctlProviders lists clusterctl's well-known providers, ordered by
// type (clusterctl's order of types) then name.
func ClusterctlProviders() []ClusterctlProvider {
	order := clusterctl.ProviderTypes()
	out := slices.Clone(clusterctlProviders)
	slices.SortFunc(out, func(a, b ClusterctlProvider) int {
		if c := slices.Index(order, a.Type) - slices.Index(order, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// ReleaseURL returns the release URL clusterctl installs a well-known
// provider from (with the version "latest", clusterctl's placeholder).
func ReleaseURL(providerType, name string) (string, bool) {
	for _, p := range clusterctlProviders {
		if p.Type == providerType && p.Name == name {
			return p.URL, true
		}
	}
	return "", false
}

// ReleaseOf is the release URL of TYPE/NAME, a provider of clusterctl's
// list, as the CLI's arguments name one (publish --from-release, mirror
// --provider). Errors are *ProviderTypeError and *UnknownReleaseError,
// whose text the callers end with what to do instead.
func ReleaseOf(providerType, name string) (string, error) {
	if err := CheckProviderType(providerType); err != nil {
		return "", err
	}
	url, ok := ReleaseURL(providerType, name)
	if !ok {
		return "", &UnknownReleaseError{Type: providerType, Name: name}
	}
	return url, nil
}

// ReleaseName is the name of the provider of clusterctl's list of type
// providerType whose release is src's GitHub repository and components
// file: what `clusterctl init` calls the release at that URL; "" when the
// list has none.
func ReleaseName(src providerrelease.Source, providerType string) string {
	if src.Kind != providerrelease.GitHub {
		return ""
	}
	for _, p := range ClusterctlProviders() {
		known, err := providerrelease.ParseURL(p.URL)
		if err == nil && p.Type == providerType && strings.EqualFold(known.Owner, src.Owner) &&
			strings.EqualFold(known.Repository, src.Repository) && known.ComponentsFile(p.Type) == src.ComponentsFile(providerType) {
			return p.Name
		}
	}
	return ""
}

// CheckProviderType refuses what is not a clusterctl provider type, with
// a *ProviderTypeError.
func CheckProviderType(providerType string) error {
	if !clusterctl.IsProviderType(providerType) {
		return &ProviderTypeError{Type: providerType}
	}
	return nil
}

// ProviderTypeError is a TYPE that is no clusterctl provider type.
type ProviderTypeError struct{ Type string }

func (e *ProviderTypeError) Error() string {
	return fmt.Sprintf("%q is not a provider type; use one of %s", e.Type, strings.Join(clusterctl.ProviderTypes(), ", "))
}

// UnknownReleaseError is a TYPE/NAME clusterctl's list does not have.
type UnknownReleaseError struct{ Type, Name string }

func (e *UnknownReleaseError) Error() string {
	return fmt.Sprintf("clusterctl %s knows no %s provider %q (it knows %s)", ClusterctlVersion, e.Type, e.Name, strings.Join(KnownReleasesOfType(e.Type), ", "))
}

// KnownReleases lists clusterctl's well-known providers as type/name, for
// messages.
func KnownReleases() []string {
	out := make([]string, 0, len(clusterctlProviders))
	for _, p := range ClusterctlProviders() {
		out = append(out, p.Type+"/"+p.Name)
	}
	return out
}

// KnownReleasesOfType lists the names of clusterctl's well-known providers
// of one type, sorted.
func KnownReleasesOfType(providerType string) []string {
	var out []string
	for _, p := range ClusterctlProviders() {
		if p.Type == providerType {
			out = append(out, p.Name)
		}
	}
	return out
}
