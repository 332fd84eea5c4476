// Package soak is the smoke of the soak (tests/soak) that make test
// runs: a small fleet on the plane, SOAK_DURATION (default 3m) of seeded
// churn and chaos (SOAK_SEED replays a schedule), failing on any
// violation of the named invariants; and the proof that the soak fails
// when an invariant is broken on purpose.
package soak

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/soak"
)

var env *soak.Env

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	var err error
	env, err = soak.Start(ctx, soak.EnvOptions{Tenants: 4, Clusters: 3, WorkloadServers: 2, Contracts: 1, Log: os.Stderr})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "soak: FAILED; logs and reports are in %s\n", env.RunDir())
	} else if os.Getenv("CAPWRIGHT_KEEP_RUNS") == "" {
		_ = os.RemoveAll(env.RunDir())
	}
	os.Exit(code)
}

// TestSoakSmoke plays SOAK_DURATION (default 3m) of the seeded schedule
// and fails on any violation, printing the report.
func TestSoakSmoke(t *testing.T) {
	duration := 3 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("SOAK_DURATION")); err == nil {
		duration = d
	}
	var seed int64
	if s, err := strconv.ParseInt(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+15*time.Minute)
	defer cancel()
	rep, err := env.Run(ctx, soak.Options{Duration: duration, Seed: seed, Idle: 15 * time.Second, Settle: 5 * time.Second,
		MinHold: 5 * time.Second, MaxHold: 15 * time.Second, Log: os.Stderr})
	if rep != nil {
		t.Log("\n" + rep.Text())
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.ViolationCount(); n > 0 {
		t.Errorf("%d violations (replay with SOAK_SEED=%d)", n, rep.Seed)
	}
	if len(rep.Steps) == 0 {
		t.Error("no step was played")
	}
}

// TestSoakReportsInjectedViolations breaks two invariants on purpose in
// a one-step run: a user's ConfigMap deleted behind the soak's back, and
// a write the manager makes in the idle window; the report must name
// both, each under its invariant.
func TestSoakReportsInjectedViolations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// A cheap step: a new value for a tenant that follows its tag at once.
	one := soak.Schedule{Seed: 46, Steps: []soak.Step{{Churn: soak.ValuesChange, Tenant: "soak-t02"}}}
	rep, err := env.Run(ctx, soak.Options{Duration: time.Second, Schedule: &one, Idle: 10 * time.Second, Settle: 5 * time.Second,
		Inject: []soak.Injection{soak.InjectDeleteUserObject, soak.InjectIdleWrite}, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Text())
	if len(rep.Steps) != 1 {
		t.Fatalf("%d steps played, want 1", len(rep.Steps))
	}
	deleted := rep.Invariant(soak.UserObjectsKept)
	if len(deleted.Violations) == 0 {
		t.Errorf("the deleted ConfigMap is not reported under %s", soak.UserObjectsKept)
	}
	for _, v := range deleted.Violations {
		if v.Object != "ConfigMap soak-t00-clusters/soak-user-data" || v.Step != 1 {
			t.Errorf("%s reports %s; want the deleted ConfigMap soak-t00-clusters/soak-user-data in step 1", soak.UserObjectsKept, v)
		}
	}
	if idle := rep.Invariant(soak.IdleNoWrites); len(idle.Violations) == 0 {
		t.Errorf("the write in the idle window is not reported under %s", soak.IdleNoWrites)
	}
	if rep.ViolationCount() == 0 {
		t.Error("the run with injected violations passed")
	}
}
