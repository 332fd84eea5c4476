package shell

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// WhenServed is a manager Runnable that asks every Every whether a kind
// is served and, once it is, runs Then once: the way a controller starts
// watching a kind installed after the manager (Cluster API, often
// installed by the manager's own provider controllers) without a restart.
// A watch of a kind not served would stop the whole manager. It runs on
// the leader, as the controllers do.
type WhenServed struct {
	// Kind names the kind in logs.
	Kind   string
	Served func() (bool, error)
	Every  time.Duration
	Then   func(ctx context.Context) error
}

// Start polls until the kind is served, then runs Then.
func (w *WhenServed) Start(ctx context.Context) error {
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
		}
	}
}
