package shell

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Written remembers, for each object the shell wrote, the resourceVersions
// the object had before those writes, until the informer cache has caught
// up with them. A reconcile woken in between (a Flux object's status
// changed a few milliseconds after the shell's write) reads the object as
// it was before the write, and acting on it would do again, and write
// again, what the write recorded: a reconcile request handled twice, a
// transition recorded as two events. The shell skips such a stale read and
// looks again as soon as the cache has the write: CaughtUp passes the
// object's next update, which the kind's status-blind watch would drop
// (staleRetry is only the fallback). The zero value is ready to use.
//
// It also remembers when the shell last wrote each object's status, so a
// status that only rewords its conditions is written at most every
// progressEvery.
type Written struct {
	mu    sync.Mutex
	stale map[types.UID][]string
	// waiting holds the objects whose last reconcile was skipped as stale.
	waiting    map[types.UID]bool
	lastStatus map[types.UID]time.Time
}

// statusWritten records that the object's status was written at.
func (w *Written) statusWritten(uid types.UID, at time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastStatus == nil {
		w.lastStatus = map[types.UID]time.Time{}
	}
	w.lastStatus[uid] = at
}

// statusWrittenAt is when the object's status was last written, and
// whether that is known.
func (w *Written) statusWrittenAt(uid types.UID) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.lastStatus[uid]
	return at, ok
}

// wrote records that a write moved the object from resourceVersion before
// to after; a write the API server found to change nothing (the same
// resourceVersion) leaves no stale version behind.
func (w *Written) wrote(uid types.UID, before, after string) {
	if w == nil || before == "" || before == after {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale == nil {
		w.stale = map[types.UID][]string{}
	}
	w.stale[uid] = append(w.stale[uid], before)
}

// isStale tells whether resourceVersion is one the object had before the
// shell's last writes. A read of any other version means the cache has
// caught up (resourceVersions only move forward), and the record is
// dropped.
func (w *Written) isStale(uid types.UID, resourceVersion string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rv := range w.stale[uid] {
		if rv == resourceVersion {
			if w.waiting == nil {
				w.waiting = map[types.UID]bool{}
			}
			w.waiting[uid] = true
			return true
		}
	}
	delete(w.stale, uid)
	delete(w.waiting, uid)
	return false
}

// CaughtUp passes the update that brings the cache past the shell's
// writes to an object whose reconcile was skipped as stale, so that
// reconcile runs again at once rather than after staleRetry. Under load
// the cache can lag the shell's own write by a few hundred milliseconds,
// and a Flux object's news (Ready at the new revision) is what arrives in
// between. Add it to the predicates of the kind's own watch.
func (w *Written) CaughtUp() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew != nil && w.caughtUp(e.ObjectNew.GetUID(), e.ObjectNew.GetResourceVersion())
		},
	}
}

// caughtUp tells whether the object waits for the cache and
// resourceVersion is past the shell's writes; it stops the wait.
func (w *Written) caughtUp(uid types.UID, resourceVersion string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.waiting[uid] {
		return false
	}
	for _, rv := range w.stale[uid] {
		if rv == resourceVersion {
			return false
		}
	}
	delete(w.waiting, uid)
	return true
}

// forget drops what is remembered of a deleted object.
func (w *Written) forget(uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.stale, uid)
	delete(w.waiting, uid)
	delete(w.lastStatus, uid)
}
