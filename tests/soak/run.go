package soak

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/plane"
)

// Options shape a run.
type Options struct {
	// Duration is how long steps keep starting (default 3m); the step
	// running at its end finishes.
	Duration time.Duration
	// Seed draws the schedule; 0 takes the time.
	Seed int64
	// Out receives report.txt and report.svg (default: soak-<time> in the
	// plane's run directory).
	Out string
	// ConvergeBound is how long every CR has to converge after a step's
	// fault ends (default 4m).
	ConvergeBound time.Duration
	// Idle is the idle window after each step (default 20s), Settle the
	// wait between convergence and the window (default 10s): what the
	// manager writes on its way to convergence lands before the window.
	Idle, Settle time.Duration
	// SampleEvery is how often the sampler looks (default 5s).
	SampleEvery time.Duration
	// MinHold and MaxHold bound a chaos's length (default 5s–20s).
	MinHold, MaxHold time.Duration
	// TrendWindow is the shortest last two thirds of a run whose trends
	// are judged (default 10m): over a shorter one a slope says nothing.
	TrendWindow time.Duration
	// Inject breaks an invariant on purpose, to prove the soak sees it.
	Inject []Injection
	// Schedule, when set, is played instead of one drawn from Seed.
	Schedule *Schedule
	// Log receives progress lines; default io.Discard.
	Log io.Writer
}

// Injection is a violation the soak commits itself.
type Injection string

const (
	// InjectDeleteUserObject deletes one of the user's ConfigMaps in the
	// first step, as a buggy controller would: user-objects-kept must
	// report it.
	InjectDeleteUserObject Injection = "delete-user-object"
	// InjectIdleWrite makes the manager write in the first idle window
	// (a reconcile request on a Tenant, which it passes on to Flux):
	// idle-no-writes must report it.
	InjectIdleWrite Injection = "idle-write"
)

func (o Options) withDefaults(e *Env) Options {
	if o.Duration <= 0 {
		o.Duration = 3 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if o.Out == "" {
		o.Out = filepath.Join(e.RunDir(), "soak-"+time.Now().Format("150405"))
	}
	if o.ConvergeBound <= 0 {
		o.ConvergeBound = 4 * time.Minute
	}
	if o.Idle <= 0 {
		o.Idle = 20 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 10 * time.Second
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
	}
	if o.MinHold <= 0 {
		o.MinHold = 5 * time.Second
	}
	if o.MaxHold < o.MinHold {
		o.MaxHold = max(o.MinHold, 20*time.Second)
	}
	if o.TrendWindow <= 0 {
		o.TrendWindow = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

func (o Options) injects(i Injection) bool {
	for _, x := range o.Inject {
		if x == i {
			return true
		}
	}
	return false
}

// runner plays a schedule on an Env.
type runner struct {
	e    *Env
	f    *fleet
	o    Options
	rec  *recorder
	tail *plane.AuditTail

	mu sync.Mutex
	// concerns is what the current step touches; the sampler holds the
	// others to invariant b.
	concerns concerns
	// writes are the manager's writes seen so far (from the audit log).
	writes []plane.Write
	// samples are the sampler's metrics.
	samples []Sample
	// managerStarts are when the manager (re)started.
	managerStarts []time.Time
	// resume is the rollout interrupted by a manager restart in the
	// current step, if any.
	resume *rolloutSnapshot
	// steps are the steps played, with their timings.
	steps []StepResult
	// failedRevisions are, per rollout tenant, the revisions that failed.
	failedRevisions map[string]map[string]bool
	// servers are clients of the workload servers.
	servers map[int]client.Client
	// stuck are the objects that did not converge within a step's bound:
	// reported then, left out of later steps' convergence.
	stuck map[string]bool
	// managerMu is held by whoever stops and starts the manager: a
	// chaos, or the kubelet stand-in.
	managerMu sync.Mutex
	// selfExits are when the manager exited without the soak's doing.
	selfExits []time.Time
	// faultEnd is when the last chaos ended: a Flux object a fault left
	// failed is fallout until Flux's next retry (falloutGrace).
	faultEnd time.Time
}

// concerns are what a step touches.
type concerns struct {
	providers map[string]bool // by type
	tenants   map[string]bool
	servers   map[int]bool
	// chaos is the step's: with one, a Flux object may fail for a while
	// for a reason that is not Capwright's (its source unreachable).
	chaos Chaos
	// seq counts the concerns set: a check that began under one seq and
	// ends under another saw two steps.
	seq int
}

// StepResult is a step played.
type StepResult struct {
	Step Step
	// Start, FaultEnd and Converged are when the step started, its chaos
	// ended (or its churn was written), and everything had converged
	// (zero when it did not within the bound).
	Start, FaultEnd, Converged time.Time
	// Convergence is Converged - FaultEnd.
	Convergence time.Duration
	// Writes are the manager's writes from FaultEnd until convergence.
	Writes int
	// Notes say what the step did that the schedule does not.
	Notes []string
}

// Run plays a schedule drawn from o.Seed for o.Duration on the Env and
// returns the report, also written to o.Out. The error is for a run that
// could not go on (the plane is gone), not for violations: those are the
// report's.
func (e *Env) Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults(e)
	if err := keepDir(o.Out); err != nil {
		return nil, err
	}
	sched := NewSchedule(ScheduleOptions{Seed: o.Seed, Steps: int(o.Duration/(20*time.Second)) + 4,
		Tenants: e.opts.Tenants, Clusters: e.opts.Clusters, Servers: e.opts.WorkloadServers, MinHold: o.MinHold, MaxHold: o.MaxHold})
	if o.Schedule != nil {
		sched = *o.Schedule
	}
	fmt.Fprintf(o.Log, "%s", sched)
	tail, err := e.Plane.AuditTail()
	if err != nil {
		return nil, err
	}
	r := &runner{e: e, f: e.fleet, o: o, rec: newRecorder(), tail: tail, failedRevisions: map[string]map[string]bool{}, stuck: map[string]bool{},
		managerStarts: []time.Time{e.managerStarted}}
	r.rec.logf = r.logf
	start := time.Now()
	sampleCtx, stopSampler := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() { r.sample(sampleCtx) })
	sampler.Go(func() { r.kubelet(sampleCtx) })

	// The fleet converged at Start: a first idle window, once what led
	// there has landed.
	time.Sleep(o.Settle)
	r.checkIdle(ctx, false)
	for i, st := range sched.Steps {
		// At least one step, however short the run.
		if (i > 0 && time.Since(start) >= o.Duration) || ctx.Err() != nil {
			break
		}
		r.play(ctx, st)
	}
	stopSampler()
	sampler.Wait()
	r.readWrites()
	rep := r.report(sched, start, time.Now())
	if err := rep.write(o.Out); err != nil {
		return rep, err
	}
	e.logf("report in %s (%d violations)", filepath.Join(o.Out, "report.txt"), rep.ViolationCount())
	return rep, ctx.Err()
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.o.Log, "%s soak: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// play runs one step: the churn's write, the chaos, convergence, the
// churn's own checks, the ownership checks and an idle window.
func (r *runner) play(ctx context.Context, st Step) {
	res := StepResult{Step: st, Start: time.Now()}
	r.rec.setStep(st.Index+1, st.Kind())
	r.setConcerns(r.concernsOf(st))
	r.logf("%s", st)
	verify, note := r.churn(ctx, st)
	verify = r.churnContract(ctx, st, verify)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if st.Index == 0 && r.o.injects(InjectDeleteUserObject) {
		res.Notes = append(res.Notes, r.injectDelete(ctx))
	}
	if st.Chaos != NoChaos {
		r.chaos(ctx, st)
	}
	res.FaultEnd = time.Now()
	if st.Chaos != NoChaos {
		r.mu.Lock()
		r.faultEnd = res.FaultEnd
		r.mu.Unlock()
	}
	pending := r.waitConverged(ctx, r.o.ConvergeBound)
	r.rec.check(Converges, 1)
	if len(pending) == 0 {
		res.Converged = time.Now()
		res.Convergence = res.Converged.Sub(res.FaultEnd)
	} else {
		for _, p := range pending {
			who, what, _ := strings.Cut(p, ": ")
			r.rec.violate(Converges, who, "not converged %s after the fault ended: %s", r.o.ConvergeBound, what)
			// Reported once: later steps do not wait for it again, or one
			// object stuck would cost every step its bound.
			r.stuck[who] = true
			res.Notes = append(res.Notes, who+" did not converge; later steps leave it out of convergence")
		}
	}
	r.checkResumed(ctx)
	if verify != nil {
		verify(ctx)
	}
	r.setConcerns(concerns{})
	time.Sleep(r.o.Settle)
	res.Writes = r.checkStorm(ctx, st, res.FaultEnd)
	r.checkOwnership(ctx)
	r.mu.Lock()
	r.steps = append(r.steps, res)
	r.mu.Unlock()
	if res.Converged.IsZero() {
		r.logf("step %d: NOT CONVERGED within %s: %s", st.Index+1, r.o.ConvergeBound, summarize(pending, 3))
	} else {
		r.logf("step %d converged in %s", st.Index+1, res.Convergence.Round(100*time.Millisecond))
	}
	r.checkIdle(ctx, st.Index == 0 && r.o.injects(InjectIdleWrite))
}

// concernsOf is what a step touches: the providers and tenants its
// churn changes, the workload server its chaos takes away. The core
// provider's churn concerns every provider: the others depend on it.
func (r *runner) concernsOf(st Step) concerns {
	c := concerns{providers: map[string]bool{}, tenants: map[string]bool{}, servers: map[int]bool{}, chaos: st.Chaos}
	switch st.Churn {
	case ProviderUpgrade, ProviderDowngrade:
		c.providers[st.Provider] = true
		if st.Provider == "core" {
			for _, t := range providerTypes() {
				c.providers[t] = true
			}
		}
	case NoChurn, BadInput, Mirror:
	default:
		c.tenants[st.Tenant] = true
	}
	if st.Chaos == WorkloadDown {
		c.servers[st.Server] = true
	}
	return c
}

func (r *runner) setConcerns(c concerns) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.seq = r.concerns.seq + 1
	r.concerns = c
}

func (r *runner) currentConcerns() concerns {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.concerns
}

// waitConverged waits up to bound for every CR to converge and returns
// what has not.
func (r *runner) waitConverged(ctx context.Context, bound time.Duration) []string {
	deadline := time.Now().Add(bound)
	var pending []string
	for {
		p, err := r.f.unconverged(ctx)
		p = slices.DeleteFunc(p, func(s string) bool {
			who, _, _ := strings.Cut(s, ": ")
			return r.stuck[who]
		})
		if err == nil {
			if len(p) == 0 {
				return nil
			}
			pending = p
		} else if pending == nil {
			pending = []string{"the API server: " + err.Error()}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return pending
		}
		time.Sleep(time.Second)
	}
}

// readWrites reads the audit log's new entries and keeps the manager's.
func (r *runner) readWrites() {
	ws, err := r.tail.Next()
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range ws {
		if w.User == plane.CapwrightUser {
			r.writes = append(r.writes, w)
		}
	}
}

// writesBetween are the manager's writes in [from, to), leader election
// left out: its lease, and the Event a replica records when it takes it.
func (r *runner) writesBetween(from, to time.Time) []plane.Write {
	r.readWrites()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []plane.Write
	for _, w := range r.writes {
		election := w.Resource == "leases" || (w.Resource == "events" && strings.HasPrefix(w.Name, leaseName+"."))
		if !election && !w.Time.Before(from) && w.Time.Before(to) {
			out = append(out, w)
		}
	}
	return out
}

// checkIdle keeps an idle window and checks that the manager wrote
// nothing in it; inject makes it write.
func (r *runner) checkIdle(ctx context.Context, inject bool) {
	from := time.Now()
	if inject {
		r.injectIdleWrite(ctx)
	}
	time.Sleep(r.o.Idle)
	to := time.Now()
	// What was written just before the end is in the log a moment later.
	time.Sleep(time.Second)
	r.rec.check(IdleNoWrites, 1)
	ws := r.writesBetween(from, to)
	if len(ws) == 0 {
		return
	}
	counts, keys := plane.CountWrites(ws)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	first := ws[0]
	r.rec.violate(IdleNoWrites, first.Resource+" "+first.Namespace+"/"+first.Name, "%d writes by the manager in the %s idle window from %s: %s; first %s",
		len(ws), r.o.Idle, from.UTC().Format("15:04:05"), strings.Join(parts, ", "), first)
}

// injectDelete deletes a user's ConfigMap behind the soak's back.
func (r *runner) injectDelete(ctx context.Context) string {
	names := r.f.tenantNames()
	if len(names) == 0 {
		return "inject: no tenant"
	}
	ns := clusterNamespace(names[0])
	cm := userDataConfigMap(ns)
	if err := r.e.Client.Delete(ctx, cm); err != nil {
		return "inject: " + err.Error()
	}
	return "injected: deleted ConfigMap " + ns + "/soak-user-data, which the soak still counts as the user's"
}

// injectIdleWrite asks a Tenant for a reconcile, which the manager passes
// on to its Flux objects and records in its status: writes.
func (r *runner) injectIdleWrite(ctx context.Context) {
	names := r.f.tenantNames()
	if len(names) == 0 {
		return
	}
	if err := requestReconcile(ctx, r.e.Client, names[len(names)-1]); err != nil {
		r.logf("inject: %v", err)
	}
}
