// Package metrics holds the metrics every Capwright controller records
// through the reconcile shell, named after Flux's so Flux dashboards and
// alerting habits carry over:
//
//   - capwright_reconcile_duration_seconds{kind,name,namespace}: how long
//     each reconcile took (gotk_reconcile_duration_seconds' shape);
//   - capwright_resource_info{kind,name,namespace,ready,reason,suspended,version,revision}:
//     1 per object, its Ready status and reason, whether it is suspended,
//     the installed version and the revision;
//   - capwright_provider_upgrade_available{kind,name,namespace,version}:
//     1 per provider whose source offers a newer version that can be
//     installed now, the newest such version as label;
//   - capwright_tenant_clusters{name,namespace,phase}: a tenant's selected
//     clusters per phase;
//   - capwright_tenant_rollout_clusters{name,namespace,wave,state}: for a
//     tenant with spec.rollout, each wave's clusters (state total), those
//     healthy on the target revision (updated) and those failed on it;
//   - capwright_tenant_rollbacks_total{name,namespace}: rollouts stopped
//     by a failed wave (rolled back or paused);
//   - capwright_provider_rollbacks_total{kind,name,namespace,version}:
//     upgrades of a provider that failed and were rolled back (spec.upgrade),
//     the failed version as label.
//
// The provider controller records one more itself, from its install
// timelines: capwright_provider_install_step_seconds{kind,step}, the
// seconds from the manager first seeing a provider's generation to each
// step of its install or upgrade (internal/controller/provider/timeline.go).
// docs/reference/metrics.md lists every metric, generated from the code.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectState is one object's line in capwright_resource_info.
type ObjectState struct {
	Kind, Namespace, Name string
	Ready                 metav1.ConditionStatus
	Reason                string
	Suspended             bool
	// Version is the installed version (providers); Revision the checked
	// artifact's tag@digest.
	Version, Revision string
	// Upgrade is the newest version a provider can be upgraded to now
	// (status.upgrades), "" when none.
	Upgrade string
}

// TenantPhases are the phases capwright_tenant_clusters always reports,
// 0 when no cluster is in them.
var TenantPhases = []string{"Pending", "Installing", "Ready", "Failed"}

// Recorder records Capwright's metrics; a nil *Recorder records nothing.
type Recorder struct {
	duration *prometheus.HistogramVec
	info     *prometheus.GaugeVec
	upgrade  *prometheus.GaugeVec
	clusters *prometheus.GaugeVec
	waves    *prometheus.GaugeVec
	rollback *prometheus.CounterVec
	// providerRollback counts a provider's rolled-back upgrades.
	providerRollback *prometheus.CounterVec

	mu   sync.Mutex
	last map[objectKey]prometheus.Labels // each object's current info series
}

type objectKey struct{ kind, namespace, name string }

// NewRecorder registers the collectors with reg (the manager passes
// controller-runtime's metrics.Registry).
func NewRecorder(reg prometheus.Registerer) *Recorder {
	r := &Recorder{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "capwright_reconcile_duration_seconds",
			Help: "The duration in seconds of a Capwright resource reconciliation.",
			// As Flux's: 10 buckets from 10ms to 30 minutes.
			Buckets: prometheus.ExponentialBucketsRange(10e-3, 1800, 10),
		}, []string{"kind", "name", "namespace"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capwright_resource_info",
			Help: "The current state of a Capwright resource: its Ready status and reason, whether it is suspended, its installed version and revision.",
		}, []string{"kind", "name", "namespace", "ready", "reason", "suspended", "version", "revision"}),
		upgrade: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capwright_provider_upgrade_available",
			Help: "1 when the provider's source offers a newer version that can be installed now; version is the newest such version.",
		}, []string{"kind", "name", "namespace", "version"}),
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capwright_tenant_clusters",
			Help: "The number of a tenant's selected clusters in each phase.",
		}, []string{"name", "namespace", "phase"}),
		waves: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capwright_tenant_rollout_clusters",
			Help: "For a tenant with a rollout, the clusters of each wave (state total), those healthy on the target revision (updated) and those failed on it (failed).",
		}, []string{"name", "namespace", "wave", "state"}),
		rollback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capwright_tenant_rollbacks_total",
			Help: "The rollouts of a tenant's stack stopped because a wave failed beyond its failure budget.",
		}, []string{"name", "namespace"}),
		providerRollback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capwright_provider_rollbacks_total",
			Help: "The upgrades of a provider that failed and were rolled back to its last good version (spec.upgrade.onFailure: Rollback); version is the version that failed.",
		}, []string{"kind", "name", "namespace", "version"}),
		last: map[objectKey]prometheus.Labels{},
	}
	reg.MustRegister(r.duration, r.info, r.upgrade, r.clusters, r.waves, r.rollback, r.providerRollback)
	return r
}

// ReconcileDone observes one reconcile's duration for an object.
func (r *Recorder) ReconcileDone(kind, namespace, name string, d time.Duration) {
	if r == nil {
		return
	}
	r.duration.WithLabelValues(kind, name, namespace).Observe(d.Seconds())
}

// ObjectState sets the object's info series, replacing its previous one,
// so no stale label set is left behind when its state changes.
func (r *Recorder) ObjectState(s ObjectState) {
	if r == nil {
		return
	}
	labels := prometheus.Labels{"kind": s.Kind, "name": s.Name, "namespace": s.Namespace, "ready": string(s.Ready),
		"reason": s.Reason, "suspended": strconv.FormatBool(s.Suspended), "version": s.Version, "revision": s.Revision}
	key := objectKey{s.Kind, s.Namespace, s.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.last[key]; ok && !sameLabels(prev, labels) {
		r.info.Delete(prev)
	}
	r.info.With(labels).Set(1)
	r.last[key] = labels
	r.providerUpgrade(s)
}

// providerUpgrade keeps one capwright_provider_upgrade_available series
// per provider with an installable newer version, none otherwise.
func (r *Recorder) providerUpgrade(s ObjectState) {
	match := prometheus.Labels{"kind": s.Kind, "name": s.Name, "namespace": s.Namespace}
	if s.Upgrade == "" {
		r.upgrade.DeletePartialMatch(match)
		return
	}
	labels := prometheus.Labels{"kind": s.Kind, "name": s.Name, "namespace": s.Namespace, "version": s.Upgrade}
	r.upgrade.DeletePartialMatch(match)
	r.upgrade.With(labels).Set(1)
}

// TenantClusters sets a tenant's cluster counts per phase; the phases of
// TenantPhases missing from byPhase are 0.
func (r *Recorder) TenantClusters(namespace, name string, byPhase map[string]int) {
	if r == nil {
		return
	}
	for _, phase := range TenantPhases {
		r.clusters.WithLabelValues(name, namespace, phase).Set(float64(byPhase[phase]))
	}
	for phase, n := range byPhase {
		r.clusters.WithLabelValues(name, namespace, phase).Set(float64(n))
	}
}

// RolloutWave is one wave's counts in capwright_tenant_rollout_clusters.
type RolloutWave struct {
	Name                   string
	Total, Updated, Failed int
}

// TenantRollout sets a tenant's rollout counts, replacing all earlier
// ones (waves come and go with the spec); nil waves remove them.
func (r *Recorder) TenantRollout(namespace, name string, waves []RolloutWave) {
	if r == nil {
		return
	}
	r.waves.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
	for _, w := range waves {
		r.waves.WithLabelValues(name, namespace, w.Name, "total").Set(float64(w.Total))
		r.waves.WithLabelValues(name, namespace, w.Name, "updated").Set(float64(w.Updated))
		r.waves.WithLabelValues(name, namespace, w.Name, "failed").Set(float64(w.Failed))
	}
}

// TenantRolloutStopped counts a rollout stopped by a failed wave.
func (r *Recorder) TenantRolloutStopped(namespace, name string) {
	if r == nil {
		return
	}
	r.rollback.WithLabelValues(name, namespace).Inc()
}

// ProviderRolledBack counts a provider upgrade to version that failed and
// is rolled back.
func (r *Recorder) ProviderRolledBack(kind, namespace, name, version string) {
	if r == nil {
		return
	}
	r.providerRollback.WithLabelValues(kind, name, namespace, version).Inc()
}

// Forget deletes every series of an object (it was deleted).
func (r *Recorder) Forget(kind, namespace, name string) {
	if r == nil {
		return
	}
	match := prometheus.Labels{"kind": kind, "name": name, "namespace": namespace}
	r.duration.DeletePartialMatch(match)
	r.info.DeletePartialMatch(match)
	r.upgrade.DeletePartialMatch(match)
	r.providerRollback.DeletePartialMatch(match)
	if kind == "Tenant" {
		r.clusters.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
		r.waves.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
		r.rollback.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
	}
	r.mu.Lock()
	delete(r.last, objectKey{kind, namespace, name})
	r.mu.Unlock()
}

func sameLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
