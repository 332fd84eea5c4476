// Command soak runs Capwright on the local plane for -duration while a
// seeded schedule of churn and chaos plays, checks issue 46's named
// invariants all along (tests/soak), and writes report.txt and
// report.svg to -out. It exits 1 on any violation, 2 on bad flags and 3
// when the plane could not be started or the run could not go on.
// `make soak` runs it; docs/reliability.md says how to read the report.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/capwright/capwright/tests/plane"
	"github.com/capwright/capwright/tests/soak"
)

func main() {
	var (
		duration                          time.Duration
		seed                              int64
		tenants, clusters, servers        int
		contracts                         int
		out                               string
		idle, bound, sampleEvery, maxHold time.Duration
	)
	flag.DurationVar(&duration, "duration", 60*time.Minute, "how long steps keep starting")
	flag.Int64Var(&seed, "seed", 0, "seed of the schedule (0: from the time; the report and the start of the run print it, for a replay)")
	flag.IntVar(&tenants, "tenants", 50, "Tenants the fleet starts with")
	flag.IntVar(&clusters, "clusters", 20, "Clusters of each Tenant")
	flag.IntVar(&contracts, "contracts", 4, "Clusters whose control plane and infrastructure are Capwright's contract kinds (0: none)")
	flag.IntVar(&servers, "servers", 3, "workload API servers the fleet's Clusters point at (one more takes what churn adds)")
	flag.StringVar(&out, "out", "", "directory for report.txt, report.svg and the plane's logs (default bin/runs/soak-<time>)")
	flag.DurationVar(&idle, "idle", 30*time.Second, "idle window after each step")
	flag.DurationVar(&bound, "converge-bound", 5*time.Minute, "how long every CR has to converge after a fault ends")
	flag.DurationVar(&sampleEvery, "sample-every", 10*time.Second, "how often the sampler reads metrics and checks invariant b")
	flag.DurationVar(&maxHold, "max-hold", 45*time.Second, "longest chaos (a workload server is away twice as long)")
	flag.Parse()
	if duration <= 0 || tenants < 1 || clusters < 1 || servers < 1 || contracts < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "soak: -duration, -tenants, -clusters and -servers must be positive, -contracts not negative, and no arguments follow the flags")
		os.Exit(2)
	}
	if contracts == 0 {
		contracts = -1 // none, where EnvOptions takes 0 for its default
	}
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	if out == "" {
		bin, err := plane.DefaultBinDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(3)
		}
		out = filepath.Join(bin, "runs", "soak-"+time.Now().Format("20060102-150405"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "soak: seed %d, %s, %d tenants × %d clusters on %d workload servers, %d contract clusters; report in %s\n",
		seed, duration, tenants, clusters, servers, max(contracts, 0), out)
	env, err := soak.Start(ctx, soak.EnvOptions{RunDir: filepath.Join(out, "plane"), Tenants: tenants, Clusters: clusters, Contracts: contracts, WorkloadServers: servers, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(3)
	}
	rep, err := env.Run(ctx, soak.Options{Duration: duration, Seed: seed, Out: out, Idle: idle, ConvergeBound: bound,
		SampleEvery: sampleEvery, MinHold: 10 * time.Second, MaxHold: maxHold, Log: os.Stderr})
	if rep != nil {
		fmt.Print(rep.Text())
	}
	code := 0
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "soak:", err)
		code = 3
	case rep.ViolationCount() > 0:
		code = 1
	}
	env.Stop()
	os.Exit(code)
}
