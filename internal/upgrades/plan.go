package upgrades

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/capwright/capwright/internal/clusterctl"
)

// CoreType is the provider type of the core provider, which drives the plan.
const CoreType = "core"

// Why a newer version cannot be installed now (Candidate.Blocked).
const (
	// BlockedContract: the version implements a contract neither the core
	// provider nor any newer core version works with.
	BlockedContract = "ContractMismatch"
	// BlockedCoreFirst: the version needs a newer core provider, which
	// the core's source offers: upgrade the core provider first.
	BlockedCoreFirst = "CoreUpgradeRequired"
	// BlockedProvidersBehind: a core version with a new contract that some
	// other providers have no release for yet.
	BlockedProvidersBehind = "ProvidersBehind"
	// BlockedSeriesUnknown: the metadata.yaml of the newest version has no
	// release series for the version, so its contract is unknown.
	BlockedSeriesUnknown = "SeriesUnknown"
	// BlockedNoCore: there is no core provider (or no plan for it), so no
	// contract to compare with.
	BlockedNoCore = "NoCoreProvider"
)

// Provider is what Plan needs of one installed provider.
type Provider struct {
	// Kind (CoreProvider, …), Namespace and Name identify the provider CR.
	Kind, Namespace, Name string
	// Type is the clusterctl provider type: core, bootstrap, ….
	Type string
	// Version is the installed version (status.installedVersion).
	Version string
	// Source is where the versions were listed (an oci:// repository or a
	// release URL), for messages.
	Source string
	// Versions are the versions the source offers, in any order; those
	// that are not semantic versions are ignored.
	Versions []string
	// Metadata is the metadata.yaml of the newest version offered.
	Metadata *clusterctl.Metadata
	// LatestOnly tells that the source names its latest release only (a
	// release host): older newer versions are not known.
	LatestOnly bool
	// Error says why the source could not be read; Versions and Metadata
	// are then ignored.
	Error string
}

// Candidate is one newer version of a provider: the newest of its release
// series.
type Candidate struct {
	Version string `json:"version"`
	// Series is the release series, vMAJOR.MINOR.
	Series string `json:"series"`
	// Contract is the series' Cluster API contract ("" when unknown).
	Contract string `json:"contract,omitempty"`
	// Blocked is empty when the version can be installed now; else one of
	// the Blocked… reasons, with Message saying what to do.
	Blocked string `json:"blocked,omitempty"`
	Message string `json:"message,omitempty"`
}

// Usable tells whether the candidate can be installed now.
func (c Candidate) Usable() bool { return c.Blocked == "" }

// Result is the plan of one provider.
type Result struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
	Version   string `json:"version"`
	Source    string `json:"source,omitempty"`
	// LatestOnly tells that the source names its latest release only (a
	// release URL): other newer versions may exist.
	LatestOnly bool `json:"latestOnly,omitempty"`
	// Contract is the installed version's contract.
	Contract string `json:"contract,omitempty"`
	// Next is the newest version that can be installed now; "" when none.
	Next string `json:"next,omitempty"`
	// Candidates are the newest version of each newer release series and
	// the newest patch of the installed series, oldest first.
	Candidates []Candidate `json:"candidates"`
	// Error says why the provider could not be planned.
	Error string `json:"error,omitempty"`
}

// Upgradable tells whether a newer version can be installed now.
func (r Result) Upgradable() bool { return r.Next != "" }

// Plan is the upgrade plan of a management cluster.
type Plan struct {
	// Core is namespace/name of the core provider; CoreContract its
	// installed version's contract.
	Core         string   `json:"core,omitempty"`
	CoreContract string   `json:"coreContract,omitempty"`
	Providers    []Result `json:"providers"`
}

// Compute plans the upgrades of providers, the core provider among them,
// by clusterctl's rules (see the package documentation). Results are in
// clusterctl's order: by type (core first), then name and namespace. A
// cluster with several core providers plans against the first of them in
// that order; Capwright's preflight keeps only one installed.
func Compute(providers []Provider) Plan {
	ps := append([]Provider(nil), providers...)
	sort.SliceStable(ps, func(i, j int) bool {
		if a, b := typeOrder(ps[i].Type), typeOrder(ps[j].Type); a != b {
			return a < b
		}
		if ps[i].Name != ps[j].Name {
			return ps[i].Name < ps[j].Name
		}
		return ps[i].Namespace < ps[j].Namespace
	})
	infos := make([]info, len(ps))
	for i := range ps {
		infos[i] = newInfo(ps[i])
	}
	var plan Plan
	core := -1
	for i := range ps {
		if ps[i].Type == CoreType && infos[i].err == "" {
			core = i
			break
		}
	}
	if core >= 0 {
		plan.Core = ps[core].Namespace + "/" + ps[core].Name
		plan.CoreContract = infos[core].contract
	}
	// coreContracts are the contracts of the core's newer versions: what
	// another provider's newer version may need.
	coreNext := map[string]string{} // contract → newest core version implementing it
	if core >= 0 {
		for _, c := range infos[core].candidates {
			if c.Contract != "" && c.Contract != infos[core].contract {
				coreNext[c.Contract] = c.Version // candidates are oldest first
			}
		}
	}
	for i := range ps {
		r := Result{Kind: ps[i].Kind, Namespace: ps[i].Namespace, Name: ps[i].Name, Type: ps[i].Type,
			Version: ps[i].Version, Source: ps[i].Source, LatestOnly: ps[i].LatestOnly, Contract: infos[i].contract, Error: infos[i].err, Candidates: []Candidate{}}
		if r.Error == "" {
			r.Candidates = infos[i].candidates
			for j := range r.Candidates {
				block(&r.Candidates[j], i == core, core, ps, infos, coreNext)
				if r.Candidates[j].Usable() {
					r.Next = r.Candidates[j].Version
				}
			}
		}
		plan.Providers = append(plan.Providers, r)
	}
	return plan
}

// block says whether, and why not, candidate c of provider i can be
// installed now.
func block(c *Candidate, isCore bool, core int, ps []Provider, infos []info, coreNext map[string]string) {
	switch {
	case c.Contract == "":
		c.Blocked = BlockedSeriesUnknown
		c.Message = fmt.Sprintf("the metadata.yaml of the newest version has no release series %s, so the contract of %s is unknown: ask the provider's maintainers to list the series, or check the version's own metadata.yaml", c.Series, c.Version)
		return
	case core < 0:
		c.Blocked = BlockedNoCore
		c.Message = "no core provider could be planned, so there is no contract to check " + c.Version + " against: install the CoreProvider, or fix the error on its line"
		return
	}
	coreContract := infos[core].contract
	if isCore {
		if c.Contract == coreContract {
			return
		}
		// A contract change: every other provider must be able to follow.
		var behind []string
		for i := range ps {
			if i == core {
				continue
			}
			if !canFollow(infos[i], c.Contract) {
				behind = append(behind, fmt.Sprintf("%s %s/%s", ps[i].Kind, ps[i].Namespace, ps[i].Name))
			}
		}
		if len(behind) > 0 {
			c.Blocked = BlockedProvidersBehind
			c.Message = fmt.Sprintf("%s moves the core provider to contract %s, which %s %s no release for: wait for their releases implementing %s (all providers of a management cluster change contract together)",
				c.Version, c.Contract, strings.Join(behind, ", "), hasHave(len(behind)), c.Contract)
		}
		return
	}
	if clusterctl.CheckContractCompatible(coreContract, c.Contract) == nil {
		return
	}
	for _, contract := range sortedKeys(coreNext) {
		if clusterctl.CheckContractCompatible(contract, c.Contract) == nil {
			c.Blocked = BlockedCoreFirst
			c.Message = fmt.Sprintf("%s implements contract %s, which the core provider's %s (contract %s) does not: upgrade the core provider to %s (contract %s) first",
				c.Version, c.Contract, infos[core].version, coreContract, coreNext[contract], contract)
			return
		}
	}
	c.Blocked = BlockedContract
	c.Message = fmt.Sprintf("%s implements contract %s, which neither the core provider's %s (contract %s) nor any newer core version its source offers works with",
		c.Version, c.Contract, infos[core].version, coreContract)
}

// canFollow tells whether a provider has a version — its installed one or
// a newer one — that works with a core implementing contract. (clusterctl
// asks for a newer version in every case; a provider whose installed
// version already works with the new contract does not hold the core
// back here.)
func canFollow(in info, contract string) bool {
	if in.err != "" {
		return false
	}
	if clusterctl.CheckContractCompatible(contract, in.contract) == nil {
		return true
	}
	for _, c := range in.candidates {
		if c.Contract != "" && clusterctl.CheckContractCompatible(contract, c.Contract) == nil {
			return true
		}
	}
	return false
}

// info is what Plan reads of one provider before comparing contracts.
type info struct {
	version    string
	contract   string
	candidates []Candidate
	err        string
}

func newInfo(p Provider) info {
	in := info{version: p.Version}
	if p.Error != "" {
		in.err = p.Error
		return in
	}
	current, err := parse(p.Version)
	if err != nil {
		in.err = fmt.Sprintf("the installed version %q is not a semantic version", p.Version)
		return in
	}
	if p.Metadata == nil {
		in.err = "no metadata.yaml was read for the newest version of " + p.Source
		return in
	}
	contract, ok := seriesContract(p.Metadata, current)
	if !ok {
		in.err = fmt.Sprintf("the metadata.yaml of the newest version at %s has no release series v%d.%d for the installed version %s (clusterctl refuses such metadata too): ask the provider's maintainers to keep every released series in metadata.yaml",
			p.Source, current.Major(), current.Minor(), p.Version)
		return in
	}
	in.contract = contract
	// The newest non-pre-release version of each series newer than the
	// installed version.
	newest := map[[2]uint64]*semver.Version{}
	for _, raw := range p.Versions {
		v, err := parse(raw)
		if err != nil || v.Prerelease() != "" || !v.GreaterThan(current) {
			continue
		}
		key := [2]uint64{v.Major(), v.Minor()}
		if old := newest[key]; old == nil || v.GreaterThan(old) {
			newest[key] = v
		}
	}
	versions := make([]*semver.Version, 0, len(newest))
	for _, v := range newest {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].LessThan(versions[j]) })
	for _, v := range versions {
		c := Candidate{Version: "v" + v.String(), Series: fmt.Sprintf("v%d.%d", v.Major(), v.Minor())}
		c.Contract, _ = seriesContract(p.Metadata, v)
		in.candidates = append(in.candidates, c)
	}
	return in
}

// Newest is the newest semantic version of versions, pre-releases
// included, as clusterctl picks the version whose metadata.yaml it reads;
// "" when none is a semantic version.
func Newest(versions []string) string {
	var best *semver.Version
	var out string
	for _, raw := range versions {
		v, err := parse(raw)
		if err != nil {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, out = v, raw
		}
	}
	return out
}

func seriesContract(m *clusterctl.Metadata, v *semver.Version) (string, bool) {
	for _, s := range m.ReleaseSeries {
		if s.Major >= 0 && s.Minor >= 0 && uint64(s.Major) == v.Major() && uint64(s.Minor) == v.Minor() {
			return s.Contract, true
		}
	}
	return "", false
}

// parse reads vMAJOR.MINOR.PATCH[-pre], the form of provider versions and
// tags; other tags (latest, sha256-….sig) are not versions.
func parse(raw string) (*semver.Version, error) {
	if !strings.HasPrefix(raw, "v") {
		return nil, fmt.Errorf("%q has no leading v", raw)
	}
	return semver.StrictNewVersion(raw[1:])
}

// typeOrder is clusterctl's order of provider types.
func typeOrder(t string) int {
	for i, known := range []string{CoreType, "bootstrap", "control-plane", "infrastructure", "ipam", "runtime-extension", "addon"} {
		if t == known {
			return i
		}
	}
	return 99
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
