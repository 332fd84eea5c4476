package soak

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is what a run found.
type Report struct {
	Seed     int64
	Schedule Schedule
	Planned  time.Duration
	// Start and End bound the run; Steps are the steps played.
	Start, End time.Time
	Steps      []StepResult
	Invariants []Invariant
	Trends     []Trend
	// Bound is the convergence bound of invariant a.
	Bound time.Duration
	Fleet string
	// RunDir holds the plane's logs.
	RunDir string
	// SelfExits are when the manager exited without the soak's doing
	// (a lost lease), and the kubelet stand-in started it again.
	SelfExits []time.Time

	series  series
	samples []Sample
}

// ViolationCount is the number of violations of every invariant.
func (r *Report) ViolationCount() int {
	n := 0
	for _, inv := range r.Invariants {
		n += len(inv.Violations)
	}
	return n
}

// Invariant is the named invariant's record.
func (r *Report) Invariant(name string) Invariant {
	for _, inv := range r.Invariants {
		if inv.Name == name {
			return inv
		}
	}
	return Invariant{Name: name}
}

func (r *runner) report(sched Schedule, start, end time.Time) *Report {
	r.mu.Lock()
	samples := append([]Sample(nil), r.samples...)
	writes := append(r.writes[:0:0], r.writes...)
	starts := append([]time.Time(nil), r.managerStarts...)
	steps := append([]StepResult(nil), r.steps...)
	exits := append([]time.Time(nil), r.selfExits...)
	r.mu.Unlock()
	s := buildSeries(samples, writes, start, end)
	tr := trends(s, starts, start, end, r.o.TrendWindow)
	for _, t := range tr {
		r.rec.check(NoUpwardTrend, 1)
		if t.Judged && t.Rise > t.Tolerance {
			r.rec.violate(NoUpwardTrend, t.Name, "rises %.1f%s over the last two thirds of the run (slope %+.1f/h, median %.1f), more than the tolerance %.1f",
				t.Rise, t.Unit, t.SlopePerHour, t.Median, t.Tolerance)
		}
	}
	return &Report{
		Seed: sched.Seed, Schedule: sched, Planned: r.o.Duration, Start: start, End: end, Steps: steps,
		Invariants: r.rec.list(), Trends: tr, Bound: r.o.ConvergeBound, RunDir: r.e.RunDir(), SelfExits: exits,
		Fleet: fmt.Sprintf("%d tenants × %d clusters on %d workload servers (+1 for churn), %d contract clusters, kustomize-controller in %d shards besides its main instance",
			r.e.opts.Tenants, r.e.opts.Clusters, r.e.opts.WorkloadServers, len(r.f.contractNames()), len(FluxShards)),
		series: s, samples: samples,
	}
}

// faultFigures are a step kind's count and convergence times.
type faultFigures struct {
	kind      string
	count     int
	converged []time.Duration
	failed    int
}

func (r *Report) faults() []faultFigures {
	byKind := map[string]*faultFigures{}
	for _, s := range r.Steps {
		kinds := []string{}
		if s.Step.Chaos != NoChaos {
			kinds = append(kinds, string(s.Step.Chaos))
		}
		if s.Step.Churn != NoChurn {
			kinds = append(kinds, string(s.Step.Churn))
		}
		for _, k := range kinds {
			f := byKind[k]
			if f == nil {
				f = &faultFigures{kind: k}
				byKind[k] = f
			}
			f.count++
			if s.Converged.IsZero() {
				f.failed++
			} else {
				f.converged = append(f.converged, s.Convergence)
			}
		}
	}
	var out []faultFigures
	for _, f := range byKind {
		sort.Slice(f.converged, func(i, j int) bool { return f.converged[i] < f.converged[j] })
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind < out[j].kind })
	return out
}

// Text is the report as text.
func (r *Report) Text() string {
	var b strings.Builder
	verdict := "PASS"
	if n := r.ViolationCount(); n > 0 {
		verdict = fmt.Sprintf("FAIL: %d violations", n)
	}
	fmt.Fprintf(&b, "Capwright soak, seed %d (replay: -seed %d)\n", r.Seed, r.Seed)
	fmt.Fprintf(&b, "  %s to %s: %s played of %s planned, %d of %d scheduled steps\n", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.TimeOnly),
		r.End.Sub(r.Start).Round(time.Second), r.Planned, len(r.Steps), len(r.Schedule.Steps))
	fmt.Fprintf(&b, "  fleet: %s\n  logs: %s\n", r.Fleet, r.RunDir)
	if len(r.SelfExits) > 0 {
		exits := make([]string, len(r.SelfExits))
		for i, t := range r.SelfExits {
			exits[i] = t.UTC().Format(time.TimeOnly)
		}
		fmt.Fprintf(&b, "  the manager exited by itself %d times (a leader that cannot renew its lease exits), started again after %s as the kubelet would: %s\n",
			len(r.SelfExits), kubeletBackOff, strings.Join(exits, ", "))
	} else {
		fmt.Fprintf(&b, "  the manager never exited by itself (a leader that cannot renew its lease exits)\n")
	}
	fmt.Fprintf(&b, "Result: %s\n\n", verdict)

	fmt.Fprintf(&b, "Invariants (checks, violations):\n")
	for _, inv := range r.Invariants {
		letter := inv.Letter
		if letter == "" {
			letter = "-"
		}
		fmt.Fprintf(&b, "  (%s) %-24s %7d checks %4d violations  %s\n", letter, inv.Name, inv.Checks, len(inv.Violations), inv.Meaning)
		for i, v := range inv.Violations {
			if i == 20 {
				fmt.Fprintf(&b, "        … and %d more\n", len(inv.Violations)-20)
				break
			}
			fmt.Fprintf(&b, "        %s\n", v)
		}
	}

	fmt.Fprintf(&b, "\nConvergence after each fault (bound %s), per kind:\n", r.Bound)
	fmt.Fprintf(&b, "  %-22s %5s %10s %10s %s\n", "kind", "steps", "median", "worst", "not converged")
	for _, f := range r.faults() {
		median, worst := "-", "-"
		if n := len(f.converged); n > 0 {
			median = f.converged[n/2].Round(100 * time.Millisecond).String()
			worst = f.converged[n-1].Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %-22s %5d %10s %10s %d\n", f.kind, f.count, median, worst, f.failed)
	}

	fmt.Fprintf(&b, "\nTrends over the last two thirds of the run (invariant f; tolerance: a rise of %.0f%% of the median or the floor, whichever is larger):\n", trendFraction*100)
	for _, t := range r.Trends {
		fmt.Fprintf(&b, "  %s\n", t)
	}

	fmt.Fprintf(&b, "\nSteps played:\n")
	for _, s := range r.Steps {
		conv := "NOT CONVERGED"
		if !s.Converged.IsZero() {
			conv = "converged in " + s.Convergence.Round(100*time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s  [%s, %s; %d manager writes until then]\n", s.Step, s.Start.UTC().Format(time.TimeOnly), conv, s.Writes)
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "      %s\n", n)
		}
	}
	fmt.Fprintf(&b, "\n%s", r.Schedule)
	return b.String()
}

// write writes report.txt and report.svg into dir.
func (r *Report) write(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(r.Text()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.svg"), []byte(r.SVG()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(r.samplesCSV()), 0o644)
}

// samplesCSV is every sample of the run, for a look of one's own: the
// time, the manager's RSS (MiB) and goroutines, the API server's request
// counter (empty where it could not be read).
func (r *Report) samplesCSV() string {
	var b strings.Builder
	b.WriteString("time,manager_rss_mib,manager_goroutines,apiserver_requests_total\n")
	field := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	for _, x := range r.samples {
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", x.Time.UTC().Format(time.RFC3339), field(x.RSS/(1<<20)), field(x.Goroutines), field(x.APIRequests))
	}
	return b.String()
}
