package shell

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// WhenServed is a manager Runnable that asks every Every whether a kind
// is served and, once it is, runs Then once: the way a controller starts
// watching a kind installed after the manager (Cluster API, often
// installed by the manager's own provider controllers) without a restart.
// A watch of a kind not served would stop the whole manager. It runs on
// the leader, as the controllers do.
//
// With OnDemand it does not ask before Want is called: a controller starts
// watching the kind only once one of its objects needs it: a watch costs
// the manager a cache of every object of the kind, and the API server
// sends it every change of them.
type WhenServed struct {
	// Kind names the kind in logs.
	Kind     string
	Served   func() (bool, error)
	Every    time.Duration
	OnDemand bool
	Then     func(ctx context.Context) error

	once sync.Once
	want chan struct{}
}

func (w *WhenServed) wanted() chan struct{} {
	w.once.Do(func() { w.want = make(chan struct{}, 1) })
	return w.want
}

// Want says that an object needs the kind watched: an OnDemand WhenServed
// starts asking, and any asks again at once instead of at its next tick.
// It never blocks, and does nothing once Then ran or on a nil WhenServed.
func (w *WhenServed) Want() {
	if w == nil {
		return
	}
	select {
	case w.wanted() <- struct{}{}:
	default:
	}
}

// Start polls until the kind is served, then runs Then.
func (w *WhenServed) Start(ctx context.Context) error {
	want := w.wanted()
	if w.OnDemand {
		select {
		case <-ctx.Done():
			return nil
		case <-want:
		}
	}
	tick := time.NewTicker(w.Every)
	defer tick.Stop()
	for {
		served, err := w.Served()
		if err != nil {
			log.FromContext(ctx).Error(err, "asking whether a kind is served", "kind", w.Kind)
		}
		if served {
			return w.Then(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-want:
		}
	}
}
