package soak

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/capwright/capwright/tests/plane"
)

// Point is one value of a series at a time.
type Point struct {
	Time  time.Time
	Value float64
}

// Trend is a series' figures over the last two thirds of a run:
// invariant f.
type Trend struct {
	Name, Unit string
	Points     int
	Median     float64
	P99        float64
	// SlopePerHour is the Theil–Sen slope (the median of the slopes
	// between every pair of points); Rise is what it adds over the
	// window, Tolerance what the invariant allows.
	SlopePerHour float64
	// LeastSquaresPerHour is the least-squares slope, reported beside it:
	// a fault's spike late in the window moves it.
	LeastSquaresPerHour float64
	Rise                float64
	Tolerance           float64
	// Judged is false when the window was too short or too sparse for a
	// slope to mean anything.
	Judged bool
	Note   string
}

func (t Trend) String() string {
	verdict := "ok"
	switch {
	case !t.Judged:
		verdict = "not judged: " + t.Note
	case t.Rise > t.Tolerance:
		verdict = "UPWARD TREND"
	}
	return fmt.Sprintf("%-24s %4d points  median %9.1f %-5s p99 %9.1f  slope %+9.1f/h (least squares %+9.1f/h)  rise over window %+8.1f (tolerance %.1f)  %s",
		t.Name, t.Points, t.Median, t.Unit, t.P99, t.SlopePerHour, t.LeastSquaresPerHour, t.Rise, t.Tolerance, verdict)
}

// Trend tolerances: a series may rise over the window by this fraction of
// its median, or by the floor, whichever is larger. A quarter of the
// median leaves room for what a run's churn adds (a Tenant more, a
// rollout's sources); a leak adds without end, and over the last two
// thirds of an hour it shows as a slope far beyond it.
const (
	trendFraction    = 0.25
	rssFloorMiB      = 16
	goroutinesFloor  = 30
	requestsFloorMin = 200
)

// warmUp is how long after a manager start its samples are left out of
// the RSS and goroutine trends: a started manager fills its caches.
const warmUp = time.Minute

// series are the run's plotted and judged series.
type series struct {
	rss, goroutines, requests, writes []Point
}

func buildSeries(samples []Sample, writes []plane.Write, from, to time.Time) series {
	var s series
	var prev *Sample
	for i := range samples {
		x := samples[i]
		if !math.IsNaN(x.RSS) {
			s.rss = append(s.rss, Point{x.Time, x.RSS / (1 << 20)})
		}
		if !math.IsNaN(x.Goroutines) {
			s.goroutines = append(s.goroutines, Point{x.Time, x.Goroutines})
		}
		if !math.IsNaN(x.APIRequests) {
			// A restarted API server counts from zero again.
			if prev != nil && x.APIRequests >= prev.APIRequests {
				dt := x.Time.Sub(prev.Time).Minutes()
				if dt > 0 {
					s.requests = append(s.requests, Point{x.Time, (x.APIRequests - prev.APIRequests) / dt})
				}
			}
			prev = &samples[i]
		}
	}
	// Writes a minute, minute by minute.
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		n := 0
		for _, w := range writes {
			if w.Resource != "leases" && !w.Time.Before(m) && w.Time.Before(m.Add(time.Minute)) {
				n++
			}
		}
		s.writes = append(s.writes, Point{m.Add(30 * time.Second), float64(n)})
	}
	return s
}

// trends judges the series over the last two thirds of the run.
func trends(s series, starts []time.Time, from, to time.Time, minWindow time.Duration) []Trend {
	windowStart := from.Add(to.Sub(from) / 3)
	window := to.Sub(windowStart)
	warm := func(t time.Time) bool {
		for _, st := range starts {
			if !t.Before(st) && t.Before(st.Add(warmUp)) {
				return true
			}
		}
		return false
	}
	pick := func(ps []Point, skipWarm bool) []Point {
		var out []Point
		for _, p := range ps {
			if !p.Time.Before(windowStart) && (!skipWarm || !warm(p.Time)) {
				out = append(out, p)
			}
		}
		return out
	}
	out := []Trend{
		judge("manager RSS", "MiB", pick(s.rss, true), window, minWindow, rssFloorMiB),
		judge("manager goroutines", "", pick(s.goroutines, true), window, minWindow, goroutinesFloor),
		judge("API server requests/min", "/min", pick(averaged(s.requests, requestsPeriod), false), window, minWindow, requestsFloorMin),
	}
	return out
}

// requestsPeriod is what the API server's requests a minute are averaged
// over before they are judged: the stacks' interval (the Tenant default,
// 10m). Every stack Kustomization reconciles once an interval, and the
// fleet's were made together, so the requests come in a wave each
// interval; a window that ends on a wave (or on a workload server down,
// when kustomize-controller retries its stacks) reads as a rise although
// nothing grows. Averaged over the interval, a wave is spread over its
// period, and what grows (a hot loop, requeues piling up) still shows.
const requestsPeriod = 10 * time.Minute

// averaged is the series' moving average over period: at each point, the
// mean of the points in the period before it (in a run shorter than the
// period, of every point so far).
func averaged(ps []Point, period time.Duration) []Point {
	out := make([]Point, 0, len(ps))
	from, sum := 0, 0.0
	for i, p := range ps {
		sum += p.Value
		for p.Time.Sub(ps[from].Time) >= period {
			sum -= ps[from].Value
			from++
		}
		out = append(out, Point{p.Time, sum / float64(i-from+1)})
	}
	return out
}

func judge(name, unit string, ps []Point, window, minWindow time.Duration, floor float64) Trend {
	t := Trend{Name: name, Unit: unit, Points: len(ps)}
	if len(ps) == 0 {
		t.Note = "no samples"
		return t
	}
	values := make([]float64, len(ps))
	for i, p := range ps {
		values[i] = p.Value
	}
	t.Median, t.P99 = quantile(values, 0.5), quantile(values, 0.99)
	t.SlopePerHour = theilSen(ps) * 60
	t.LeastSquaresPerHour = slope(ps) * 60
	t.Rise = t.SlopePerHour * window.Hours()
	t.Tolerance = math.Max(trendFraction*t.Median, floor)
	switch {
	case window < minWindow:
		t.Note = fmt.Sprintf("the last two thirds of the run (%s) are shorter than %s", window.Round(time.Second), minWindow)
	case len(ps) < 10:
		t.Note = fmt.Sprintf("%d samples", len(ps))
	default:
		t.Judged = true
	}
	return t
}

// theilSen is the Theil–Sen slope of the points, per minute: the median
// of the slopes between every pair. A fault's spike (a restarted API
// server's clients listing everything again) moves a least-squares line
// but not this median, which follows what the series does between
// faults.
func theilSen(ps []Point) float64 {
	var slopes []float64
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if dx := ps[j].Time.Sub(ps[i].Time).Minutes(); dx > 0 {
				slopes = append(slopes, (ps[j].Value-ps[i].Value)/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	sort.Float64s(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}

// slope is the least-squares slope of the points, per minute.
func slope(ps []Point) float64 {
	if len(ps) < 2 {
		return 0
	}
	t0 := ps[0].Time
	var sx, sy, sxx, sxy float64
	for _, p := range ps {
		x := p.Time.Sub(t0).Minutes()
		sx += x
		sy += p.Value
		sxx += x * x
		sxy += x * p.Value
	}
	n := float64(len(ps))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// quantile is the q-quantile of values (nearest rank).
func quantile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}
