package shell

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWhenServedRunsOnceTheKindIsServed(t *testing.T) {
	asked, ran := 0, 0
	w := &WhenServed{Kind: "Cluster", Every: time.Millisecond,
		Served: func() (bool, error) { asked++; return asked >= 3, nil },
		Then:   func(context.Context) error { ran++; return nil }}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if asked != 3 || ran != 1 {
		t.Fatalf("asked %d times, ran %d times; want 3 and 1", asked, ran)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &WhenServed{Every: time.Hour, Served: func() (bool, error) { return false, nil },
		Then: func(context.Context) error { t.Fatal("ran for a kind never served"); return nil }}
	if err := never.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWhenServedOnDemandWaitsToBeWanted(t *testing.T) {
	asked := make(chan struct{}, 10)
	ran := make(chan struct{})
	var served atomic.Bool
	w := &WhenServed{Kind: "Cluster", Every: time.Hour, OnDemand: true,
		Served: func() (bool, error) { asked <- struct{}{}; return served.Load(), nil },
		Then:   func(context.Context) error { close(ran); return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()

	select {
	case <-asked:
		t.Fatal("asked whether the kind is served before anything wanted it")
	case <-time.After(100 * time.Millisecond):
	}
	w.Want()
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("not asked once wanted")
	}
	// Not served yet: a second Want asks again at once, not at the next
	// tick an hour later.
	served.Store(true)
	w.Want()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("did not run Then when wanted again once the kind was served")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.Want() // after Then: does not block
	var none *WhenServed
	none.Want()
}
