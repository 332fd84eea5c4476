package provider

import (
	"context"
	"sync"
	"testing"
	"time"
)

// One dry run at a time, and a core provider waiting goes before the
// others waiting; a cancelled wait gives its place up.
func TestDryRunsTakeTurnsCoreFirst(t *testing.T) {
	g := NewDryRuns()
	ctx := context.Background()
	if err := g.enter(ctx, false); err != nil { // a bootstrap provider's dry run runs
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	run := func(name string, core bool) {
		defer wg.Done()
		if err := g.enter(ctx, core); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		g.leave()
	}
	wg.Add(1)
	go run("control-plane", false)
	time.Sleep(20 * time.Millisecond) // waiting before the core
	wg.Add(1)
	go run("core", true)
	time.Sleep(20 * time.Millisecond)

	cancelled, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- g.enter(cancelled, true) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled wait entered")
	}

	g.leave()
	wg.Wait()
	if len(order) != 2 || order[0] != "core" || order[1] != "control-plane" {
		t.Errorf("dry runs ran in the order %v, want the core's first", order)
	}
	// Idle again: anyone enters at once, and a nil DryRuns never waits.
	if err := g.enter(ctx, false); err != nil {
		t.Fatal(err)
	}
	g.leave()
	var none *DryRuns
	if err := none.enter(ctx, false); err != nil {
		t.Fatal(err)
	}
	none.leave()
}
