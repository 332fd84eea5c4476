package status

import (
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// Kind is a kind Capwright manages: how users may name it and how to
// list it.
type Kind struct {
	Kind string
	// Resource is the plural, lower case, as the CRD names it.
	Resource   string
	Group      string
	ShortName  string
	Namespaced bool
	NewList    func() client.ObjectList
}

// Kinds are the kinds Capwright manages, in the order the tree shows
// them: the providers (core first), Tenants, then the contract kinds.
func Kinds() []Kind {
	return append(providerKinds(),
		Kind{Kind: tenancyv1alpha1.TenantKind, Resource: "tenants", Group: tenancyv1alpha1.GroupVersion.Group, ShortName: "tnt",
			NewList: func() client.ObjectList { return &tenancyv1alpha1.TenantList{} }},
		Kind{Kind: clustersv1alpha1.ControlPlaneKind, Resource: "capwrightcontrolplanes", Group: clustersv1alpha1.GroupVersion.Group, ShortName: "cwcp", Namespaced: true,
			NewList: func() client.ObjectList { return &clustersv1alpha1.CapwrightControlPlaneList{} }},
		Kind{Kind: clustersv1alpha1.ClusterKind, Resource: "capwrightclusters", Group: clustersv1alpha1.GroupVersion.Group, ShortName: "cwc", Namespaced: true,
			NewList: func() client.ObjectList { return &clustersv1alpha1.CapwrightClusterList{} }},
	)
}

// providerShortNames are the short names of the provider kinds.
var providerShortNames = map[string]string{
	"CoreProvider": "corep", "BootstrapProvider": "bootp", "ControlPlaneProvider": "cpp", "InfrastructureProvider": "infrap",
	"IPAMProvider": "ipamp", "RuntimeExtensionProvider": "rxp", "AddonProvider": "addonp",
}

// providerKinds are the seven provider kinds, core first.
func providerKinds() []Kind {
	var out []Kind
	for _, k := range v1alpha1.Kinds() {
		out = append(out, Kind{Kind: k.Name, Resource: strings.ToLower(k.Name) + "s", Group: v1alpha1.GroupVersion.Group,
			ShortName: providerShortNames[k.Name], Namespaced: true, NewList: func() client.ObjectList { return k.NewList() }})
	}
	return out
}

// CRD is the name of the kind's CustomResourceDefinition.
func (k Kind) CRD() string { return k.Resource + "." + k.Group }

// Lookup finds a kind by its name, plural or short name, in any case, as
// kubectl does.
func Lookup(name string) (Kind, bool) {
	name = strings.ToLower(name)
	for _, k := range Kinds() {
		if name == strings.ToLower(k.Kind) || name == k.Resource || name == k.ShortName || name == k.CRD() {
			return k, true
		}
	}
	return Kind{}, false
}

// KindNames are the kinds in lower case, as an argument names them.
func KindNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, strings.ToLower(k.Kind))
	}
	return out
}

// ShortNames are the kinds' short names, sorted.
func ShortNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.ShortName)
	}
	slices.Sort(out)
	return out
}
