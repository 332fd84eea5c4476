package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The provider types, as clusterctl names them (also the prefix of the
// components file, <type>-components.yaml).
const (
	CoreProviderType             = "core"
	BootstrapProviderType        = "bootstrap"
	ControlPlaneProviderType     = "control-plane"
	InfrastructureProviderType   = "infrastructure"
	IPAMProviderType             = "ipam"
	RuntimeExtensionProviderType = "runtime-extension"
	AddonProviderType            = "addon"
)

// Provider is what every provider kind offers to controllers and tools.
// +kubebuilder:object:generate=false
type Provider interface {
	metav1.Object
	GetObjectKind() schema.ObjectKind
	DeepCopyObject() runtime.Object
	// ProviderType is the clusterctl provider type (core, bootstrap, …).
	ProviderType() string
	GetSpec() *ProviderSpec
	GetStatus() *ProviderStatus
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// ProviderList is what every provider list kind offers.
// +kubebuilder:object:generate=false
type ProviderList interface {
	runtime.Object
	metav1.ListInterface
	GetItems() []Provider
}

// CoreProvider installs and upgrades a Cluster API provider of type core through
// Flux. The core provider (Cluster API itself). Its name must be cluster-api.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=corep,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster-api'",message="the core provider must be named cluster-api (its clusterctl name)"
type CoreProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// CoreProviderList is a list of CoreProviders.
// +kubebuilder:object:root=true
type CoreProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CoreProvider `json:"items"`
}

// ProviderType is "core".
func (*CoreProvider) ProviderType() string { return CoreProviderType }

// GetSpec returns the spec.
func (p *CoreProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *CoreProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *CoreProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *CoreProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *CoreProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// BootstrapProvider installs and upgrades a Cluster API provider of type bootstrap through
// Flux. A bootstrap provider, e.g. kubeadm.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bootp,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type BootstrapProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// BootstrapProviderList is a list of BootstrapProviders.
// +kubebuilder:object:root=true
type BootstrapProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BootstrapProvider `json:"items"`
}

// ProviderType is "bootstrap".
func (*BootstrapProvider) ProviderType() string { return BootstrapProviderType }

// GetSpec returns the spec.
func (p *BootstrapProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *BootstrapProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *BootstrapProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *BootstrapProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *BootstrapProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// ControlPlaneProvider installs and upgrades a Cluster API provider of type control-plane through
// Flux. A control plane provider, e.g. kubeadm.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cpp,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type ControlPlaneProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// ControlPlaneProviderList is a list of ControlPlaneProviders.
// +kubebuilder:object:root=true
type ControlPlaneProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControlPlaneProvider `json:"items"`
}

// ProviderType is "control-plane".
func (*ControlPlaneProvider) ProviderType() string { return ControlPlaneProviderType }

// GetSpec returns the spec.
func (p *ControlPlaneProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *ControlPlaneProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *ControlPlaneProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *ControlPlaneProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *ControlPlaneProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// InfrastructureProvider installs and upgrades a Cluster API provider of type infrastructure through
// Flux. An infrastructure provider, e.g. aws or vsphere.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=infrap,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type InfrastructureProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// InfrastructureProviderList is a list of InfrastructureProviders.
// +kubebuilder:object:root=true
type InfrastructureProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InfrastructureProvider `json:"items"`
}

// ProviderType is "infrastructure".
func (*InfrastructureProvider) ProviderType() string { return InfrastructureProviderType }

// GetSpec returns the spec.
func (p *InfrastructureProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *InfrastructureProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *InfrastructureProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *InfrastructureProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *InfrastructureProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// IPAMProvider installs and upgrades a Cluster API provider of type ipam through
// Flux. An IP address management provider, e.g. in-cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ipamp,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type IPAMProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// IPAMProviderList is a list of IPAMProviders.
// +kubebuilder:object:root=true
type IPAMProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPAMProvider `json:"items"`
}

// ProviderType is "ipam".
func (*IPAMProvider) ProviderType() string { return IPAMProviderType }

// GetSpec returns the spec.
func (p *IPAMProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *IPAMProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *IPAMProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *IPAMProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *IPAMProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// RuntimeExtensionProvider installs and upgrades a Cluster API provider of type runtime-extension through
// Flux. A runtime extension provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rxp,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type RuntimeExtensionProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// RuntimeExtensionProviderList is a list of RuntimeExtensionProviders.
// +kubebuilder:object:root=true
type RuntimeExtensionProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RuntimeExtensionProvider `json:"items"`
}

// ProviderType is "runtime-extension".
func (*RuntimeExtensionProvider) ProviderType() string { return RuntimeExtensionProviderType }

// GetSpec returns the spec.
func (p *RuntimeExtensionProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *RuntimeExtensionProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *RuntimeExtensionProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *RuntimeExtensionProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *RuntimeExtensionProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

// AddonProvider installs and upgrades a Cluster API provider of type addon through
// Flux. An add-on provider, e.g. helm.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=addonp,categories=capwright
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Contract",type=string,JSONPath=`.status.contract`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type AddonProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
	// The default makes a new provider "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status ProviderStatus `json:"status,omitempty"`
}

// AddonProviderList is a list of AddonProviders.
// +kubebuilder:object:root=true
type AddonProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddonProvider `json:"items"`
}

// ProviderType is "addon".
func (*AddonProvider) ProviderType() string { return AddonProviderType }

// GetSpec returns the spec.
func (p *AddonProvider) GetSpec() *ProviderSpec { return &p.Spec }

// GetStatus returns the status.
func (p *AddonProvider) GetStatus() *ProviderStatus { return &p.Status }

// GetConditions returns the status conditions.
func (p *AddonProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *AddonProvider) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetItems returns the items as Providers.
func (l *AddonProviderList) GetItems() []Provider {
	items := make([]Provider, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&CoreProvider{}, &CoreProviderList{},
		&BootstrapProvider{}, &BootstrapProviderList{},
		&ControlPlaneProvider{}, &ControlPlaneProviderList{},
		&InfrastructureProvider{}, &InfrastructureProviderList{},
		&IPAMProvider{}, &IPAMProviderList{},
		&RuntimeExtensionProvider{}, &RuntimeExtensionProviderList{},
		&AddonProvider{}, &AddonProviderList{},
	}
}
