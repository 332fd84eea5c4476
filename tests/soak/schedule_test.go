package soak

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func scheduleOptions(seed int64) ScheduleOptions {
	return ScheduleOptions{Seed: seed, Steps: 60, Tenants: 8, Clusters: 3, Servers: 2, MinHold: 5 * time.Second, MaxHold: 20 * time.Second}
}

// A seed draws one schedule: a failing run replays with -seed.
func TestScheduleIsAFunctionOfItsSeed(t *testing.T) {
	a, b := NewSchedule(scheduleOptions(7)), NewSchedule(scheduleOptions(7))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 7 drew two schedules:\n%s\n%s", a, b)
	}
	if c := NewSchedule(scheduleOptions(8)); reflect.DeepEqual(a.Steps, c.Steps) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
}

// The first steps cover every churn and chaos kind, the second restarts
// the manager mid-rollout, and no step acts on what does not exist then.
func TestScheduleCoversEveryKindAndStaysPossible(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		s := NewSchedule(scheduleOptions(seed))
		first := len(ChaosKinds) + 1
		if len(ChurnKinds) >= len(ChaosKinds) {
			first = len(ChurnKinds) + 1
		}
		churns, chaos := map[Churn]bool{}, map[Chaos]bool{}
		for _, st := range s.Steps[:first] {
			churns[st.Churn], chaos[st.Chaos] = true, true
		}
		for _, k := range ChaosKinds {
			if !chaos[k] {
				t.Errorf("seed %d: chaos %s is not among the first %d steps", seed, k, first)
			}
		}
		// Churn that needs something to act on may turn into its
		// opposite; the others are all there.
		for _, k := range []Churn{TagBump, BadRevision, ValuesChange, BadInput, Mirror} {
			if !churns[k] {
				t.Errorf("seed %d: churn %s is not among the first %d steps", seed, k, first)
			}
		}
		if st := s.Steps[1]; st.Churn != TagBump || st.Chaos != ManagerKill || st.Tenant != "soak-t01" && st.Tenant != "soak-t02" {
			t.Errorf("seed %d: step 2 is %s, want a rollout tenant's tag bump with the manager killed", seed, st)
		}
		upgraded := map[string]bool{"core": true}
		tenants := map[string]bool{}
		for i := range 8 {
			tenants[tenantName(i)] = true
		}
		churned := map[string]string{}
		for _, st := range s.Steps {
			switch st.Churn {
			case ProviderUpgrade:
				if upgraded[st.Provider] {
					t.Errorf("seed %d: %s upgrades %s again", seed, st, st.Provider)
				}
				upgraded[st.Provider] = true
			case ProviderDowngrade:
				if !upgraded[st.Provider] {
					t.Errorf("seed %d: %s downgrades %s, which is not upgraded", seed, st, st.Provider)
				}
			case TenantAdd:
				tenants[st.Tenant] = true
			case TenantRemove:
				if !tenants[st.Tenant] || st.Tenant[:6] != "soak-x" {
					t.Errorf("seed %d: %s removes a tenant the soak did not add", seed, st)
				}
				delete(tenants, st.Tenant)
				delete(churned, st.Tenant)
			case ClusterAdd:
				if _, ok := churned[st.Tenant]; ok || !tenants[st.Tenant] {
					t.Errorf("seed %d: %s adds a second churn cluster, or to a tenant that is not there", seed, st)
				}
				churned[st.Tenant] = st.Cluster
			case ClusterRemove:
				if churned[st.Tenant] != st.Cluster {
					t.Errorf("seed %d: %s removes a cluster the soak did not add", seed, st)
				}
				delete(churned, st.Tenant)
			case TagBump, ValuesChange, BadRevision:
				if !tenants[st.Tenant] {
					t.Errorf("seed %d: %s names a tenant that is not there", seed, st)
				}
			}
			if st.Chaos != NoChaos && (st.Hold < 5*time.Second || st.Hold > 40*time.Second) {
				t.Errorf("seed %d: %s holds for %s", seed, st, st.Hold)
			}
		}
	}
}

func TestSlopeAndQuantiles(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	var rising, flat []Point
	for i := range 60 {
		rising = append(rising, Point{t0.Add(time.Duration(i) * time.Minute), 100 + 2*float64(i)})
		flat = append(flat, Point{t0.Add(time.Duration(i) * time.Minute), 100 + float64(i%2)})
	}
	if s := slope(rising); s < 1.999 || s > 2.001 {
		t.Errorf("slope of 2 a minute: %v", s)
	}
	if s := theilSen(rising); s < 1.999 || s > 2.001 {
		t.Errorf("Theil–Sen slope of 2 a minute: %v", s)
	}
	// A spike near the end (a restart's relist) lifts a least-squares
	// line, not the median slope.
	spiked := append([]Point(nil), flat...)
	for i := 50; i < 53; i++ {
		spiked[i].Value = 5000
	}
	if s := theilSen(spiked); s > 0.1 {
		t.Errorf("three spiked points make a flat series rise %v a minute", s)
	}
	if s := slope(spiked); s < 1 {
		t.Errorf("the least-squares slope of the spiked series is %v; the spike should move it", s)
	}
	up := judge("rss", "MiB", rising, 40*time.Minute, 10*time.Minute, 16)
	if !up.Judged || up.Rise <= up.Tolerance {
		t.Errorf("a steady rise of 2 MiB a minute is not an upward trend: %s", up)
	}
	if ok := judge("rss", "MiB", flat, 40*time.Minute, 10*time.Minute, 16); !ok.Judged || ok.Rise > ok.Tolerance {
		t.Errorf("a flat series is an upward trend: %s", ok)
	}
	if short := judge("rss", "MiB", rising, 2*time.Minute, 10*time.Minute, 16); short.Judged {
		t.Errorf("a two-minute window was judged: %s", short)
	}
	if q := quantile([]float64{5, 1, 3, 2, 4}, 0.5); q != 3 {
		t.Errorf("median of 1..5 = %v", q)
	}
}

func TestSumMetric(t *testing.T) {
	text := []byte(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
go_goroutines_extra 7
apiserver_request_total{code="200",verb="GET"} 10
apiserver_request_total{code="201",verb="POST"} 5
process_resident_memory_bytes 1.2e+08
`)
	for name, want := range map[string]float64{"go_goroutines": 42, "apiserver_request_total": 15, "process_resident_memory_bytes": 1.2e8} {
		if got := sumMetric(text, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// The API server's requests come in a wave each stack interval, and a
// workload server down makes kustomize-controller retry its stacks: the
// hour of seed 14 (its samples in testdata), judged point by point, read
// as an upward trend although the fleet only grew by a few Tenants.
// Averaged over the interval it does not, while requests that really
// grow still do.
func TestRequestsAreJudgedOverTheStacksInterval(t *testing.T) {
	samples := readSamples(t, "testdata/samples-seed14.csv")
	from, to := samples[0].Time, samples[len(samples)-1].Time
	s := buildSeries(samples, nil, from, to)
	windowStart := from.Add(to.Sub(from) / 3)
	var window []Point
	for _, p := range s.requests {
		if !p.Time.Before(windowStart) {
			window = append(window, p)
		}
	}
	if raw := judge("requests", "/min", window, to.Sub(windowStart), 10*time.Minute, requestsFloorMin); raw.Rise <= raw.Tolerance {
		t.Fatalf("the run's requests unaveraged do not rise, so this test shows nothing: %s", raw)
	}
	for _, tr := range trends(s, nil, from, to, 10*time.Minute) {
		if !tr.Judged || tr.Rise > tr.Tolerance {
			t.Errorf("the hour of seed 14: %s", tr)
		}
	}

	var growing []Point
	for i := range 360 { // an hour, every 10s, growing 150 a minute
		at := from.Add(time.Duration(i) * 10 * time.Second)
		growing = append(growing, Point{at, 2500 + float64(i%3)*100 + 150*at.Sub(from).Minutes()})
	}
	if got := judge("requests", "/min", averaged(growing, requestsPeriod)[120:], 40*time.Minute, 10*time.Minute, requestsFloorMin); !got.Judged || got.Rise <= got.Tolerance {
		t.Errorf("requests growing 150 a minute, averaged, are not an upward trend: %s", got)
	}
	if a := averaged([]Point{{from, 10}, {from.Add(time.Minute), 20}}, requestsPeriod); a[1].Value != 15 {
		t.Errorf("the average of a run shorter than the period is of every point so far: %v", a)
	}
}

// readSamples reads a report's samples.csv.
func readSamples(t *testing.T, path string) []Sample {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return v
		}
		return math.NaN()
	}
	var out []Sample
	for _, r := range rows[1:] {
		at, err := time.Parse(time.RFC3339, r[0])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Sample{Time: at, RSS: num(r[1]) * (1 << 20), Goroutines: num(r[2]), APIRequests: num(r[3])})
	}
	return out
}

// A Flux object a fault left failed (its status write lost to a
// restarting etcd) is the fault's fallout until Flux's next retry, not a
// stack an unrelated step broke.
func TestFalloutLastsUntilFluxRetries(t *testing.T) {
	r := &runner{}
	before := &metav1.Condition{LastTransitionTime: metav1.NewTime(time.Now().Add(-30 * time.Second))}
	if r.fallout(before) {
		t.Error("with no fault yet, a failed stack is fallout")
	}
	r.faultEnd = time.Now().Add(-20 * time.Second)
	if !r.fallout(before) {
		t.Error("a stack that failed during the fault is not fallout 20s after it")
	}
	if r.fallout(&metav1.Condition{LastTransitionTime: metav1.NewTime(time.Now())}) {
		t.Error("a stack that failed after the fault ended is fallout")
	}
	r.faultEnd = time.Now().Add(-falloutGrace - time.Second)
	if r.fallout(&metav1.Condition{LastTransitionTime: metav1.NewTime(r.faultEnd.Add(-time.Minute))}) {
		t.Error("a stack still failed past Flux's retry is fallout")
	}
}

// A sampler check records what it found only when the step did not
// change under it: a Tenant the next step adds or removes is not one the
// step before left alone.
func TestAFindingOutlivesNoStepChange(t *testing.T) {
	r := &runner{rec: newRecorder()}
	r.setConcerns(concerns{})
	before := r.currentConcerns()
	r.setConcerns(concerns{tenants: map[string]bool{"soak-x02": true}})
	if r.currentConcerns().seq == before.seq {
		t.Fatal("setting the concerns left their seq as it was")
	}
	f := &findings{checks: map[string]int{}}
	f.check(UnaffectedStackKept, 2)
	f.violate(UnaffectedStackKept, "Kustomization a/b", "gone")
	r.rec.record(f)
	for _, inv := range r.rec.list() {
		if inv.Name == UnaffectedStackKept && (inv.Checks != 2 || len(inv.Violations) != 1 || inv.Violations[0].Object != "Kustomization a/b") {
			t.Errorf("recorded %+v", inv)
		}
	}
}
