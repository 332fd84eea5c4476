package v1alpha1

// Kind describes one provider kind: its name and how to make an empty
// object and list of it.
// +kubebuilder:object:generate=false
type Kind struct {
	Name      string // CoreProvider, BootstrapProvider, …
	NewObject func() Provider
	NewList   func() ProviderList
}

// Kinds lists the seven provider kinds, the core first.
func Kinds() []Kind {
	return []Kind{
		{Name: "CoreProvider", NewObject: func() Provider { return &CoreProvider{} }, NewList: func() ProviderList { return &CoreProviderList{} }},
		{Name: "BootstrapProvider", NewObject: func() Provider { return &BootstrapProvider{} }, NewList: func() ProviderList { return &BootstrapProviderList{} }},
		{Name: "ControlPlaneProvider", NewObject: func() Provider { return &ControlPlaneProvider{} }, NewList: func() ProviderList { return &ControlPlaneProviderList{} }},
		{Name: "InfrastructureProvider", NewObject: func() Provider { return &InfrastructureProvider{} }, NewList: func() ProviderList { return &InfrastructureProviderList{} }},
		{Name: "IPAMProvider", NewObject: func() Provider { return &IPAMProvider{} }, NewList: func() ProviderList { return &IPAMProviderList{} }},
		{Name: "RuntimeExtensionProvider", NewObject: func() Provider { return &RuntimeExtensionProvider{} }, NewList: func() ProviderList { return &RuntimeExtensionProviderList{} }},
		{Name: "AddonProvider", NewObject: func() Provider { return &AddonProvider{} }, NewList: func() ProviderList { return &AddonProviderList{} }},
	}
}
