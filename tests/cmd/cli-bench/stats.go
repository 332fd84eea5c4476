package main

import (
	"fmt"
	"slices"
	"time"
)

// timings are the wall-clock times of the runs of one measurement.
type timings []time.Duration

func (t timings) median() time.Duration {
	s := slices.Sorted(slices.Values(t))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// String is the median with the spread (min–max) and the number of runs.
func (t timings) String() string {
	if len(t) == 0 {
		return "not measured"
	}
	return fmt.Sprintf("median %s (min %s, max %s, n=%d)", round(t.median()), round(slices.Min(t)), round(slices.Max(t)), len(t))
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// verdict compares a figure with its target.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
