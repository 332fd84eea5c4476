// Command gitops-bench measures the GitOps round trip of a provider
// upgrade: a commit that moves Cluster API's kubeadm control plane
// provider from v1.13.6 to v1.14.2, pushed to the plane's Git server and
// announced with a call to Flux's Receiver (as a Git host's push webhook
// does), until the upgraded provider is Ready. It does so two ways, each
// run on a fresh plane of its own:
//
//   - capwright: the example repository of the install guide
//     (docs/examples/repository, with the site overlay for the plane's
//     registry and its stand-in for github.com), its ControlPlaneProvider
//     first committed at v1.13.6; the upgrade commit sets its spec.version
//     to v1.14.2, as the example is written. Done when the
//     ControlPlaneProvider has status.installedVersion v1.14.2 and is Ready
//     for its generation.
//   - flux: the same flux-system (bootstrap, the ExternalArtifact gate,
//     --requeue-dependency=5s, the Receiver), and hand-written Flux
//     Kustomizations a platform team would commit instead: cert-manager
//     (the plane's cert-manager is its stand-in, certsim: the namespace
//     only), and core, bootstrap and control-plane, each applying the
//     release's components file committed as YAML to its own folder, with
//     prune, wait and clusterctl's variable defaults substituted; core
//     after cert-manager, the other two after core. The upgrade commit
//     replaces the control plane's components file with v1.14.2's. Done
//     when Kustomization control-plane is Ready having applied the commit
//     and its Deployment runs the v1.14.2 image.
//
// The ratio capwright/flux is Capwright's cost on top of bare Flux for the
// same upgrade through Git; the target is within 1.1×.
//
// Common to both, before any clock runs: plane.Start with RunDeployments
// (Flux's controllers are the pods of the Deployments bootstrap applies,
// Capwright's manager runs from its released image, Cluster API's core
// manager from the release Flux installed), the plane's stand-in for
// github.com with Cluster API's real releases, and `flux bootstrap git`
// with the example's flux-system files committed first. Each system then
// pushes its first commit and waits until the three providers are Ready,
// and the plane is left to settle before the upgrade is pushed.
//
// The clock starts when `git push` of the upgrade returns and stops at
// the first poll (every 150 ms, uncached reads) that sees the upgrade
// done; the Receiver call is inside it. Runs alternate which system goes
// first. Per run it prints both times, their ratio and where the time went
// (from the controllers' logs: when source-controller stored the commit,
// when each Kustomization applied it, how often it waited for its
// dependencies, and for Capwright the manager's own timeline of the new
// generation); then medians and spreads.
//
// A program rather than a Go benchmark, like install-bench: one long
// measurement per run, on planes that take minutes to set up. `make
// bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/capwright/capwright/tests/benchstat"
)

func main() {
	runs := flag.Int("runs", 3, "runs per system, each on a fresh plane, alternating which system goes first")
	flag.BoolVar(&verbose, "v", false, "print progress (pushes, bootstrap's output, Capwright's release) to stderr")
	flag.BoolVar(&keepRuns, "keep", false, "keep each plane's run directory (logs) after a successful run")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "gitops-bench:", err)
		os.Exit(1)
	}
}

var (
	verbose  bool
	keepRuns bool
)

func run(runs int) error {
	if _, err := os.Stat("docs/examples/repository"); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*30*time.Minute)
	defer cancel()
	systems := []system{capwright{}, bareFlux{}}
	results := map[string][]result{}
	for i := range runs {
		for j := range systems {
			s := systems[(i+j)%len(systems)] // alternate which system goes first
			fmt.Printf("run %d/%d: %s …\n", i+1, runs, s.Name())
			r, err := runOnce(ctx, s)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.Name(), i+1, err)
			}
			fmt.Printf("  first push → three providers Ready %.2fs; upgrade push → Ready %.2fs (plane CPU %.1fs)\n", r.Install.Seconds(), r.Upgrade.Seconds(), total(r.CPU))
			fmt.Printf("    %s\n", formatSteps(r.Steps))
			results[s.Name()] = append(results[s.Name()], r)
		}
		a, b := results["capwright"][i], results["flux"][i]
		fmt.Printf("run %d: capwright %.2fs, flux %.2fs, capwright/flux %.2f×\n", i+1, a.Upgrade.Seconds(), b.Upgrade.Seconds(), a.Upgrade.Seconds()/b.Upgrade.Seconds())
	}
	report(systems, results)
	return nil
}

// result is one run of one system.
type result struct {
	// Install is from the first push to the three providers Ready;
	// Upgrade from the upgrade's push to the upgraded provider Ready.
	Install, Upgrade time.Duration
	// Steps are where the upgrade's time went, from the logs.
	Steps []step
	// CPU is the CPU seconds of each plane process (by command name)
	// during the upgrade.
	CPU map[string]float64
}

// step is a moment of the upgrade, in seconds after the push.
type step struct {
	Name string
	At   float64
	// Took is how long the reconcile that ended at At took (0: not a
	// reconcile); Waits, how often it was put off first because a
	// dependency was not Ready at the commit.
	Took  float64
	Waits int
	// Health is how long that reconcile's health check took (Flux's
	// Healthy condition), when it had one.
	Health float64
}

func formatSteps(steps []step) string {
	var parts []string
	for _, s := range steps {
		if s.At < 0 {
			parts = append(parts, s.Name+" (not in the logs)")
			continue
		}
		part := fmt.Sprintf("%s +%.2fs", s.Name, s.At)
		var notes []string
		if s.Took > 0 {
			notes = append(notes, fmt.Sprintf("took %.2fs", s.Took))
		}
		if s.Health > 0 {
			notes = append(notes, fmt.Sprintf("health check %.2fs", s.Health))
		}
		if s.Waits > 0 {
			notes = append(notes, fmt.Sprintf("%d dependsOn wait(s)", s.Waits))
		}
		if len(notes) > 0 {
			part += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// spread is "median (min–max)".
func spread(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", benchstat.Median(v), slices.Min(v), slices.Max(v))
}

func report(systems []system, results map[string][]result) {
	fmt.Println("\nprovider upgrade through Git: push of the commit + the Receiver → the kubeadm control plane provider Ready at v1.14.2;")
	fmt.Println("each run of each system on a fresh plane (2 shared cores), runs alternating which system goes first")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\truns\tupgrade s: median (min–max)\tfirst push → 3 Ready s: median (min–max)\tplane CPU s during the upgrade: median (min–max)")
	for _, s := range systems {
		rs := results[s.Name()]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Name(), len(rs),
			spread(benchstat.Collect(rs, func(r result) float64 { return r.Upgrade.Seconds() })),
			spread(benchstat.Collect(rs, func(r result) float64 { return r.Install.Seconds() })),
			spread(benchstat.Collect(rs, func(r result) float64 { return total(r.CPU) })))
	}
	_ = tw.Flush()

	a, b := results["capwright"], results["flux"]
	up := func(r result) float64 { return r.Upgrade.Seconds() }
	var perRun []float64
	for i := range min(len(a), len(b)) {
		perRun = append(perRun, a[i].Upgrade.Seconds()/b[i].Upgrade.Seconds())
	}
	verdict := func(r float64) string {
		if r <= 1.1 {
			return "within 1.1×"
		}
		return "OVER 1.1×"
	}
	if len(perRun) > 0 {
		ratio := benchstat.Median(benchstat.Collect(a, up)) / benchstat.Median(benchstat.Collect(b, up))
		fmt.Printf("capwright / flux, ratio of medians: %.2f× (%s)\n", ratio, verdict(ratio))
		fmt.Printf("capwright / flux, per run: %.2f× median (%.2f–%.2f)\n", benchstat.Median(perRun), slices.Min(perRun), slices.Max(perRun))
	}

	fmt.Println("\nwhere the upgrade's time goes, medians in seconds after the push (from the controllers' logs):")
	for _, s := range systems {
		rs := results[s.Name()]
		if len(rs) == 0 {
			continue
		}
		var steps []step
		for _, first := range rs[0].Steps {
			get := func(f func(step) float64) float64 {
				var v []float64
				for _, r := range rs {
					for _, st := range r.Steps {
						if st.Name == first.Name && st.At >= 0 {
							v = append(v, f(st))
						}
					}
				}
				if len(v) == 0 {
					return -1
				}
				return benchstat.Median(v)
			}
			steps = append(steps, step{Name: first.Name, At: get(func(s step) float64 { return s.At }),
				Waits: max(0, int(math.Round(get(func(s step) float64 { return float64(s.Waits) })))),
				Took:  max(0, get(func(s step) float64 { return s.Took })), Health: max(0, get(func(s step) float64 { return s.Health }))})
		}
		sortSteps(steps)
		fmt.Printf("  %s: %s\n", s.Name(), formatSteps(steps))
	}

	fmt.Println("\nCPU seconds during the upgrade by process, medians (gitops-bench holds the Git server, certsim and the registry):")
	names := map[string]bool{}
	for _, s := range systems {
		for _, r := range results[s.Name()] {
			for n, v := range r.CPU {
				if v >= 0.05 {
					names[n] = true
				}
			}
		}
	}
	var procs []string
	for n := range names {
		procs = append(procs, n)
	}
	slices.Sort(procs)
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "system\tall\t%s\n", strings.Join(procs, "\t"))
	for _, s := range systems {
		rs := results[s.Name()]
		cells := []string{fmt.Sprintf("%.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return total(r.CPU) })))}
		for _, n := range procs {
			cells = append(cells, fmt.Sprintf("%.2f", benchstat.Median(benchstat.Collect(rs, func(r result) float64 { return r.CPU[n] }))))
		}
		fmt.Fprintf(tw, "%s\t%s\n", s.Name(), strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}
