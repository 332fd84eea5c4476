package contract

import (
	"time"

	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/clusterwatch"
	"github.com/capwright/capwright/internal/metrics"
)

// Shared is what both controllers need.
type Shared struct {
	// Client reads the contract kinds and Flux objects from the cache,
	// and writes.
	Client ctrl.Client
	// Reader reads without the cache: Clusters, Secrets, and status
	// objects of kinds the manager does not watch.
	Reader   ctrl.Reader
	Recorder kuberecorder.EventRecorder
	Metrics  *metrics.Recorder
	// Mirrors are the manager's registry mirror rules, applied to
	// backend URLs, and InsecureRegistries the hosts reached over plain
	// HTTP (--insecure-registry).
	Mirrors            catalog.Mirrors
	InsecureRegistries []string
	// ResyncInterval is how often an unchanged object is looked at again.
	ResyncInterval time.Duration
	// ClusterAPIServed says whether Clusters are served now; once an
	// object of either kind exists, it is asked until they are, and they
	// are watched from then on. Without it they are watched from the
	// start.
	ClusterAPIServed func() (bool, error)
	// clusterWatch starts the Cluster watches (nil when they run from the
	// start).
	clusterWatch *clusterwatch.LateWatch

	exprs   expressionCache
	watches *statusWatches
}

func (s *Shared) resync() time.Duration {
	if s.ResyncInterval > 0 {
		return s.ResyncInterval
	}
	return 10 * time.Minute
}

// syncer writes what the plans want: one field owner, one hash
// annotation.
func (s *Shared) syncer() apply.Syncer {
	return apply.Syncer{Client: s.Client, Reader: s.Reader}
}
