package soak

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// The named invariants, each with its letter in issue 46's list.
const (
	Converges              = "converges"
	UnrelatedProviderReady = "unrelated-provider-ready"
	UnaffectedStackKept    = "unaffected-stack-kept"
	IdleNoWrites           = "idle-no-writes"
	NoWriteStorm           = "no-write-storm"
	UserObjectsKept        = "user-objects-kept"
	NoOrphanFluxObjects    = "no-orphan-flux-objects"
	NoDuplicates           = "no-duplicates"
	RolloutResumes         = "rollout-resumes"
	NoUpwardTrend          = "no-upward-trend"
	ChurnTakesEffect       = "churn-takes-effect"
)

// invariantMeanings are what each invariant holds, for the report; the
// order is the report's.
var invariantMeanings = []struct{ name, letter, meaning string }{
	{Converges, "a", "after every step's fault ends, every provider, Tenant and contract Cluster converges (Ready for its generation, on the version or revision expected; a contract Cluster's control plane initialized at its version and its infrastructure provisioned, both carried over to the Cluster) within the bound"},
	{UnrelatedProviderReady, "b", "a provider's Ready never goes False during a step that does not concern it"},
	{UnaffectedStackKept, "b", "a Tenant the step does not concern keeps its stack: each cluster's Kustomization or HelmRelease exists (and is not Ready=False unless something is broken), and the stack's objects stay on every reachable workload server"},
	{IdleNoWrites, "c", "the manager writes nothing in an idle window (no churn, no chaos, after convergence)"},
	{NoWriteStorm, "c", "the manager's writes from a fault's end until convergence stay within twice the objects it keeps, plus 50"},
	{UserObjectsKept, "d", "every object the soak made and did not delete itself (providers, Tenants, Clusters, CapwrightControlPlanes, CapwrightClusters, Secrets, ConfigMaps, Namespaces) still exists with the same UID"},
	{NoOrphanFluxObjects, "d", "every OCIRepository, Kustomization, HelmRelease and ExternalArtifact on the management cluster has a controller owner that exists"},
	{NoDuplicates, "d", "a Tenant's cluster has one stack object of each kind (and a namespace Kustomization at most), under its expected name, and one status line; a contract object has one OCIRepository and one HelmRelease or Kustomization, under their expected name"},
	{RolloutResumes, "e", "a rollout interrupted by a manager restart resumes where it was: same target revision, completed waves keep their completion, no wave skipped, no failed revision tried again"},
	{NoUpwardTrend, "f", "the manager's RSS and goroutines and the API server's requests per minute have no upward trend over the last two thirds of the run"},
	{ChurnTakesEffect, "", "each churn does what it should: a downgrade is refused and changes nothing, bad input is refused, a mirror copies, a removal uninstalls, a changed value reaches the workload cluster and a contract Cluster's backend"},
}

// Violation is one broken invariant: when, in which step (and the fault
// of that step), on which object, and what was seen.
type Violation struct {
	Time   time.Time
	Step   int // 1-based; 0 before the first step
	Fault  string
	Object string
	Detail string
}

func (v Violation) String() string {
	step := "before the first step"
	if v.Step > 0 {
		step = fmt.Sprintf("step %d (%s)", v.Step, v.Fault)
	}
	return fmt.Sprintf("%s %s: %s: %s", v.Time.UTC().Format("15:04:05"), step, v.Object, v.Detail)
}

// Invariant is a named check, how often it was checked and what broke it.
type Invariant struct {
	Name       string
	Letter     string
	Meaning    string
	Checks     int
	Violations []Violation
}

// recorder collects the invariants' checks and violations; the sampler
// and the step loop both write to it.
type recorder struct {
	mu         sync.Mutex
	invariants map[string]*Invariant
	step       int
	fault      string
	// logf, when set, prints each violation as it is found, so a long
	// run shows what fails before its report.
	logf func(format string, args ...any)
}

func newRecorder() *recorder {
	r := &recorder{invariants: map[string]*Invariant{}}
	for _, m := range invariantMeanings {
		r.invariants[m.name] = &Invariant{Name: m.name, Letter: m.letter, Meaning: m.meaning}
	}
	return r
}

func (r *recorder) setStep(step int, fault string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step, r.fault = step, fault
}

// check counts n checks of invariant name.
func (r *recorder) check(name string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invariants[name].Checks += n
}

// violate records a violation of invariant name in the current step.
func (r *recorder) violate(name, object, format string, args ...any) {
	r.violateAt(time.Now(), name, object, format, args...)
}

func (r *recorder) violateAt(at time.Time, name, object, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	inv := r.invariants[name]
	v := Violation{Time: at, Step: r.step, Fault: r.fault, Object: object, Detail: fmt.Sprintf(format, args...)}
	inv.Violations = append(inv.Violations, v)
	if r.logf != nil {
		r.logf("violation of %s in step %d (%s): %s: %s", name, v.Step, v.Fault, v.Object, v.Detail)
	}
}

// findings are checks and violations held before they are recorded.
type findings struct {
	checks map[string]int
	found  []finding
}

type finding struct {
	at                   time.Time
	name, object, detail string
}

func (f *findings) check(name string, n int) { f.checks[name] += n }

func (f *findings) violate(name, object, format string, args ...any) {
	f.found = append(f.found, finding{time.Now(), name, object, fmt.Sprintf(format, args...)})
}

// record records f's checks and violations, in the current step.
func (r *recorder) record(f *findings) {
	for name, n := range f.checks {
		r.check(name, n)
	}
	for _, x := range f.found {
		r.violateAt(x.at, x.name, x.object, "%s", x.detail)
	}
}

// list is the invariants in the report's order, copied.
func (r *recorder) list() []Invariant {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Invariant
	for _, m := range invariantMeanings {
		inv := *r.invariants[m.name]
		inv.Violations = append([]Violation(nil), inv.Violations...)
		sort.SliceStable(inv.Violations, func(i, j int) bool { return inv.Violations[i].Time.Before(inv.Violations[j].Time) })
		out = append(out, inv)
	}
	return out
}
