package tenant

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
)

// clusterGVK is the Cluster API Cluster as the controller reads it.
var clusterGVK = schema.FromAPIVersionAndKind(render.ClusterAPIVersion, render.ClusterKind)

// secretGVK is a Secret, read as metadata only: the controller needs to
// know a kubeconfig Secret exists, never what it holds (Flux reads it).
var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// NewClusterObject is an empty unstructured Cluster, for watches and reads.
func NewClusterObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterGVK)
	return u
}

// NewSecretMetadata is an empty metadata-only Secret, for watches.
func NewSecretMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(secretGVK)
	return m
}

// foundClusters is what the tenant's namespaces hold.
type foundClusters struct {
	clusters    []render.ClusterFacts
	kubeconfigs sets.Set[types.NamespacedName]
	// watched is false while Clusters are not watched (the Cluster API is
	// not served yet): nothing tells the controller about new Clusters,
	// so it polls.
	watched bool
}

// clusterAPIMissingError says the Cluster kind is not served.
type clusterAPIMissingError struct{ cause error }

func (e *clusterAPIMissingError) Error() string {
	return fmt.Sprintf("the management cluster does not serve %s %s (%v): install Cluster API (the core provider) to select clusters; "+
		"the tenant's namespace and RBAC are written meanwhile, and Capwright starts watching Clusters as soon as Cluster API is served",
		render.ClusterAPIVersion, render.ClusterKind, e.cause)
}

// findClusters reads the Clusters and kubeconfig Secrets of the tenant's
// namespaces (render.TenantNamespaces), and nothing outside them.
func (r *Reconciler) findClusters(ctx context.Context, t *tenancyv1alpha1.Tenant) (foundClusters, error) {
	reader, watched := r.clusterReader()
	out := foundClusters{kubeconfigs: sets.New[types.NamespacedName](), watched: watched}
	for _, ns := range render.TenantNamespaces(t) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(clusterGVK.GroupVersion().WithKind(render.ClusterKind + "List"))
		if err := reader.List(ctx, list, ctrl.InNamespace(ns)); err != nil {
			if apimeta.IsNoMatchError(err) || isNotServed(err) {
				return out, &clusterAPIMissingError{cause: err}
			}
			return out, fmt.Errorf("listing Clusters in namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			facts, err := render.ClusterFactsFromUnstructured(&list.Items[i])
			if err != nil {
				return out, err
			}
			out.clusters = append(out.clusters, facts)
		}
		secrets := &metav1.PartialObjectMetadataList{}
		secrets.SetGroupVersionKind(secretGVK.GroupVersion().WithKind("SecretList"))
		if err := reader.List(ctx, secrets, ctrl.InNamespace(ns)); err != nil {
			return out, fmt.Errorf("listing Secrets in namespace %s: %w", ns, err)
		}
		// SelectClusters looks up each Cluster's own Secret by name.
		for _, s := range secrets.Items {
			out.kubeconfigs.Insert(types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return out, nil
}

// isKubeconfigSecret tells whether a Secret's name is that of some
// Cluster's kubeconfig Secret.
func isKubeconfigSecret(name string) bool {
	return strings.HasSuffix(name, render.KubeconfigSecretName(""))
}

// isNotServed recognises the API server's 404 for a group version it does
// not serve (an uncached list of a kind whose CRD is missing).
func isNotServed(err error) bool {
	return strings.Contains(err.Error(), "the server could not find the requested resource")
}
