package plane

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Workload clusters that Cluster API sees provisioned, and that
// `clusterctl move` can move. No infrastructure or control plane provider
// runs on the plane (their pods are kwok's), so the plane plays the
// system that provisioned the workload cluster, as Cluster API's contract
// lets an externally managed infrastructure and control plane do: it
// writes a TestInfraCluster whose status.initialization.provisioned is
// true and whose spec.controlPlaneEndpoint is the workload cluster's API
// server, and a TestControlPlane whose status.initialization
// .controlPlaneInitialized is true, both written once and never again,
// and the `<cluster>-kubeconfig` Secret. Everything else is the real
// Cluster API core manager's: it owns both objects through the Cluster,
// copies the endpoint, probes the workload cluster through the
// kubeconfig and sets the Cluster's conditions, Available among them.
// Both kinds' CRDs carry the v1beta2 contract label and clusterctl's
// label, which is how `clusterctl move` finds the kinds it moves.

// TestControlPlaneKind is the control plane kind of
// InstallTestProviderKinds.
const TestControlPlaneKind = "TestControlPlane"

var (
	testInfraClusterGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "testinfraclusters"}
	testControlPlaneGVR = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Resource: "testcontrolplanes"}
)

const testControlPlaneCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: testcontrolplanes.controlplane.cluster.x-k8s.io
  labels:
    cluster.x-k8s.io/v1beta2: v1beta1
    clusterctl.cluster.x-k8s.io: ""
spec:
  group: controlplane.cluster.x-k8s.io
  names:
    kind: TestControlPlane
    listKind: TestControlPlaneList
    plural: testcontrolplanes
    singular: testcontrolplane
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// InstallTestProviderKinds installs the kinds ProvisionWorkloadCluster
// writes (TestInfraCluster, TestControlPlane, and Cluster API's Cluster
// CRD unless Clusters are served already): on a management cluster that
// Clusters are moved to, before the move.
func (p *Plane) InstallTestProviderKinds(ctx context.Context) error {
	if err := p.installClusterCRD(ctx); err != nil {
		return err
	}
	return p.applyCRDs(ctx, testControlPlaneCRD)
}

// ProvisionWorkloadCluster makes workload cluster w a Cluster API Cluster
// namespace/name that Cluster API sees provisioned (see above): a
// TestInfraCluster and a TestControlPlane named name, the Cluster
// referring to both, and its kubeconfig Secret. The real Cluster API
// manager then marks the Cluster Available. It is idempotent; labels are
// the caller's (LabelCluster).
func (p *Plane) ProvisionWorkloadCluster(ctx context.Context, w *WorkloadCluster, namespace, name string) (*unstructured.Unstructured, error) {
	if err := p.InstallTestProviderKinds(ctx); err != nil {
		return nil, err
	}
	kube, dyn, err := p.clientsIn(ctx, namespace)
	if err != nil {
		return nil, err
	}
	endpoint, err := url.Parse(w.Config.Host)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseInt(endpoint.Port(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("workload cluster %s: API server %s has no port: %w", w.Name, w.Config.Host, err)
	}
	infra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
		"kind":       TestInfraClusterKind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       map[string]any{"controlPlaneEndpoint": map[string]any{"host": endpoint.Hostname(), "port": port}},
		"status":     map[string]any{"initialization": map[string]any{"provisioned": true}},
	}}
	controlPlane := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
		"kind":       TestControlPlaneKind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       map[string]any{"version": "v1.36.3"},
		"status": map[string]any{
			"initialization":              map[string]any{"controlPlaneInitialized": true},
			"externalManagedControlPlane": true,
			"version":                     "v1.36.3",
		},
	}}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{{testInfraClusterGVR, infra}, {testControlPlaneGVR, controlPlane}} {
		if _, err := dyn.Resource(o.gvr).Namespace(namespace).Create(ctx, o.obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("writing %s %s/%s: %w", o.obj.GetKind(), namespace, name, err)
		}
	}
	cluster := NewTestCluster(namespace, name)
	if err := unstructured.SetNestedMap(cluster.Object, map[string]any{
		"apiGroup": "controlplane.cluster.x-k8s.io", "kind": TestControlPlaneKind, "name": name,
	}, "spec", "controlPlaneRef"); err != nil {
		return nil, err
	}
	clusters := dyn.Resource(clusterGVR).Namespace(namespace)
	created, err := clusters.Create(ctx, cluster, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = clusters.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("provisioning Cluster %s/%s: %w", namespace, name, err)
	}
	secret := KubeconfigSecret(namespace, name, w.Kubeconfig)
	if _, err := kube.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("writing Secret %s/%s: %w", namespace, secret.Name, err)
	}
	p.logf("workload cluster %s provisioned as Cluster %s/%s", w.Name, namespace, name)
	return created, nil
}
