package upgrades

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/conditions"
)

// FromStatus is the Plan input of a provider as its status records it:
// the installed version and its contract, and the newer versions and
// their contracts its last check found (status.upgrades). The manager
// plans one provider at a time with the others read this way, so a check
// lists only its own provider's source.
func FromStatus(kind string, p v1alpha1.Provider) Provider {
	st := p.GetStatus()
	in := Provider{Kind: kind, Namespace: p.GetNamespace(), Name: p.GetName(), Type: p.ProviderType(),
		Version: st.InstalledVersion, Source: "status"}
	current, err := parse(st.InstalledVersion)
	if err != nil || st.Contract == "" {
		in.Error = fmt.Sprintf("%s %s/%s is not installed yet (no status.installedVersion and status.contract)", kind, p.GetNamespace(), p.GetName())
		return in
	}
	m := &clusterctl.Metadata{ReleaseSeries: []clusterctl.ReleaseSeries{{Major: int32(current.Major()), Minor: int32(current.Minor()), Contract: st.Contract}}} //nolint:gosec // versions are small
	for _, u := range st.Upgrades {
		v, err := parse(u.Version)
		if err != nil {
			continue
		}
		in.Versions = append(in.Versions, u.Version)
		if u.Contract != "" {
			m.ReleaseSeries = append(m.ReleaseSeries, clusterctl.ReleaseSeries{Major: int32(v.Major()), Minor: int32(v.Minor()), Contract: u.Contract}) //nolint:gosec // versions are small
		}
	}
	in.Metadata = m
	return in
}

// Newer tells whether version a is newer than b; false when either is not
// a version.
func Newer(a, b string) bool {
	va, err := parse(a)
	if err != nil {
		return false
	}
	vb, err := parse(b)
	if err != nil {
		return false
	}
	return va.GreaterThan(vb)
}

// Statuses are the candidates as status.upgrades records them.
func Statuses(cs []Candidate) []v1alpha1.AvailableUpgrade {
	var out []v1alpha1.AvailableUpgrade
	for _, c := range cs {
		out = append(out, v1alpha1.AvailableUpgrade{Version: c.Version, Series: c.Series, Contract: c.Contract, Blocked: c.Blocked, Message: c.Message})
	}
	return out
}

// SourceOf tells where a provider's newer versions are listed from: the
// repository or release its status.artifact records (mirror rules
// applied, as installed), else its spec.source.
func SourceOf(p v1alpha1.Provider) Where {
	spec := p.GetSpec()
	if spec.Source != nil && spec.Source.Chart != nil {
		return Where{Unsupported: "the provider is installed from a Helm chart (spec.source.chart), whose versions are chart versions without a metadata.yaml: upgrade plans cover provider artifacts and releases"}
	}
	if a := p.GetStatus().Artifact; a != nil && a.URL != "" {
		if strings.HasPrefix(a.URL, "oci://") {
			return Where{OCI: a.URL}
		}
		return Where{Release: a.URL}
	}
	switch src := spec.Source; {
	case src != nil && src.OCI != nil:
		return Where{OCI: src.OCI.URL}
	case src != nil && src.Release != nil:
		return Where{Release: src.Release.URL}
	}
	return Where{Unsupported: "the provider records no source yet (status.artifact is empty): wait for its first install"}
}

// Input is the Plan input for an installed provider whose source was
// listed (listing) or failed (err).
func Input(kind string, p v1alpha1.Provider, source string, listing Listing, err error) Provider {
	in := Provider{Kind: kind, Namespace: p.GetNamespace(), Name: p.GetName(), Type: p.ProviderType(),
		Version: p.GetStatus().InstalledVersion, Source: source, Versions: listing.Versions, Metadata: listing.Metadata, LatestOnly: listing.LatestOnly}
	if err != nil {
		in.Error = err.Error()
	}
	return in
}

// Check is what one upgrade check of a provider found: where its
// versions are listed from (Where: SourceOf), what its source listed
// there (Listing, from Source) or why it could not (Err), and the other
// providers its plan needs as their status records them (Peers:
// FromStatus).
type Check struct {
	// Kind is the provider's kind.
	Kind    string
	Where   Where
	Source  string
	Listing Listing
	Err     error
	Peers   []Provider
}

// Record writes what check found into p's status, which the manager
// writes with the rest: status.lastUpgradeCheck, status.upgrades and the
// UpgradeAvailable condition. What is installed now is no upgrade,
// whatever the check says: a check that fails keeps only what is still
// newer, and is not due again before its interval.
func Record(p v1alpha1.Provider, check Check, now time.Time) {
	st := p.GetStatus()
	kept := st.Upgrades[:0:0]
	for _, up := range st.Upgrades {
		if Newer(up.Version, st.InstalledVersion) {
			kept = append(kept, up)
		}
	}
	upgrades, status, reason, message := checked(p, check, kept)
	st.LastUpgradeCheck, st.Upgrades = &metav1.Time{Time: now}, upgrades
	if len(st.Upgrades) == 0 {
		st.Upgrades = nil
	}
	conditions.Put(p, metav1.Condition{Type: v1alpha1.UpgradeAvailableCondition, Status: status, Reason: reason,
		Message: message, ObservedGeneration: p.GetGeneration(), LastTransitionTime: metav1.NewTime(now)})
}

// checked is what an upgrade check of p found: status.upgrades (kept,
// what is still newer than the version installed, when the check could
// not tell) and the UpgradeAvailable condition.
func checked(p v1alpha1.Provider, check Check, kept []v1alpha1.AvailableUpgrade) ([]v1alpha1.AvailableUpgrade, metav1.ConditionStatus, string, string) {
	switch {
	case check.Where.Unsupported != "":
		return nil, metav1.ConditionUnknown, v1alpha1.UpgradeNotCheckedReason, check.Where.Unsupported
	case check.Err != nil:
		return kept, metav1.ConditionUnknown, v1alpha1.UpgradeCheckFailedReason,
			fmt.Sprintf("cannot list the versions of %s: %v; status.upgrades keeps what the last check found", check.Source, check.Err)
	}
	var res Result
	for _, r := range Compute(append(check.Peers, Input(check.Kind, p, check.Source, check.Listing, nil))).Providers {
		if r.Kind == check.Kind && r.Namespace == p.GetNamespace() && r.Name == p.GetName() {
			res = r
		}
	}
	if res.Error != "" {
		return kept, metav1.ConditionUnknown, v1alpha1.UpgradeCheckFailedReason, res.Error
	}
	status, reason, message := upgradeCondition(p, res)
	return Statuses(res.Candidates), status, reason, message
}

// upgradeCondition is the UpgradeAvailable condition of a provider's plan.
func upgradeCondition(obj v1alpha1.Provider, res Result) (metav1.ConditionStatus, string, string) {
	installed := obj.GetStatus().InstalledVersion
	if res.Next != "" {
		for _, c := range res.Candidates {
			if c.Version == res.Next {
				return metav1.ConditionTrue, v1alpha1.UpgradeAvailableReason,
					fmt.Sprintf("%s can be installed (release series %s, contract %s; installed %s): set spec.version to %s", c.Version, c.Series, c.Contract, installed, c.Version)
			}
		}
	}
	if len(res.Candidates) == 0 {
		return metav1.ConditionFalse, v1alpha1.UpToDateReason, fmt.Sprintf("the source offers no newer version than %s", installed)
	}
	blocked := make([]string, 0, len(res.Candidates))
	for _, c := range res.Candidates {
		blocked = append(blocked, c.Version+": "+c.Blocked)
	}
	return metav1.ConditionFalse, v1alpha1.UpgradeBlockedReason,
		fmt.Sprintf("newer versions exist, none can be installed now (%s): see status.upgrades", strings.Join(blocked, ", "))
}
