// Package v1alpha1 holds the provider API of Capwright: one kind per
// clusterctl provider type, all sharing ProviderSpec and ProviderStatus.
// +kubebuilder:object:generate=true
// +groupName=providers.capwright.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the provider kinds.
	GroupVersion = schema.GroupVersion{Group: "providers.capwright.io", Version: "v1alpha1"}

	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, knownTypes()...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the provider kinds to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)
