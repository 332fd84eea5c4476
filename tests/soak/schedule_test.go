package soak

import (
	"reflect"
	"testing"
	"time"
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
