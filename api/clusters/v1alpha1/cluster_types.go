package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapwrightCluster is a Cluster API infrastructure cluster provided by a
// backend Flux installs (a network, a load balancer, a cloud account's
// composition), or by nothing at all: without a backend it is provisioned
// at once, for control planes that bring their own (hosted control
// planes). Capwright folds the backend's health into the Cluster API
// v1beta2 contract (status.initialization.provisioned, Ready).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cwc,categories=cluster-api;capwright
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type CapwrightCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CapwrightClusterSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status CapwrightClusterStatus `json:"status,omitempty"`
}

// CapwrightClusterList is a list of CapwrightClusters.
// +kubebuilder:object:root=true
type CapwrightClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapwrightCluster `json:"items"`
}

// CapwrightClusterSpec is the desired infrastructure.
type CapwrightClusterSpec struct {
	// ControlPlaneEndpoint is where the control plane serves, when the
	// infrastructure provides it (statusFrom.endpoint); Capwright sets it.
	// Leave it unset when the control plane provides the endpoint.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	CapwrightClusterResourceSpec `json:",inline"`
}

// CapwrightClusterResourceSpec is what a CapwrightCluster and its
// Template have in common.
// +kubebuilder:validation:XValidation:rule="!has(self.statusFrom) || has(self.backend)",message="statusFrom needs a backend: without one the infrastructure is provisioned at once"
type CapwrightClusterResourceSpec struct {
	// Backend is what Flux installs to provide the infrastructure. Without
	// one the infrastructure is provisioned at once.
	// +optional
	Backend *Backend `json:"backend,omitempty"`

	// StatusFrom is the backend object whose status says whether the
	// infrastructure is ready (and, if it provides one, the control plane
	// endpoint). Without it the infrastructure is provisioned once Flux
	// installed the backend and its health checks passed.
	// +optional
	StatusFrom *StatusFrom `json:"statusFrom,omitempty"`
}

// CapwrightClusterStatus is the observed infrastructure.
type CapwrightClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the reconcile.fluxcd.io/requestedAt value
	// last handled.
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions in Cluster API v1beta2 style: BackendReady, Paused,
	// Deleting, and Ready, which summarises them (Cluster API mirrors it
	// as the Cluster's InfrastructureReady).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Initialization is the Cluster API contract's initialization status.
	// +optional
	Initialization ClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// Backend is the state of the backend's Flux objects.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=4
	Backend []BackendStatus `json:"backend,omitempty"`
}

// ClusterInitializationStatus is the Cluster API contract's
// initialization status of an infrastructure cluster.
// +kubebuilder:validation:MinProperties=1
type ClusterInitializationStatus struct {
	// Provisioned is true once the infrastructure first became ready; it
	// stays true.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// CapwrightClusterTemplate is the template of CapwrightClusters for a
// ClusterClass.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cwct,categories=cluster-api;capwright
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
type CapwrightClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CapwrightClusterTemplateSpec `json:"spec,omitempty"`
}

// CapwrightClusterTemplateList is a list of CapwrightClusterTemplates.
// +kubebuilder:object:root=true
type CapwrightClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapwrightClusterTemplate `json:"items"`
}

// CapwrightClusterTemplateSpec holds the template.
type CapwrightClusterTemplateSpec struct {
	// +required
	Template CapwrightClusterTemplateResource `json:"template"`
}

// CapwrightClusterTemplateResource is the object a ClusterClass makes.
type CapwrightClusterTemplateResource struct {
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty,omitzero"`
	// +optional
	Spec CapwrightClusterResourceSpec `json:"spec,omitempty"`
}

// GetConditions returns the conditions.
func (c *CapwrightCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions.
func (c *CapwrightCluster) SetConditions(conds []metav1.Condition) { c.Status.Conditions = conds }
