// Package v1alpha1 holds the tenancy API of Capwright: Tenant, one team or
// customer with a namespace for its Cluster API clusters on the management
// cluster and a standard stack that Flux installs into each of them.
// +kubebuilder:object:generate=true
// +groupName=tenancy.capwright.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the tenancy kinds.
	GroupVersion = schema.GroupVersion{Group: "tenancy.capwright.io", Version: "v1alpha1"}

	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Tenant{}, &TenantList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the tenancy kinds to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)
