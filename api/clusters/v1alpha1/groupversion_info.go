// Package v1alpha1 holds Capwright's Cluster API contract kinds:
// CapwrightControlPlane and CapwrightCluster (and their Templates, for
// ClusterClasses). Each is backed by an OCI Helm chart or kustomize
// artifact that Flux installs on the management cluster; Capwright folds
// the backend's health and a normalized status view (CEL over one backend
// object) into the Cluster API v1beta2 contract fields and conditions, and
// publishes the control plane's kubeconfig as `<cluster>-kubeconfig`.
// +kubebuilder:object:generate=true
// +groupName=clusters.capwright.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the contract kinds.
	GroupVersion = schema.GroupVersion{Group: "clusters.capwright.io", Version: "v1alpha1"}

	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion,
			&CapwrightControlPlane{}, &CapwrightControlPlaneList{},
			&CapwrightControlPlaneTemplate{}, &CapwrightControlPlaneTemplateList{},
			&CapwrightCluster{}, &CapwrightClusterList{},
			&CapwrightClusterTemplate{}, &CapwrightClusterTemplateList{},
		)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the contract kinds to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

// Kind names.
const (
	ControlPlaneKind = "CapwrightControlPlane"
	ClusterKind      = "CapwrightCluster"
)

// Finalizer is the finalizer both kinds carry: the backend is uninstalled
// through Flux (and, for a control plane, the kubeconfig Secret removed)
// before the object goes.
const Finalizer = "clusters.capwright.io/finalizer"

// BackendLabel is set on the Flux objects of a contract object, to the
// object's kind and name ("CapwrightControlPlane.<name>", hashed when
// longer than a label value may be).
const BackendLabel = "clusters.capwright.io/owner"
