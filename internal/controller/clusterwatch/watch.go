package clusterwatch

// LateWatch is the one late watch of Cluster API's Clusters, for every
// controller that maps Clusters to its own objects while Cluster API may
// be installed after the manager (often by the manager's own provider
// controllers). A watch of a kind that is not served would stop the whole
// manager, and a watch nothing needs costs a cache of every Cluster: so
// the watches start once an object of the controller needs them (Want,
// from its reconcile) and the Cluster kind is served (shell.WhenServed).
//
// Its API, for a controller built before the manager starts:
//
//	w := &clusterwatch.LateWatch{Cache: mgr.GetCache(), Served: served, For: "Tenants"}
//	w.Watch(c, handler)                         // a Cluster watch of controller c
//	w.WatchObject(c, secret, handler, pred)     // another kind that only matters with Clusters
//	w.OnStart(func(ctx context.Context) error)  // once the watches run (wake what waited)
//	mgr.Add(w)                                  // a Runnable; it runs on the leader
//
// and then, from the controller's reconcile:
//
//	w.Want()              // an object needs Clusters watched (a nil LateWatch ignores it)
//	reader := w.Reader()  // the cache once the watches run, nil before
//
// Until the watches run, a controller reads Clusters uncached and polls.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/shell"
)

// DefaultPoll is how often a LateWatch without Every asks whether
// Clusters are served.
const DefaultPoll = 20 * time.Second

// LateWatch starts Cluster watches once Clusters are served and needed.
type LateWatch struct {
	// Cache is the manager's cache the watches read from.
	Cache cache.Cache
	// Served tells whether the API server serves the Cluster kind.
	Served func() (bool, error)
	// Every is how often to ask Served once needed (DefaultPoll if 0).
	Every time.Duration
	// Watching and For say what is watched ("Clusters" if empty) and for
	// whom, in the log line once the watches run: "Cluster API is served
	// now: watching <Watching> for <For>".
	Watching, For string

	mu      sync.Mutex
	watches []lateWatch
	then    []func(context.Context) error
	started atomic.Bool
	served  *shell.WhenServed
	once    sync.Once
}

type lateWatch struct {
	ctrl       controller.Controller
	obj        ctrl.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate
}

// Watch adds a Cluster watch of controller c, started once Clusters are
// served.
func (w *LateWatch) Watch(c controller.Controller, h handler.EventHandler, predicates ...predicate.Predicate) {
	w.WatchObject(c, clusterapi.NewCluster(), h, predicates...)
}

// WatchObject adds a watch of another kind that only matters with
// Clusters (their kubeconfig Secrets), started with the Cluster watches.
func (w *LateWatch) WatchObject(c controller.Controller, obj ctrl.Object, h handler.EventHandler, predicates ...predicate.Predicate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watches = append(w.watches, lateWatch{ctrl: c, obj: obj, handler: h, predicates: predicates})
}

// OnStart runs f once the watches run.
func (w *LateWatch) OnStart(f func(context.Context) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.then = append(w.then, f)
}

// Want says an object needs Clusters watched; it never blocks, and does
// nothing on a nil LateWatch or once the watches run.
func (w *LateWatch) Want() {
	if w == nil {
		return
	}
	w.whenServed().Want()
}

// Reader is the cache once the watches run; nil before (and on a nil
// LateWatch).
func (w *LateWatch) Reader() ctrl.Reader {
	if w == nil || !w.started.Load() {
		return nil
	}
	return w.Cache
}

// Start waits until Clusters are needed and served, then starts the
// watches and the OnStart functions (manager.Runnable).
func (w *LateWatch) Start(ctx context.Context) error {
	return w.whenServed().Start(ctx)
}

func (w *LateWatch) whenServed() *shell.WhenServed {
	w.once.Do(func() {
		every := w.Every
		if every <= 0 {
			every = DefaultPoll
		}
		w.served = &shell.WhenServed{Kind: clusterapi.ClusterGVK.Kind, Served: w.Served, Every: every, OnDemand: true, Then: w.start}
	})
	return w.served
}

func (w *LateWatch) start(ctx context.Context) error {
	w.mu.Lock()
	watches, then := w.watches, w.then
	w.mu.Unlock()
	for _, l := range watches {
		if err := l.ctrl.Watch(source.Kind[ctrl.Object](w.Cache, l.obj, l.handler, l.predicates...)); err != nil {
			return err
		}
	}
	w.started.Store(true)
	watching := w.Watching
	if watching == "" {
		watching = "Clusters"
	}
	log.FromContext(ctx).WithName("clusters").Info("Cluster API is served now: watching " + watching + " for " + w.For)
	for _, f := range then {
		if err := f(ctx); err != nil {
			return err
		}
	}
	return nil
}
