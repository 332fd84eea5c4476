// Package clusterapi is what Capwright knows of Cluster API's own
// objects: the Cluster, read through the typed v1beta2 API of
// sigs.k8s.io/cluster-api/api (the module Capwright extends), reduced to
// the facts a tenant's selection and a contract object's backend need.
// It is the one place that names the Cluster's group, version and kind.
package clusterapi

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Cluster is Cluster API's Cluster, in the version Capwright reads.
type Cluster = clusterv1.Cluster

// ClusterList is a list of Clusters.
type ClusterList = clusterv1.ClusterList

// ClusterGVK is the Cluster's group, version and kind.
var ClusterGVK = clusterv1.GroupVersion.WithKind("Cluster")

// ClusterAPIVersion is the Cluster's apiVersion, cluster.x-k8s.io/v1beta2.
var ClusterAPIVersion = clusterv1.GroupVersion.String()

// GroupResource is the Cluster's group and resource, for discovery.
var GroupResource = schema.GroupResource{Group: clusterv1.GroupVersion.Group, Resource: "clusters"}

// PausedAnnotation pauses a Cluster API object, as Cluster API's own
// controllers honour it.
const PausedAnnotation = clusterv1.PausedAnnotation

// ClusterNameLabel names the Cluster an object belongs to (a kubeconfig
// Secret's).
const ClusterNameLabel = clusterv1.ClusterNameLabel

// SecretType is the type of the Secrets Cluster API reads a Cluster's
// kubeconfig and certificates from.
const SecretType = clusterv1.ClusterSecretType

// AddToScheme registers the Cluster API core types a scheme needs to read
// Clusters.
func AddToScheme(s *runtime.Scheme) error { return clusterv1.AddToScheme(s) }

// NewCluster is an empty Cluster, for reads and watches.
func NewCluster() *Cluster { return &Cluster{} }

// Facts are what Capwright reads of a Cluster.
type Facts struct {
	Namespace, Name string
	UID             types.UID
	Labels          map[string]string
	// SpecPaused is spec.paused.
	SpecPaused bool
	// PausedByAnnotation is set when the Cluster carries the
	// cluster.x-k8s.io/paused annotation.
	PausedByAnnotation bool
	// ControlPlaneInitialized is status.initialization.controlPlaneInitialized:
	// the API server answers. Cluster API never resets it.
	ControlPlaneInitialized bool
	// Deleting is set once the Cluster has a deletion timestamp.
	Deleting bool
	// TopologyVersion is spec.topology.version ("" without a topology).
	TopologyVersion string
	// Variables are spec.topology.variables, each value as a string (JSON
	// for a value that is not a string).
	Variables map[string]string
}

// Paused tells whether the Cluster is paused, by spec or annotation.
func (f Facts) Paused() bool { return f.SpecPaused || f.PausedByAnnotation }

// Ref is the Cluster's namespace and name.
func (f Facts) Ref() types.NamespacedName {
	return types.NamespacedName{Namespace: f.Namespace, Name: f.Name}
}

// FactsOf reads the facts of c.
func FactsOf(c *Cluster) Facts {
	_, annotated := c.Annotations[PausedAnnotation]
	f := Facts{
		Namespace: c.Namespace, Name: c.Name, UID: c.UID, Labels: c.Labels,
		SpecPaused:              c.Spec.Paused != nil && *c.Spec.Paused,
		PausedByAnnotation:      annotated,
		ControlPlaneInitialized: c.Status.Initialization.ControlPlaneInitialized != nil && *c.Status.Initialization.ControlPlaneInitialized,
		Deleting:                c.DeletionTimestamp != nil,
		TopologyVersion:         c.Spec.Topology.Version,
		Variables:               map[string]string{},
	}
	for _, v := range c.Spec.Topology.Variables {
		if v.Name == "" || v.Value.Raw == nil {
			continue
		}
		var value any
		if err := json.Unmarshal(v.Value.Raw, &value); err != nil {
			continue
		}
		if s, ok := value.(string); ok {
			f.Variables[v.Name] = s
			continue
		}
		// Compact JSON with sorted keys, whatever the server returned.
		if data, err := json.Marshal(value); err == nil {
			f.Variables[v.Name] = string(data)
		}
	}
	return f
}

// KubeconfigSecretName is the name of the Secret Cluster API writes a
// Cluster's admin kubeconfig into, <cluster>-kubeconfig (key "value").
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }
