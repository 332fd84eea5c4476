package provider

import (
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/health"
)

const (
	goodDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newDigest  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// upgrading is a core provider installed and healthy at v1.14.2, asked
// for v1.14.3, with onFailure policy.
func upgrading(policy v1alpha1.UpgradeFailureAction) *v1alpha1.CoreProvider {
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", Generation: 2}}
	p.Spec.Version = "v1.14.3"
	p.Spec.Source = &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.example/capi/core-cluster-api"}}}
	if policy != "" {
		p.Spec.Upgrade = &v1alpha1.UpgradePolicy{OnFailure: policy, Timeout: &metav1.Duration{Duration: time.Minute}}
	}
	good := v1alpha1.ResolvedArtifact{URL: "oci://registry.example/capi/core-cluster-api", Revision: "v1.14.2@" + goodDigest, Digest: goodDigest}
	p.Status.InstalledVersion = "v1.14.2"
	p.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: good.URL, Revision: "v1.14.3@" + newDigest, Digest: newDigest}
	p.Status.Upgrade = &v1alpha1.UpgradeStatus{LastGood: &v1alpha1.InstalledArtifact{Version: "v1.14.2", ResolvedArtifact: good}}
	return p
}

// newRevision is the plan of v1.14.3 and the Flux objects applying it,
// failed (health checks timed out) or still at work.
func newRevision(failed bool) (Desired, *health.ProviderInput, *health.ProviderResult) {
	d := Desired{Passed: true, Status: Status{Artifact: &v1alpha1.ResolvedArtifact{Revision: "v1.14.3@" + newDigest, Digest: newDigest}}}
	ready := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: meta.ProgressingReason, ObservedGeneration: 3,
		Message: "Reconciliation in progress"}
	if failed {
		ready = metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: meta.HealthCheckFailedReason, ObservedGeneration: 3,
			Message: "health check failed after 30s: timeout waiting for: [Deployment/capi-system/capi-controller-manager status: 'InProgress']"}
	}
	in := &health.ProviderInput{ExpectedRevision: "v1.14.3@" + newDigest,
		Apply: health.Observation{Kind: kustomizev1.KustomizationKind, Generation: 3, Conditions: []metav1.Condition{ready},
			Revision: "v1.14.2@" + goodDigest, LastAttemptedRevision: "v1.14.3@" + newDigest},
		Source: health.Observation{Kind: "OCIRepository", Generation: 2, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2}}}}
	res := &health.ProviderResult{
		Installed: metav1.Condition{Type: v1alpha1.InstalledCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.InstallFailedReason, Message: "Flux failed to apply v1.14.3: " + ready.Message},
		Available: metav1.Condition{Type: v1alpha1.AvailableCondition, Status: metav1.ConditionFalse}}
	if !failed {
		res.Installed.Status, res.Installed.Reason = metav1.ConditionUnknown, v1alpha1.UpgradingReason
	}
	return d, in, res
}

func TestAnUpgradeIsDryRunOnceAndThenWatched(t *testing.T) {
	p := upgrading(v1alpha1.UpgradeRollback)
	u := UpgradeOf(p)
	if !u.Upgrading || u.RollingBack || u.Target(p) != v1alpha1.Provider(p) {
		t.Fatalf("an upgrade from the last good version: Upgrading %v RollingBack %v", u.Upgrading, u.RollingBack)
	}
	d, in, res := newRevision(false)
	if !u.NeedsDryRun(d) {
		t.Fatal("the upgrade is not dry-run before its first write")
	}
	u.DryRan, u.DryRun, u.RollbackBlocked = true, "26 objects accepted", ""
	now := time.Now()
	out := FoldUpgrade(p, u, d, in, res, now)
	st := p.Status.Upgrade
	if st.Version != "v1.14.3" || st.StartedAt == nil || st.DryRun != "26 objects accepted" || st.Failed != nil {
		t.Fatalf("after the first write: %+v", st)
	}
	if out.Failed || out.Recheck <= 0 || out.Recheck > time.Minute {
		t.Errorf("the upgrade under way is looked at again when its timeout runs out: %+v", out)
	}
	if UpgradeOf(p).NeedsDryRun(d) {
		t.Error("an upgrade already started is dry-run again (a restarted manager would)")
	}
}

func TestAFailedUpgradeRollsBackToTheLastGoodDigest(t *testing.T) {
	p := upgrading(v1alpha1.UpgradeRollback)
	start := time.Now().Add(-10 * time.Second)
	p.Status.Upgrade.Version, p.Status.Upgrade.StartedAt = "v1.14.3", &metav1.Time{Time: start}
	u := UpgradeOf(p)
	d, in, res := newRevision(true)
	out := FoldUpgrade(p, u, d, in, res, time.Now())
	f := p.Status.Upgrade.Failed
	if !out.Failed || f == nil || f.Version != "v1.14.3" || f.RolledBack || !strings.Contains(f.Message, "health check failed") {
		t.Fatalf("Flux's health check failure is no failed upgrade: %+v, %+v", out, f)
	}
	if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.InstalledCondition); c == nil || c.Reason != v1alpha1.RollingBackReason {
		t.Errorf("Installed: %+v", c)
	}

	// The next reconcile plans the last good version, pinned.
	u = UpgradeOf(p)
	if !u.RollingBack || u.Upgrading {
		t.Fatalf("a failed upgrade is not rolled back: %+v", u)
	}
	view := u.Target(p)
	if view == v1alpha1.Provider(p) || view.GetSpec().Version != "v1.14.2" || view.GetSpec().Source.OCI.Digest != goodDigest ||
		view.GetStatus().InstalledVersion != "v1.14.2" || view.GetStatus().Artifact.Digest != goodDigest {
		t.Fatalf("the rollback plans %s pinned to %q", view.GetSpec().Version, view.GetSpec().Source.OCI.Digest)
	}
	if p.Spec.Version != "v1.14.3" || p.Spec.Source.OCI.Digest != "" {
		t.Fatal("the rollback changed the provider's own spec")
	}
	// The checks of any install hold it to the installed artifact: the
	// resolver refuses a pinned digest the tag no longer resolves to,
	// and checkTag a tag that moved (a catalog provider, with no spec to
	// pin).
	catalog := view.DeepCopyObject().(v1alpha1.Provider)
	catalog.GetSpec().Source = nil
	good := view.GetStatus().Artifact
	if err := checkTag(Facts{Provider: catalog, Artifact: Artifact{URL: good.URL, Digest: newDigest}}); err == nil {
		t.Error("a rollback to another digest than the one installed is not refused")
	}
	if err := checkTag(Facts{Provider: catalog, Artifact: Artifact{URL: good.URL, Digest: goodDigest}}); err != nil {
		t.Error(err)
	}

	// Flux still applying the old version: rolling back.
	res = &health.ProviderResult{Installed: metav1.Condition{Status: metav1.ConditionFalse}, Available: metav1.Condition{Status: metav1.ConditionFalse}}
	if out := FoldUpgrade(p, u, Desired{}, in, res, time.Now()); out.RolledBack || out.Failed {
		t.Errorf("rolled back before Flux applied the old version: %+v", out)
	}
	// Applied and healthy: rolled back, and the provider stalls.
	res = &health.ProviderResult{Installed: metav1.Condition{Status: metav1.ConditionTrue}, Available: metav1.Condition{Status: metav1.ConditionTrue}}
	out = FoldUpgrade(p, u, Desired{}, in, res, time.Now())
	if !out.RolledBack || out.Stall != v1alpha1.RolledBackReason || !p.Status.Upgrade.Failed.RolledBack {
		t.Fatalf("not rolled back: %+v", out)
	}
	c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.InstalledCondition)
	if c.Reason != v1alpha1.RolledBackReason || !strings.Contains(c.Message, ResetAnnotation) || !strings.Contains(c.Message, "v1.14.2") {
		t.Errorf("Installed says %s: %s", c.Reason, c.Message)
	}
	if p.Status.Upgrade.LastGood.Version != "v1.14.2" {
		t.Error("the rollback moved the last good version")
	}

	// Never tried again by itself; a reset tries it again, once.
	if u := UpgradeOf(p); !u.RollingBack {
		t.Error("the failed version is tried again by itself")
	}
	p.Annotations = map[string]string{ResetAnnotation: "t1", meta.ReconcileRequestAnnotation: "t1"}
	u = UpgradeOf(p)
	if !u.Upgrading || u.RollingBack {
		t.Fatalf("a reset does not try the failed version again: %+v", u)
	}
	d, in, res = newRevision(false)
	FoldUpgrade(p, u, d, in, res, time.Now())
	if p.Status.Upgrade.Failed != nil || p.Status.Upgrade.LastHandledResetAt != "t1" {
		t.Errorf("after a reset: %+v", p.Status.Upgrade)
	}
	// A reset token not matching requestedAt is handled without a retry
	// (helm-controller's rule).
	q := upgrading(v1alpha1.UpgradeRollback)
	q.Status.Upgrade.Failed = &v1alpha1.FailedUpgrade{Version: "v1.14.3", RolledBack: true}
	q.Annotations = map[string]string{ResetAnnotation: "t2"}
	if u := UpgradeOf(q); !u.RollingBack || u.Reset != "t2" {
		t.Errorf("a reset without a matching request: %+v", u)
	}
	// Another spec.version forgets the failure.
	q.Spec.Version = "v1.14.4"
	if u := UpgradeOf(q); !u.Upgrading || u.RollingBack || u.status.Failed != nil {
		t.Errorf("a new version after a failed one: %+v", u)
	}
}

func TestAnUpgradeFailsWhenItsTimeoutRunsOut(t *testing.T) {
	p := upgrading(v1alpha1.UpgradeRollback)
	p.Status.Upgrade.Version, p.Status.Upgrade.StartedAt = "v1.14.3", &metav1.Time{Time: time.Now().Add(-2 * time.Minute)}
	d, in, res := newRevision(false) // Flux still at work
	out := FoldUpgrade(p, UpgradeOf(p), d, in, res, time.Now())
	if !out.Failed || !strings.Contains(p.Status.Upgrade.Failed.Message, "within 1m0s") {
		t.Fatalf("an upgrade past its timeout: %+v %+v", out, p.Status.Upgrade.Failed)
	}
}

func TestAFailedUpgradeIsHeld(t *testing.T) {
	for name, p := range map[string]*v1alpha1.CoreProvider{"Hold": upgrading(v1alpha1.UpgradeHold), "default": upgrading("")} {
		p.Status.Upgrade.Version, p.Status.Upgrade.StartedAt = "v1.14.3", &metav1.Time{Time: time.Now().Add(-time.Hour)}
		d, in, res := newRevision(true)
		if out := FoldUpgrade(p, UpgradeOf(p), d, in, res, time.Now()); out.Failed || out.RolledBack || p.Status.Upgrade.Failed != nil {
			t.Errorf("%s: a failed upgrade is rolled back: %+v", name, out)
		}
		if u := UpgradeOf(p); u.RollingBack || !u.Upgrading {
			t.Errorf("%s: %+v", name, u)
		}
	}

	p := upgrading(v1alpha1.UpgradeRollback)
	p.Status.Upgrade.Version, p.Status.Upgrade.StartedAt = "v1.14.3", &metav1.Time{Time: time.Now()}
	p.Status.Upgrade.RollbackBlocked = "CustomResourceDefinition clusters.cluster.x-k8s.io: the storage version moves from v1beta1 to v1beta2"
	d, in, res := newRevision(true)
	if out := FoldUpgrade(p, UpgradeOf(p), d, in, res, time.Now()); out.Failed || p.Status.Upgrade.Failed != nil {
		t.Fatalf("an upgrade that cannot be rolled back is: %+v", out)
	}
	c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.InstalledCondition)
	if c == nil || c.Reason != v1alpha1.UpgradeHeldReason || !strings.Contains(c.Message, "storage version moves") {
		t.Errorf("Installed does not say why the upgrade is held: %+v", c)
	}
}

func TestTheLastGoodVersionIsWhatIsInstalledAndAvailable(t *testing.T) {
	p := upgrading(v1alpha1.UpgradeRollback)
	p.Status.Upgrade.Version, p.Status.Upgrade.StartedAt, p.Status.Upgrade.DryRun = "v1.14.3", &metav1.Time{Time: time.Now()}, "26 accepted"
	p.Status.InstalledVersion = "v1.14.3" // the fold found it installed
	healthy := &health.ProviderResult{Installed: metav1.Condition{Status: metav1.ConditionTrue}, Available: metav1.Condition{Status: metav1.ConditionTrue}}
	FoldUpgrade(p, UpgradeOf(p), Desired{}, nil, healthy, time.Now())
	st := p.Status.Upgrade
	if st.LastGood.Version != "v1.14.3" || st.LastGood.Digest != newDigest || st.Version != "" || st.StartedAt != nil || st.DryRun != "" {
		t.Errorf("after the upgrade: %+v, last good %+v", st, st.LastGood)
	}

	fresh := &v1alpha1.CoreProvider{}
	fresh.Spec.Version = "v1.14.2"
	if FoldUpgrade(fresh, UpgradeOf(fresh), Desired{}, nil, nil, time.Now()); fresh.Status.Upgrade != nil {
		t.Error("a provider not installed has an upgrade status")
	}
}
