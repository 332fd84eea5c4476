package provider

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// recentChecks remembers, per provider, what an object outside the
// manager's cache (the clusterctl inventory, the installer's
// ServiceAccount and ClusterRoleBinding) was last found or written to
// hold, and when. A provider reconciles on every status change of its
// Flux objects, a dozen times or more per install; each would otherwise
// be a read from the API server.
type recentChecks struct {
	m sync.Map // types.UID → recentCheck
}

type recentCheck struct {
	key string
	at  time.Time
}

// fresh tells whether the provider's object was found holding key less
// than maxAge ago.
func (c *recentChecks) fresh(uid types.UID, key string, maxAge time.Duration) bool {
	v, ok := c.m.Load(uid)
	if !ok {
		return false
	}
	rec := v.(recentCheck)
	return rec.key == key && time.Since(rec.at) < maxAge
}

// done records that the provider's object holds key now.
func (c *recentChecks) done(uid types.UID, key string) {
	c.m.Store(uid, recentCheck{key: key, at: time.Now()})
}

// forget makes the next check read the object again.
func (c *recentChecks) forget(uid types.UID) { c.m.Delete(uid) }
