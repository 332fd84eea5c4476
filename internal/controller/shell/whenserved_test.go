package shell

import (
	"context"
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
