package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// clusterGVR is Cluster API's Cluster, in the version registrations write.
var clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// Cluster API's kubeconfig Secret convention (sigs.k8s.io/cluster-api
// util/secret): "<cluster>-kubeconfig", the kubeconfig under "value",
// labelled with the cluster's name, of type cluster.x-k8s.io/secret.
const (
	ClusterNameLabel     = "cluster.x-k8s.io/cluster-name"
	kubeconfigSecretType = "cluster.x-k8s.io/secret"
)

// KubeconfigSecret is the `<name>-kubeconfig` Secret Cluster API writes
// for a Cluster once its control plane is up.
func KubeconfigSecret(namespace, name string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name + "-kubeconfig",
			Labels:    map[string]string{ClusterNameLabel: name},
		},
		Type: kubeconfigSecretType,
		Data: map[string][]byte{"value": kubeconfig},
	}
}

// RegisterWorkloadCluster makes workload cluster w look to the management
// plane as Cluster API would after provisioning it: a v1beta2 Cluster
// namespace/name whose status.initialization.controlPlaneInitialized is
// true (written through the status subresource, as the CAPI manager
// would), and its kubeconfig Secret. No CAPI manager runs for it: the
// Cluster CRD comes from the pinned Cluster API release (bin/assets)
// unless the plane serves Clusters already, with the infrastructure kind
// of InstallTestInfraClusterCRD. It is idempotent; the Cluster's other
// labels and fields are left to the caller.
func (p *Plane) RegisterWorkloadCluster(ctx context.Context, w *WorkloadCluster, namespace, name string) (*unstructured.Unstructured, error) {
	if err := p.installClusterCRD(ctx); err != nil {
		return nil, err
	}
	kube, dyn, err := p.clientsIn(ctx, namespace)
	if err != nil {
		return nil, err
	}
	clusters := dyn.Resource(clusterGVR).Namespace(namespace)
	cluster, err := clusters.Create(ctx, NewTestCluster(namespace, name), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cluster, err = clusters.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("registering Cluster %s/%s: %w", namespace, name, err)
	}
	if err := unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "controlPlaneInitialized"); err != nil {
		return nil, err
	}
	if cluster, err = clusters.UpdateStatus(ctx, cluster, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("initializing the control plane of Cluster %s/%s: %w", namespace, name, err)
	}
	secret := KubeconfigSecret(namespace, name, w.Kubeconfig)
	if _, err := kube.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = kube.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("writing Secret %s/%s: %w", namespace, secret.Name, err)
	}
	p.logf("workload cluster %s registered as Cluster %s/%s", w.Name, namespace, name)
	return cluster, nil
}

// InstallClusterCRD installs Cluster API's Cluster CRD (and the test
// infrastructure kind) as RegisterWorkloadCluster does, for a suite whose
// Clusters come later but whose managers must see the kind served at
// start-up.
func (p *Plane) InstallClusterCRD(ctx context.Context) error { return p.installClusterCRD(ctx) }

// installClusterCRD installs the Cluster CRD of the pinned Cluster API
// release and the test infrastructure kind, unless Clusters are served
// already (e.g. the real core components are installed, whose CRD carries
// a conversion webhook this one must not replace).
func (p *Plane) installClusterCRD(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(p.Config)
	if err != nil {
		return err
	}
	if resources, err := dc.ServerResourcesForGroupVersion(clusterGVR.GroupVersion().String()); err == nil {
		for _, r := range resources.APIResources {
			if r.Name == clusterGVR.Resource {
				return p.InstallTestInfraClusterCRD(ctx)
			}
		}
	}
	path := filepath.Join(p.opts.BinDir, "assets", "capi", "crds", "cluster.x-k8s.io_clusters.yaml")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the Cluster API Cluster CRD (build it with `make tools`): %w", err)
	}
	defer f.Close()
	objs, err := p.applyYAML(ctx, f)
	if err != nil {
		return fmt.Errorf("installing the Cluster API Cluster CRD: %w", err)
	}
	if err := waitCRDsEstablished(ctx, p.Config, objs); err != nil {
		return err
	}
	return p.InstallTestInfraClusterCRD(ctx)
}

// LabelCluster sets labels on Cluster API Cluster namespace/name, keeping
// its others (as a user labelling a Cluster for a Tenant's selector or a
// rollout's waves does).
func (p *Plane) LabelCluster(ctx context.Context, namespace, name string, labels map[string]string) error {
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(clusterGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling Cluster %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ClusterAPICluster reads Cluster API Cluster namespace/name.
func (p *Plane) ClusterAPICluster(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		return nil, err
	}
	return dyn.Resource(clusterGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// clientsIn returns the plane's typed and dynamic clients, with namespace
// created if it does not exist.
func (p *Plane) clientsIn(ctx context.Context, namespace string) (*kubernetes.Clientset, *dynamic.DynamicClient, error) {
	kube, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		return nil, nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, err
	}
	return kube, dyn, nil
}
