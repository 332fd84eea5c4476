// Package contract is the plan of Capwright's Cluster API contract kinds,
// CapwrightControlPlane and CapwrightCluster, without a client, a clock
// or a network: from the facts a reconcile read (Facts), what it wants
// written (Plan: the backend's Flux objects, or why it refuses), and,
// from what the sync wrote and saw (Observed), the object's conditions
// and contract fields (FoldControlPlane, FoldCluster).
//
// A contract kind is a subject with a backend: both kinds share the plan;
// each has its own fold.
package contract

import (
	"time"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
)

// PollWhileWaiting is how soon an object waiting for something that is
// not watched (a status object of a kind the manager may not watch, a
// backend Secret) looks again.
const PollWhileWaiting = 15 * time.Second

// Facts are what a reconcile of a contract object read, checked.
type Facts struct {
	// Object is the contract object, of kind Kind.
	Object plan.Object
	Kind   string
	// Backend is the object's backend as written (variables not
	// substituted); nil for an infrastructure provided with the control
	// plane.
	Backend *clustersv1alpha1.Backend
	// StatusFrom is the backend's status view; nil for none.
	StatusFrom *clustersv1alpha1.StatusFrom
	// StatusFromInvalid is why StatusFrom's expressions do not parse (the
	// error names the field); nil when they do.
	StatusFromInvalid error
	// Version is the Kubernetes version of ${KUBERNETES_VERSION}: a
	// control plane's spec.version.
	Version string
	// VersionOfTopology takes ${KUBERNETES_VERSION} from the Cluster's
	// spec.topology.version instead (an infrastructure has no version).
	VersionOfTopology bool
	// Kubeconfig is a control plane's spec.kubeconfig; nil for a kind
	// that publishes none.
	Kubeconfig *clustersv1alpha1.KubeconfigSource
	// Cluster is the Cluster that owns the object; nil while none does.
	Cluster *clusterapi.Facts
	// PausedSaid is set when the object's Paused condition is True
	// already.
	PausedSaid bool
	// Mirrors are the manager's registry mirror rules, InsecureRegistries
	// the hosts it reaches over plain HTTP.
	Mirrors            catalog.Mirrors
	InsecureRegistries []string
	// Request is the reconcile.fluxcd.io/requestedAt token to pass on to
	// the Flux objects ("" for none).
	Request string
	// Resync is how often an unchanged object is looked at again.
	Resync time.Duration
}

// Ref is "<Kind> <namespace>/<name>".
func (f Facts) Ref() string {
	return f.Kind + " " + f.Object.GetNamespace() + "/" + f.Object.GetName()
}

func (f Facts) version() string {
	if f.VersionOfTopology && f.Cluster != nil {
		return f.Cluster.TopologyVersion
	}
	return f.Version
}

// PauseReason says why the object is paused: its Cluster's spec.paused,
// or its own cluster.x-k8s.io/paused annotation; "" when it is not.
// Cluster API's annotation on the Cluster does not pause it (cluster may
// be nil: none owns the object).
func PauseReason(obj plan.Object, cluster *clusterapi.Facts) string {
	if cluster != nil && cluster.SpecPaused {
		return "Cluster " + cluster.Namespace + "/" + cluster.Name + " is paused (spec.paused)"
	}
	if _, ok := obj.GetAnnotations()[clusterapi.PausedAnnotation]; ok {
		return "the object carries the " + clusterapi.PausedAnnotation + " annotation"
	}
	return ""
}
