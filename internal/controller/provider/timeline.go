package provider

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/health"
)

// The steps of an install or upgrade, in the order they happen. Each is
// the time since the manager first reconciled the provider's generation.
const (
	stepPreflight = "preflight" // preflight passed: artifact checked, contract compatible
	stepWritten   = "written"   // the Flux objects hold the checked revision
	stepSource    = "source"    // the OCIRepository is Ready with the checked artifact
	stepApplied   = "applied"   // Flux applied it and runs the health checks
	stepHealthy   = "healthy"   // Flux found it healthy (the applier is Ready at it)
	stepReady     = "ready"     // Installed, so Ready, folded into the provider
)

var steps = []string{stepPreflight, stepWritten, stepSource, stepApplied, stepHealthy, stepReady}

// installSeconds is the time from a provider generation first seen to each
// step, by kind: where an install's time goes, for dashboards and for
// comparing Flux's own share with Capwright's.
var installSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "capwright_provider_install_step_seconds",
	Help:    "Seconds from the manager first seeing a provider's generation to each step of its install or upgrade (preflight, written, source, applied, healthy, ready).",
	Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600},
}, []string{"kind", "step"})

var registerOnce sync.Once

// Timelines keeps, per provider, when each step of the install or upgrade
// of its current generation happened, as the manager observed it. When the
// provider turns Ready the timeline is logged ("install timeline", with
// seconds per step) and recorded in capwright_provider_install_step_seconds,
// once; a provider's entry lives until it is deleted. The manager observes Flux's progress through its watches
// of the Flux objects, so the steps are as precise as those events are
// timely (milliseconds), not Flux's second-granular condition times.
type Timelines struct {
	mu sync.Mutex
	m  map[types.UID]*timeline
}

type timeline struct {
	generation int64
	// done is set once the generation is Ready (or was when first seen):
	// nothing more is recorded for it.
	done    bool
	version string
	start   time.Time
	at      map[string]time.Duration
}

// maxTimelines bounds the memory of providers that never turn Ready.
const maxTimelines = 4096

// NewTimelines registers the metric and returns an empty set.
func NewTimelines() *Timelines {
	registerOnce.Do(func() { metrics.Registry.MustRegister(installSeconds) })
	return &Timelines{m: map[types.UID]*timeline{}}
}

// seen starts the timeline of the provider's generation unless it runs.
func (t *Timelines) seen(obj v1alpha1.Provider, now time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tl := t.m[obj.GetUID()]; tl != nil && tl.generation == obj.GetGeneration() {
		return
	}
	if len(t.m) >= maxTimelines {
		return
	}
	// A provider already installed at this generation (the manager
	// restarted) has nothing left to time.
	installed := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.InstalledCondition)
	done := installed != nil && installed.Status == metav1.ConditionTrue && installed.ObservedGeneration == obj.GetGeneration()
	t.m[obj.GetUID()] = &timeline{generation: obj.GetGeneration(), version: obj.GetSpec().Version, start: now, at: map[string]time.Duration{}, done: done}
}

// mark records step for the provider's current generation, once.
func (t *Timelines) mark(obj v1alpha1.Provider, step string, now time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tl := t.m[obj.GetUID()]
	if tl == nil || tl.done || tl.generation != obj.GetGeneration() {
		return
	}
	if _, ok := tl.at[step]; !ok {
		tl.at[step] = now.Sub(tl.start)
	}
}

// record puts on the provider's timeline what this reconcile did: its
// preflight passing and its writes, when the sync made them, and, once the
// fold read the Flux objects (res), the steps they show and Ready, which
// logs the timeline and records it in the metric.
func (t *Timelines) record(obj v1alpha1.Provider, kind string, s synced, res *health.ProviderResult, logger logr.Logger) {
	if t == nil {
		return
	}
	if !s.passed.IsZero() {
		t.mark(obj, stepPreflight, s.passed)
	}
	if !s.written.IsZero() {
		t.mark(obj, stepWritten, s.written)
	}
	if res == nil {
		return
	}
	t.observe(obj, *s.in, s.now)
	if res.Installed.Status == metav1.ConditionTrue {
		t.finish(obj, kind, logger, s.now)
	}
}

// observe marks the steps the Flux objects show for the expected revision.
func (t *Timelines) observe(obj v1alpha1.Provider, in health.ProviderInput, now time.Time) {
	if in.ExpectedRevision == "" {
		return
	}
	p := health.InstallProgress(in)
	for step, done := range map[string]bool{stepSource: p.SourceReady, stepApplied: p.Applied, stepHealthy: p.Healthy} {
		if done {
			t.mark(obj, step, now)
		}
	}
}

// finish marks the provider Ready, logs its timeline and records it in
// the metric, once per generation.
func (t *Timelines) finish(obj v1alpha1.Provider, kind string, logger logr.Logger, now time.Time) {
	if t == nil {
		return
	}
	t.mark(obj, stepReady, now)
	t.mu.Lock()
	tl := t.m[obj.GetUID()]
	if tl == nil || tl.done || tl.generation != obj.GetGeneration() {
		t.mu.Unlock()
		return
	}
	tl.done = true
	t.mu.Unlock()
	kv := []any{"version", tl.version, "generation", tl.generation}
	for _, step := range steps {
		d, ok := tl.at[step]
		if !ok {
			continue // a step a restart or a resync did not see
		}
		installSeconds.WithLabelValues(kind, step).Observe(d.Seconds())
		kv = append(kv, step, d.Round(time.Millisecond).Seconds())
	}
	logger.Info("install timeline (seconds since the generation was first seen)", kv...)
}

// forget drops the provider's timeline (it is deleted).
func (t *Timelines) forget(obj v1alpha1.Provider) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, obj.GetUID())
}
