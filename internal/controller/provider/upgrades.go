package provider

import (
	"context"
	"hash/fnv"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/resolve"
	"github.com/capwright/capwright/internal/upgrades"
)

// DefaultUpgradeCheckInterval is how often a provider's source is asked
// for newer versions: releases come every few weeks, so four checks a day
// tell within hours, at two or three registry requests each.
const DefaultUpgradeCheckInterval = 6 * time.Hour

// upgradeJitter spreads the checks: each provider's comes up to this
// fraction of the interval late, by a fixed amount of its UID, so
// providers installed together are not checked together.
const upgradeJitter = 0.1

// UpgradeChecks are the settings and start time of the upgrade checks,
// shared by the reconcilers of every kind.
type UpgradeChecks struct {
	// Interval between two checks of a provider; 0 turns the checks off.
	Interval time.Duration
	// Lister reads the sources; it caches metadata.yaml by digest.
	Lister *upgrades.Lister
	// Started is when the manager started: a provider never checked is
	// first checked within one interval of it.
	Started time.Time
}

// due tells whether obj's source is to be checked now: on a reconcile
// request, when its last check is an interval (and its jitter) old, when
// it was never checked and its share of the first interval after the
// manager started is over, or when what the last check found no longer
// matches the installed version (an upgrade happened since).
func (u *UpgradeChecks) due(obj v1alpha1.Provider, requested bool, now time.Time) bool {
	st := obj.GetStatus()
	if u == nil || u.Interval <= 0 || st.InstalledVersion == "" || obj.GetSpec().Suspend {
		return false
	}
	if requested {
		return true
	}
	for _, up := range st.Upgrades {
		if !upgrades.Newer(up.Version, st.InstalledVersion) {
			return true
		}
	}
	share := spread(string(obj.GetUID()))
	if st.LastUpgradeCheck == nil {
		// Never checked: somewhere in the first interval after its first
		// tenth, so a manager start (or a restart loop) does not check
		// every provider at once.
		return !now.Before(u.Started.Add(time.Duration(float64(u.Interval) * (upgradeJitter + (1-upgradeJitter)*share))))
	}
	return !now.Before(st.LastUpgradeCheck.Add(u.Interval + time.Duration(float64(u.Interval)*upgradeJitter*share)))
}

// spread is a fixed number in [0, 1) for a UID.
func spread(uid string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return float64(h.Sum32()) / (1 << 32)
}

// checkUpgrades checks the provider's source for newer versions when due,
// and records what it found in the status (status.upgrades,
// status.lastUpgradeCheck, the UpgradeAvailable condition), which the
// shell writes with the rest. Only the provider's own source is read; the
// other providers the plan needs (the core provider, or for the core the
// others) come as their status recorded their last check.
func (r *Reconciler) checkUpgrades(ctx context.Context, obj v1alpha1.Provider, found resolve.Result, requested bool) {
	now := time.Now()
	if !r.Upgrades.due(obj, requested, now) {
		return
	}
	check := upgrades.Check{Kind: r.Kind.Name, Peers: r.upgradePeers(ctx, obj), Where: upgrades.SourceOf(obj)}
	if check.Where.Unsupported == "" {
		check.Listing, check.Source, check.Err = found.Versions(ctx, r.Upgrades.Lister, check.Where)
		if check.Err != nil {
			log.FromContext(ctx).V(1).Info("cannot check for newer versions", "source", check.Source, "error", check.Err.Error())
		}
	}
	upgrades.Record(obj, check, now)
}

// upgradePeers are the other providers the plan of obj needs, as their
// status records them (read from the cache): for the core provider every
// other installed provider (may they follow a new contract?), for another
// provider the core provider (which contracts it works with, now and in
// its newer versions).
func (r *Reconciler) upgradePeers(ctx context.Context, obj v1alpha1.Provider) []upgrades.Provider {
	var peers []upgrades.Provider
	for _, k := range r.Kinds {
		isCore := k.Name == "CoreProvider"
		if (obj.ProviderType() == v1alpha1.CoreProviderType) == isCore {
			continue
		}
		list := k.NewList()
		if err := r.Client.List(ctx, list); err != nil {
			continue
		}
		for _, p := range list.GetItems() {
			if p.GetStatus().InstalledVersion != "" {
				peers = append(peers, upgrades.FromStatus(k.Name, p))
			}
		}
	}
	return peers
}

// upgradeAvailable is the newest version status.upgrades says can be
// installed now, for the metric; "" when none.
func upgradeAvailable(obj v1alpha1.Provider) string {
	c := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.UpgradeAvailableCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	next := ""
	for _, u := range obj.GetStatus().Upgrades {
		if u.Blocked == "" {
			next = u.Version
		}
	}
	return next
}
