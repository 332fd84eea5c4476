package upgrades

import (
	"fmt"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
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
