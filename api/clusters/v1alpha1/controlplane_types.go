package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapwrightControlPlane is a Cluster API control plane provided by a
// backend Flux installs: a hosted control plane operator's chart, a
// managed Kubernetes composition, any chart or kustomize artifact whose
// object reports ready, an endpoint and a kubeconfig. Capwright renders the
// backend from the owning Cluster, folds its health into the Cluster API
// v1beta2 contract (spec.controlPlaneEndpoint,
// status.initialization.controlPlaneInitialized, status.version, the
// Available condition) and writes the `<cluster>-kubeconfig` Secret.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cwcp,categories=cluster-api;capwright
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Initialized",type=boolean,JSONPath=`.status.initialization.controlPlaneInitialized`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.controlPlaneEndpoint.host`,priority=1
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type CapwrightControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CapwrightControlPlaneSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status CapwrightControlPlaneStatus `json:"status,omitempty"`
}

// CapwrightControlPlaneList is a list of CapwrightControlPlanes.
// +kubebuilder:object:root=true
type CapwrightControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapwrightControlPlane `json:"items"`
}

// CapwrightControlPlaneSpec is the desired control plane.
type CapwrightControlPlaneSpec struct {
	// Version is the desired Kubernetes version, e.g. v1.31.0 (a Cluster
	// with a topology sets it from spec.topology.version). It reaches the
	// backend as ${KUBERNETES_VERSION}; status.version follows once the
	// backend is ready at it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+([-+][0-9A-Za-z.+-]+)?$')",message="version must be a Kubernetes version, e.g. v1.31.0"
	Version string `json:"version"`

	// ControlPlaneEndpoint is where the control plane serves; Capwright
	// sets it from the backend's endpoint (statusFrom.endpoint). Leave it
	// unset.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	CapwrightControlPlaneResourceSpec `json:",inline"`
}

// CapwrightControlPlaneResourceSpec is what a CapwrightControlPlane and
// its Template have in common: the backend, its status view and its
// kubeconfig.
type CapwrightControlPlaneResourceSpec struct {
	// Backend is what Flux installs to provide the control plane.
	// +required
	Backend Backend `json:"backend"`

	// StatusFrom is the backend object whose status says whether the
	// control plane is ready, where it serves and at which version.
	// +required
	StatusFrom StatusFrom `json:"statusFrom"`

	// Kubeconfig is the backend's Secret holding an admin kubeconfig of
	// the control plane; Capwright copies it to `<cluster>-kubeconfig`
	// (key value, type cluster.x-k8s.io/secret), the Secret Cluster API
	// and Flux use to reach the cluster.
	// +required
	Kubeconfig KubeconfigSource `json:"kubeconfig"`
}

// KubeconfigSource is a key of a Secret of the backend.
type KubeconfigSource struct {
	// SecretName is the Secret, in the object's namespace; it may use the
	// backend variables, e.g. ${CLUSTER_NAME}-admin-kubeconfig.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// Key of the kubeconfig in the Secret. Default value.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="kubeconfig.key must be a Secret data key: letters, digits, -, _ and .; no Secret holds any other"
	// +kubebuilder:default:=value
	Key string `json:"key,omitempty"`
}

// CapwrightControlPlaneStatus is the observed control plane.
type CapwrightControlPlaneStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the reconcile.fluxcd.io/requestedAt value
	// last handled; the request is passed on to the backend's Flux objects.
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions in Cluster API v1beta2 style: Available (the contract's,
	// which Cluster API mirrors as the Cluster's ControlPlaneAvailable),
	// BackendReady, KubeconfigReady, Paused, Deleting, and Ready, which
	// summarises them.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Initialization is the Cluster API contract's initialization status.
	// +optional
	Initialization ControlPlaneInitializationStatus `json:"initialization,omitempty,omitzero"`

	// Versions are the Kubernetes versions the control plane runs, older
	// to newer (Cluster API v1.14's ControlPlane contract, the preferred
	// source of truth): the one version of Version, once there is one. A
	// hosted control plane has no replicas Cluster API counts, so none is
	// given.
	// +optional
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Versions []StatusVersion `json:"versions,omitempty"`

	// Version is the Kubernetes version the control plane runs: the
	// desired version, once the backend is ready at it. Deprecated by
	// Cluster API's contract in favour of Versions, and set beside it for
	// the Cluster API releases that read only this field.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// ExternalManagedControlPlane is true: the control plane has no Nodes
	// in the cluster (Cluster API contract).
	// +optional
	ExternalManagedControlPlane *bool `json:"externalManagedControlPlane,omitempty"`

	// Backend is the state of the backend's Flux objects.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=4
	Backend []BackendStatus `json:"backend,omitempty"`
}

// ControlPlaneInitializationStatus is the Cluster API contract's
// initialization status of a control plane.
// +kubebuilder:validation:MinProperties=1
type ControlPlaneInitializationStatus struct {
	// ControlPlaneInitialized is true once the backend first reported
	// ready with an endpoint and the kubeconfig Secret was written; it
	// stays true.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// CapwrightControlPlaneTemplate is the template of CapwrightControlPlanes
// for a ClusterClass.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cwcpt,categories=cluster-api;capwright
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
type CapwrightControlPlaneTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CapwrightControlPlaneTemplateSpec `json:"spec,omitempty"`
}

// CapwrightControlPlaneTemplateList is a list of
// CapwrightControlPlaneTemplates.
// +kubebuilder:object:root=true
type CapwrightControlPlaneTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapwrightControlPlaneTemplate `json:"items"`
}

// CapwrightControlPlaneTemplateSpec holds the template.
type CapwrightControlPlaneTemplateSpec struct {
	// +required
	Template CapwrightControlPlaneTemplateResource `json:"template"`
}

// CapwrightControlPlaneTemplateResource is the object a ClusterClass
// makes: the version comes from the Cluster's topology.
type CapwrightControlPlaneTemplateResource struct {
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty,omitzero"`
	// +required
	Spec CapwrightControlPlaneResourceSpec `json:"spec"`
}

// GetConditions returns the conditions.
func (c *CapwrightControlPlane) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions.
func (c *CapwrightControlPlane) SetConditions(conds []metav1.Condition) {
	c.Status.Conditions = conds
}

// StatusVersion is a Kubernetes version a control plane runs, with how
// many replicas run it (Cluster API's StatusVersion).
type StatusVersion struct {
	// Version is the Kubernetes version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version"`

	// Replicas is the number of replicas at this version, for a control
	// plane that controls it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas,omitempty"`
}
