package clusterwatch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
)

// A LateWatch asks nothing before an object wants Clusters; then, once
// they are served, it starts and reads from the cache. A nil one ignores
// everything.
func TestLateWatch(t *testing.T) {
	var none *LateWatch
	none.Want()
	if none.Reader() != nil {
		t.Error("a nil LateWatch reads")
	}

	asked := make(chan struct{}, 10)
	var served atomic.Bool
	w := &LateWatch{Cache: &informertest.FakeInformers{}, Every: 10 * time.Millisecond, For: "tests",
		Served: func() (bool, error) {
			select {
			case asked <- struct{}{}:
			default:
			}
			return served.Load(), nil
		}}
	started := make(chan struct{})
	w.OnStart(func(context.Context) error { close(started); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	select {
	case <-asked:
		t.Fatal("asked whether Clusters are served before anything wanted them")
	case <-time.After(50 * time.Millisecond):
	}
	if w.Reader() != nil {
		t.Fatal("reads from the cache before the watches run")
	}
	w.Want()
	<-asked
	served.Store(true)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("did not start once Clusters were served")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Reader() == nil {
		t.Error("does not read from the cache once the watches run")
	}
}
