package mirror

import "time"

// SetCacheClock makes c read the time from now: tests age its records.
func SetCacheClock(c *Cache, now func() time.Time) { c.now = now }
