package dryrun

import (
	"context"
	"testing"
	"time"
)

// A freed slot goes to the heaviest waiter, then the first of equal
// weight; no more than n are taken at once; a waiter whose context ends
// leaves the queue, and one handed a slot as it ends passes it on.
func TestSlotsGoToTheHeaviestFirst(t *testing.T) {
	ctx := context.Background()
	s := newSlots(1)
	if err := s.acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	wait := func(weight int) {
		go func() {
			if err := s.acquire(ctx, weight); err != nil {
				t.Error(err)
				return
			}
			order <- weight
		}()
		waitFor(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.waiting) > 0 && s.waiting[len(s.waiting)-1].weight == weight
		})
	}
	wait(10)
	wait(30)
	wait(20)
	canceled, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- s.acquire(canceled, 100) }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiting) == 4 })
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a canceled wait took a slot")
	}
	for _, want := range []int{30, 20, 10} {
		s.release()
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("slot went to weight %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no waiter got the slot, want weight %d", want)
		}
		select {
		case got := <-order:
			t.Fatalf("weight %d got a second slot while one is free", got)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.release()
	if s.free != 1 || len(s.waiting) != 0 {
		t.Errorf("free %d, waiting %d after all released, want 1, 0", s.free, len(s.waiting))
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
