package framework

import (
	"testing"
	"time"
)

// Settled reads a state once a second until it is ready and three reads
// in a row agree (equal), and returns the last: what the plane's own
// controllers still write after an install (Cluster API's CRD migrator
// marks its CRDs one at a time, seconds after its manager starts, later
// on a loaded machine) is then done, and a test that compares before and
// after sees only its own change. It fails t, naming what, after a
// minute.
func Settled[T any](t testing.TB, what string, read func() (state T, ready bool), equal func(a, b T) bool) T {
	t.Helper()
	last, _ := read()
	same := 0
	for range 60 {
		time.Sleep(time.Second)
		now, ready := read()
		if ready && equal(now, last) {
			if same++; same == 2 {
				return now
			}
		} else {
			same = 0
		}
		last = now
	}
	t.Fatalf("%s kept changing for a minute: %v", what, last)
	return last
}
