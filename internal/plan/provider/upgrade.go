package provider

import (
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// An upgrade (spec.version changed from the version last found installed
// and available, status.upgrade.lastGood) is dry-run on the API server
// before anything of it is written, then watched: under
// spec.upgrade.onFailure Rollback, a new version Flux reports failed, or
// one not installed and available within spec.upgrade.timeout, is
// recorded as failed (status.upgrade.failed) and the provider is planned
// at the last good version again — pinned by the digest it was installed
// from, its CRDs dropped from the build so that the new ones stay — until
// spec.version changes or reconcile.fluxcd.io/resetAt asks for another
// try. Everything it needs is in the provider's spec and status, so a
// restarted manager picks it up where it was.

// ResetAnnotation asks for a failed upgrade to be tried again when its
// value is new and equals reconcile.fluxcd.io/requestedAt, as `flux
// reconcile --reset` asks a HelmRelease.
const ResetAnnotation = helmv2.ResetRequestAnnotation

// DefaultUpgradeMargin is what spec.upgrade.timeout adds by default to
// spec.timeout, Flux's own.
const DefaultUpgradeMargin = time.Minute

// Upgrade is where a provider's upgrade stands, read from its spec and
// status at the start of a reconcile.
type Upgrade struct {
	// Policy is spec.upgrade.onFailure; Timeout what the new version has
	// to be installed and available in.
	Policy  v1alpha1.UpgradeFailureAction
	Timeout time.Duration
	// Upgrading: spec.version is not the last good version, and it has
	// not failed (or is tried again).
	Upgrading bool
	// RollingBack: spec.version failed and the last good version is
	// planned instead.
	RollingBack bool
	// Reset is a reset request to record as handled.
	Reset string
	// DryRun and RollbackBlocked are what this reconcile's dry run found,
	// DryRan whether it ran.
	DryRun, RollbackBlocked string
	DryRan                  bool

	version string
	status  v1alpha1.UpgradeStatus
}

// UpgradeOf reads where obj's upgrade stands.
func UpgradeOf(obj v1alpha1.Provider) *Upgrade {
	spec := obj.GetSpec()
	// By default Flux's verdict comes first: its health checks give up
	// after spec.timeout, naming what is not healthy.
	u := &Upgrade{Policy: v1alpha1.UpgradeHold, Timeout: render.DefaultTimeout + DefaultUpgradeMargin, version: spec.Version}
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		u.Timeout = spec.Timeout.Duration + DefaultUpgradeMargin
	}
	if p := spec.Upgrade; p != nil {
		if p.OnFailure != "" {
			u.Policy = p.OnFailure
		}
		if p.Timeout != nil && p.Timeout.Duration > 0 {
			u.Timeout = p.Timeout.Duration
		}
	}
	if st := obj.GetStatus().Upgrade; st != nil {
		u.status = *st.DeepCopy()
	}
	annotations := obj.GetAnnotations()
	if token := annotations[ResetAnnotation]; token != "" && token != u.status.LastHandledResetAt {
		u.Reset = token
		if token == annotations[meta.ReconcileRequestAnnotation] {
			u.status.Failed = nil
		}
	}
	if f := u.status.Failed; f != nil && (f.Version != spec.Version || u.Policy != v1alpha1.UpgradeRollback) {
		// Another version, or the failed one tried again under Hold.
		u.status.Failed = nil
	}
	good := u.status.LastGood
	if good == nil || good.Version == spec.Version || spec.Suspend {
		return u
	}
	if u.status.Failed != nil {
		u.RollingBack = true
		return u
	}
	u.Upgrading = true
	return u
}

// Target is the provider as this reconcile plans it: obj, or while it
// rolls back, a copy of obj at its last good version, pinned to the
// digest that was installed, and with the status of that install. The
// checks of any install then hold the rollback to that artifact: a pinned
// digest the tag no longer resolves to is refused, a tag that moved since
// the install too (TagMoved), and a release whose files changed keeps
// the revision installed (ReleaseChanged).
func (u *Upgrade) Target(obj v1alpha1.Provider) v1alpha1.Provider {
	if !u.RollingBack {
		return obj
	}
	good := u.status.LastGood
	view := obj.DeepCopyObject().(v1alpha1.Provider)
	spec, status := view.GetSpec(), view.GetStatus()
	spec.Version = good.Version
	if src := spec.Source; src != nil && src.OCI != nil {
		src.OCI.Digest = good.Digest
	}
	if src := spec.Source; src != nil && src.Release != nil {
		src.Release.Digest = good.Digest
	}
	status.InstalledVersion = good.Version
	installed := good.ResolvedArtifact
	status.Artifact = &installed
	return view
}

// NeedsDryRun tells whether d, which passed its checks, starts the
// upgrade: nothing of spec.version has been written yet.
func (u *Upgrade) NeedsDryRun(d Desired) bool {
	return u.Upgrading && d.Passed && !d.Keep && !d.Suspend && d.Status.Artifact != nil &&
		(u.status.Version != u.version || u.status.StartedAt == nil)
}

// UpgradeOutcome is what the upgrade's fold tells the controller.
type UpgradeOutcome struct {
	// Failed: the upgrade failed just now and is to be rolled back (a
	// new reconcile plans it at once).
	Failed bool
	// RolledBack: the last good version is installed and available
	// again; the provider stalls.
	RolledBack bool
	// Stall is the stall's reason and message while rolled back.
	Stall, StallMessage string
	// Recheck is when the upgrade's timeout runs out; 0 when none does.
	Recheck time.Duration
}

// FoldUpgrade sets status.upgrade and, while the upgrade has failed, the
// Installed condition, from what the reconcile found: d the plan, res the
// health fold (nil when the Flux objects were not read).
func FoldUpgrade(obj v1alpha1.Provider, u *Upgrade, d Desired, in *health.ProviderInput, res *health.ProviderResult, now time.Time) UpgradeOutcome {
	st := u.status
	var out UpgradeOutcome
	if u.Reset != "" {
		st.LastHandledResetAt = u.Reset
	}
	status := obj.GetStatus()
	spec := obj.GetSpec()
	installed := res != nil && res.Installed.Status == metav1.ConditionTrue
	available := res != nil && res.Available.Status == metav1.ConditionTrue
	switch {
	case u.RollingBack:
		out = u.rollingBack(obj, &st, installed && available)
	case installed && available && status.InstalledVersion == spec.Version && status.Artifact != nil:
		// spec.version is installed and healthy: the version a later
		// upgrade returns to.
		st.LastGood = &v1alpha1.InstalledArtifact{Version: spec.Version, ResolvedArtifact: *status.Artifact.DeepCopy()}
		st.Version, st.StartedAt, st.DryRun, st.RollbackBlocked = "", nil, "", ""
	case u.Upgrading:
		if u.DryRan {
			st.Version, st.StartedAt, st.DryRun, st.RollbackBlocked = u.version, &metav1.Time{Time: now}, u.DryRun, u.RollbackBlocked
		}
		if st.Version == u.version && st.StartedAt != nil && in != nil && res != nil && !installed {
			out = u.watch(obj, &st, d, *in, *res, now)
		}
	}
	if st.LastGood == nil && st.Failed == nil && st.Version == "" && st.LastHandledResetAt == "" {
		status.Upgrade = nil
		return out
	}
	status.Upgrade = &st
	return out
}

// watch decides whether the upgrade under way failed: Flux reports the
// new revision failed (health.FailedAttempt, the rollout's rule), or the
// timeout ran out. Under Rollback the failure is recorded; held, the
// Installed condition says why it stays.
func (u *Upgrade) watch(obj v1alpha1.Provider, st *v1alpha1.UpgradeStatus, d Desired, in health.ProviderInput, res health.ProviderResult, now time.Time) UpgradeOutcome {
	deadline := st.StartedAt.Add(u.Timeout)
	failed := d.Status.Artifact != nil && health.FailedAttempt(in.Apply, in.Source, revisionDigest(in.ExpectedRevision))
	why := res.Installed.Message
	if !failed && !now.Before(deadline) {
		failed = true
		why = fmt.Sprintf("not installed and available within %s (spec.upgrade.timeout): %s", u.Timeout, why)
	}
	if !failed {
		return UpgradeOutcome{Recheck: deadline.Sub(now)}
	}
	good := st.LastGood
	switch {
	case u.Policy != v1alpha1.UpgradeRollback:
		return UpgradeOutcome{}
	case st.RollbackBlocked != "":
		conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.UpgradeHeldReason, fmt.Sprintf(
			"%s failed and is held, not rolled back to %s, because %s: %s", u.version, good.Version, st.RollbackBlocked, why))
		return UpgradeOutcome{}
	}
	revision := in.ExpectedRevision
	if a := d.Status.Artifact; a != nil {
		revision = a.Revision
	}
	st.Failed = &v1alpha1.FailedUpgrade{Version: u.version, Revision: revision, Time: metav1.Time{Time: now}, Message: why}
	st.Version, st.StartedAt, st.DryRun = "", nil, ""
	conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.RollingBackReason, fmt.Sprintf(
		"%s failed (%s); rolling back to %s", u.version, why, good.Version))
	return UpgradeOutcome{Failed: true}
}

// rollingBack says where the rollback stands, on the Installed condition:
// Flux applying the last good version again, or done (the provider
// stalls until spec.version changes or a reset).
func (u *Upgrade) rollingBack(obj v1alpha1.Provider, st *v1alpha1.UpgradeStatus, healthy bool) UpgradeOutcome {
	f, good := st.Failed, st.LastGood
	retry := fmt.Sprintf("set spec.version to a release that works (or back to %s), or annotate the provider with %s equal to %s to try %s again",
		good.Version, ResetAnnotation, meta.ReconcileRequestAnnotation, f.Version)
	if !healthy && !f.RolledBack {
		conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.RollingBackReason, fmt.Sprintf(
			"%s failed (%s); Flux is applying %s again (%s)", f.Version, f.Message, good.Version, good.Revision))
		return UpgradeOutcome{}
	}
	f.RolledBack = true
	msg := fmt.Sprintf("%s failed and was rolled back: %s (%s) is installed and available again; %s failed: %s. To go on, %s",
		f.Version, good.Version, good.Revision, f.Version, f.Message, retry)
	if !healthy {
		msg = fmt.Sprintf("%s failed and was rolled back to %s (%s), which is not healthy now; %s failed: %s. To go on, %s",
			f.Version, good.Version, good.Revision, f.Version, f.Message, retry)
	}
	conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.RolledBackReason, msg)
	return UpgradeOutcome{RolledBack: true, Stall: v1alpha1.RolledBackReason, StallMessage: msg}
}

func revisionDigest(revision string) string {
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		return revision[i+1:]
	}
	return revision
}
