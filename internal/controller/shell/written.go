package shell

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Written remembers, for each object the shell wrote, the resourceVersions
// the object had before those writes, until the informer cache has caught
// up with them. A reconcile woken in between (a Flux object's status
// changed a few milliseconds after the shell's write) reads the object as
// it was before the write, and acting on it would do again, and write
// again, what the write recorded: a reconcile request handled twice, a
// transition recorded as two events. The shell skips such a stale read and
// looks again shortly. The zero value is ready to use.
//
// It also remembers when the shell last wrote each object's status, so a
// status that only rewords its conditions is written at most every
// progressEvery.
type Written struct {
	mu         sync.Mutex
	stale      map[types.UID][]string
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
			return true
		}
	}
	delete(w.stale, uid)
	return false
}

// forget drops what is remembered of a deleted object.
func (w *Written) forget(uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.stale, uid)
	delete(w.lastStatus, uid)
}
