package provider

import (
	"time"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// DefaultInterval is how often a provider without spec.interval is looked
// at again.
const DefaultInterval = 10 * time.Minute

// Interval is how often the provider is looked at again: the shorter of
// spec.interval (DefaultInterval when unset) and the manager's resync
// interval (none when 0).
func Interval(obj v1alpha1.Provider, resync time.Duration) time.Duration {
	interval := DefaultInterval
	if i := obj.GetSpec().Interval; i != nil && i.Duration > 0 {
		interval = i.Duration
	}
	if resync > 0 && resync < interval {
		interval = resync
	}
	return interval
}
