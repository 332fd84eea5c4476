package build

import (
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// clusterScoped are the cluster-scoped kinds among those the scheme
// knows (scheme.New): Kubernetes' own, and Capwright's Tenant.
var clusterScoped = []string{
	"Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
	"StorageClass", "PriorityClass", "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
	"CertificateSigningRequest", "IngressClass", "RuntimeClass", "CSIDriver", "CSINode", "VolumeAttachment",
	"FlowSchema", "PriorityLevelConfiguration", "VolumeAttributesClass", "DeviceClass", "ComponentStatus",
	tenancyv1alpha1.TenantKind,
}

// restMapper maps every kind s knows, with its scope: what the build's
// store and the objects' default namespace go by, as a cluster's
// discovery would.
func restMapper(s *runtime.Scheme) apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		scope := apimeta.RESTScopeNamespace
		if slices.Contains(clusterScoped, gvk.Kind) {
			scope = apimeta.RESTScopeRoot
		}
		m.Add(schema.GroupVersionKind(gvk), scope)
	}
	return m
}
