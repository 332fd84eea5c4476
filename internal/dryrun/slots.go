package dryrun

import (
	"context"
	"sync"
)

// slots are the requests a Runner has in flight, across all its Runs: at
// most concurrency, so that many providers upgraded at once ask no harder
// than one. A slot that frees goes to the Run with the most to ask (the
// largest weight, then the first to wait): the provider Flux takes
// longest to apply starts first, which ends the set of upgrades soonest
// (longest first, as a scheduler minimizes the makespan), and that is the
// core provider, which clusterctl also upgrades first.
type slots struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiting []*waiter
}

type waiter struct {
	weight int
	seq    uint64
	ready  chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n} }

// acquire waits for a slot, or for ctx to end.
func (s *slots) acquire(ctx context.Context, weight int) error {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	s.seq++
	w := &waiter{weight: weight, seq: s.seq, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, o := range s.waiting {
			if o == w {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed a slot as ctx ended: pass it on.
		s.handOn()
		return ctx.Err()
	}
}

// release frees a slot taken by acquire.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handOn()
}

// handOn gives a freed slot to the first waiter of the largest weight,
// or keeps it free. s.mu is held.
func (s *slots) handOn() {
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	next := 0
	for i, w := range s.waiting {
		if best := s.waiting[next]; w.weight > best.weight || w.weight == best.weight && w.seq < best.seq {
			next = i
		}
	}
	w := s.waiting[next]
	s.waiting = append(s.waiting[:next], s.waiting[next+1:]...)
	close(w.ready)
}
