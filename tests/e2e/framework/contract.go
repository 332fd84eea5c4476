package framework

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
)

// ContractCluster is a v1beta2 Cluster whose control plane and
// infrastructure are the contract kinds (CapwrightControlPlane and
// CapwrightCluster) named name, in its namespace.
func ContractCluster(namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"apiGroup": clustersv1alpha1.GroupVersion.Group, "kind": clustersv1alpha1.ControlPlaneKind, "name": name}, "spec", "controlPlaneRef")
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"apiGroup": clustersv1alpha1.GroupVersion.Group, "kind": clustersv1alpha1.ClusterKind, "name": name}, "spec", "infrastructureRef")
	return u
}
