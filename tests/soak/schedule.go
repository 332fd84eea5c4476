package soak

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Churn is a change a platform or tenant team makes.
type Churn string

// The churn kinds.
const (
	NoChurn           Churn = ""
	ProviderUpgrade   Churn = "provider-upgrade"
	ProviderDowngrade Churn = "provider-downgrade"
	TagBump           Churn = "tag-bump"
	BadRevision       Churn = "bad-revision"
	ValuesChange      Churn = "values-change"
	TenantAdd         Churn = "tenant-add"
	TenantRemove      Churn = "tenant-remove"
	ClusterAdd        Churn = "cluster-add"
	ClusterRemove     Churn = "cluster-remove"
	BadInput          Churn = "bad-input"
	Mirror            Churn = "mirror"
)

// Chaos is something around Capwright that breaks.
type Chaos string

// The chaos kinds.
const (
	NoChaos          Chaos = ""
	ManagerKill      Chaos = "manager-kill"
	FluxKill         Chaos = "flux-kill"
	APIServerRestart Chaos = "apiserver-restart"
	EtcdRestart      Chaos = "etcd-restart"
	RegistryDown     Chaos = "registry-down"
	RegistryHang     Chaos = "registry-hang"
	ReleaseHostDown  Chaos = "release-host-down"
	WorkloadDown     Chaos = "workload-down"
	StorageWipe      Chaos = "storage-wipe"
	CAPIManagerKill  Chaos = "capi-manager-kill"
	LeaderFailover   Chaos = "leader-failover"
)

// ChurnKinds and ChaosKinds are every kind, in the order the schedule
// first covers them.
var (
	ChurnKinds = []Churn{ProviderUpgrade, ProviderDowngrade, TagBump, BadRevision, ValuesChange, TenantAdd, TenantRemove, ClusterAdd, ClusterRemove, BadInput, Mirror}
	ChaosKinds = []Chaos{ManagerKill, FluxKill, APIServerRestart, EtcdRestart, RegistryDown, RegistryHang, ReleaseHostDown, WorkloadDown, StorageWipe, CAPIManagerKill, LeaderFailover}
)

// FluxControllers are the Flux processes flux-kill picks from.
func FluxControllers() []string {
	out := []string{"source-controller", "kustomize-controller", "helm-controller"}
	for _, s := range FluxShards {
		out = append(out, "kustomize-controller-"+s)
	}
	return out
}

// Step is one entry of the schedule: a churn and a chaos that happen at
// the same time (either may be none). The churn's write comes first, then
// the chaos starts and holds for Hold; then the run waits for
// convergence and keeps an idle window.
type Step struct {
	Index int
	Churn Churn
	Chaos Chaos
	// Tenant is the churn's tenant (by name); Provider its provider type.
	Tenant   string
	Provider string
	// Cluster names the cluster cluster-remove removes.
	Cluster string
	// BadInput indexes BadInputs.
	BadInput int
	// Component is the Flux controller flux-kill kills; Server the
	// workload server workload-down takes away.
	Component string
	Server    int
	Hold      time.Duration
}

// Kind names the step for the report's per-kind figures: the chaos when
// there is one, else the churn.
func (s Step) Kind() string {
	switch {
	case s.Chaos != NoChaos && s.Churn != NoChurn:
		return string(s.Chaos) + "+" + string(s.Churn)
	case s.Chaos != NoChaos:
		return string(s.Chaos)
	}
	return string(s.Churn)
}

func (s Step) String() string {
	var parts []string
	if s.Churn != NoChurn {
		c := string(s.Churn)
		switch s.Churn {
		case ProviderUpgrade, ProviderDowngrade:
			c += " " + s.Provider
		case TagBump, BadRevision, ValuesChange, TenantAdd, TenantRemove, ClusterAdd:
			c += " " + s.Tenant
		case ClusterRemove:
			c += " " + s.Tenant + "/" + s.Cluster
		case BadInput:
			c += " " + BadInputs[s.BadInput].Name
		}
		parts = append(parts, c)
	}
	if s.Chaos != NoChaos {
		c := string(s.Chaos)
		switch s.Chaos {
		case FluxKill:
			c += " " + s.Component
		case WorkloadDown:
			c += fmt.Sprintf(" server %d", s.Server+1)
		}
		parts = append(parts, fmt.Sprintf("%s for %s", c, s.Hold))
	}
	return fmt.Sprintf("step %3d: %s", s.Index+1, strings.Join(parts, " during "))
}

// Schedule is the steps drawn from a seed.
type Schedule struct {
	Seed  int64
	Steps []Step
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule of seed %d (%d steps; replay with -seed %d):\n", s.Seed, len(s.Steps), s.Seed)
	for _, st := range s.Steps {
		b.WriteString("  " + st.String() + "\n")
	}
	return b.String()
}

// ScheduleOptions shape a schedule.
type ScheduleOptions struct {
	Seed int64
	// Steps is how many steps to draw; a run plays as many as its
	// duration allows.
	Steps int
	// Tenants and Clusters are the fleet's starting size, Servers its
	// workload servers (the churn server not counted).
	Tenants, Clusters, Servers int
	// MinHold and MaxHold bound how long a chaos lasts.
	MinHold, MaxHold time.Duration
}

// NewSchedule draws a schedule. It is a function of its options alone:
// the same seed and sizes give the same steps. The first steps cover
// every churn and every chaos kind once (in an order of the seed's),
// the second pairs a tag bump of a rollout tenant with a manager kill
// (a restart mid-rollout); the rest are drawn at random. The schedule
// keeps its own account of what exists (upgraded providers, added
// tenants and clusters), so that each step names something it can act
// on.
func NewSchedule(o ScheduleOptions) Schedule {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x50a4))
	m := newScheduleModel(o)
	churns := append([]Churn(nil), ChurnKinds...)
	chaos := append([]Chaos(nil), ChaosKinds...)
	rng.Shuffle(len(churns), func(i, j int) { churns[i], churns[j] = churns[j], churns[i] })
	rng.Shuffle(len(chaos), func(i, j int) { chaos[i], chaos[j] = chaos[j], chaos[i] })
	var steps []Step
	for i := range o.Steps {
		var st Step
		switch {
		case i == 1:
			st = Step{Churn: TagBump, Chaos: ManagerKill}
		case i < max(len(churns), len(chaos))+1:
			k := i
			if i > 1 {
				k = i - 1
			}
			if k < len(churns) {
				st.Churn = churns[k]
			}
			if k < len(chaos) {
				st.Chaos = chaos[k]
			}
		default:
			if rng.IntN(5) > 0 {
				st.Churn = ChurnKinds[rng.IntN(len(ChurnKinds))]
			}
			if rng.IntN(3) > 0 || st.Churn == NoChurn {
				st.Chaos = ChaosKinds[rng.IntN(len(ChaosKinds))]
			}
		}
		st.Index = i
		m.fill(rng, &st, i == 1)
		steps = append(steps, st)
	}
	return Schedule{Seed: o.Seed, Steps: steps}
}

// scheduleModel is what the schedule knows of the fleet as its steps
// change it.
type scheduleModel struct {
	o        ScheduleOptions
	upgraded map[string]bool
	// tenants that exist, the rollout tenants among them, the extra
	// tenants churn added, and the churn cluster of each tenant that has
	// one.
	tenants  []string
	rollouts []string
	extras   []string
	churned  map[string]string
	nextX    int
	nextC    int
}

func newScheduleModel(o ScheduleOptions) *scheduleModel {
	// The core provider is installed at the newer version.
	m := &scheduleModel{o: o, upgraded: map[string]bool{"core": true}, churned: map[string]string{}}
	rollouts := max(1, o.Tenants/4)
	for i := range o.Tenants {
		m.tenants = append(m.tenants, tenantName(i))
		if i >= 1 && i <= rollouts {
			m.rollouts = append(m.rollouts, tenantName(i))
		}
	}
	return m
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// fill names what the step acts on, turning a churn that cannot happen
// (a downgrade before any upgrade, a removal with nothing added) into
// its opposite.
func (m *scheduleModel) fill(rng *rand.Rand, st *Step, midRollout bool) {
	types := providerTypes()
	var notUpgraded, upgraded []string
	for _, t := range types {
		if m.upgraded[t] {
			upgraded = append(upgraded, t)
		} else {
			notUpgraded = append(notUpgraded, t)
		}
	}
	switch {
	case st.Churn == ProviderDowngrade && len(upgraded) == 0:
		st.Churn = ProviderUpgrade
	case st.Churn == ProviderUpgrade && len(notUpgraded) == 0:
		st.Churn = ProviderDowngrade
	case st.Churn == TenantRemove && len(m.extras) == 0:
		st.Churn = TenantAdd
	case st.Churn == ClusterRemove && len(m.churned) == 0:
		st.Churn = ClusterAdd
	case st.Churn == ClusterAdd && len(m.churned) == len(m.tenants):
		st.Churn = ClusterRemove
	}
	switch st.Churn {
	case ProviderUpgrade:
		st.Provider = notUpgraded[0]
		m.upgraded[st.Provider] = true
	case ProviderDowngrade:
		st.Provider = pick(rng, upgraded)
	case TagBump, BadRevision:
		if midRollout || st.Churn == BadRevision {
			st.Tenant = pick(rng, m.rollouts)
		} else {
			st.Tenant = pick(rng, m.tenants)
		}
	case ValuesChange:
		st.Tenant = pick(rng, m.tenants)
	case TenantAdd:
		m.nextX++
		st.Tenant = extraTenantName(m.nextX)
		m.tenants = append(m.tenants, st.Tenant)
		m.extras = append(m.extras, st.Tenant)
	case TenantRemove:
		k := rng.IntN(len(m.extras))
		st.Tenant = m.extras[k]
		m.extras = append(m.extras[:k], m.extras[k+1:]...)
		for i, t := range m.tenants {
			if t == st.Tenant {
				m.tenants = append(m.tenants[:i], m.tenants[i+1:]...)
				break
			}
		}
		delete(m.churned, st.Tenant)
	case ClusterAdd:
		var free []string
		for _, t := range m.tenants {
			if _, ok := m.churned[t]; !ok {
				free = append(free, t)
			}
		}
		st.Tenant = pick(rng, free)
		m.nextC++
		st.Cluster = fmt.Sprintf("churn-%02d", m.nextC)
		m.churned[st.Tenant] = st.Cluster
	case ClusterRemove:
		var with []string
		for _, t := range m.tenants {
			if _, ok := m.churned[t]; ok {
				with = append(with, t)
			}
		}
		st.Tenant = pick(rng, with)
		st.Cluster = m.churned[st.Tenant]
		delete(m.churned, st.Tenant)
	case BadInput:
		st.BadInput = rng.IntN(len(BadInputs))
	}
	if st.Chaos != NoChaos {
		span := m.o.MaxHold - m.o.MinHold
		st.Hold = m.o.MinHold
		if span > 0 {
			st.Hold += time.Duration(rng.Int64N(int64(span)/int64(time.Second)+1)) * time.Second
		}
	}
	switch st.Chaos {
	case FluxKill:
		st.Component = pick(rng, FluxControllers())
	case WorkloadDown:
		st.Server = rng.IntN(m.o.Servers)
		// A workload cluster is away for minutes at a time.
		st.Hold *= 2
	case ManagerKill, APIServerRestart, EtcdRestart, StorageWipe, CAPIManagerKill, LeaderFailover:
		// A process restarts in seconds; what matters is what happens
		// around it.
		st.Hold = min(st.Hold, 5*time.Second)
	}
}
