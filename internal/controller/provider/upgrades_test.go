package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/upgrades"
)

const upgradeTestMetadata = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- {major: 0, minor: 1, contract: v1beta2}
- {major: 0, minor: 2, contract: v1beta2}
- {major: 0, minor: 3, contract: v1beta3}
`

func pushUpgradeVersion(t *testing.T, reg *registrytest.Registry, version string) string {
	t.Helper()
	ref := reg.Ref("capi/manifests/infrastructure-up", version)
	files := map[string][]byte{"metadata.yaml": []byte(upgradeTestMetadata),
		"infrastructure-components.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: up\n")}
	if _, err := artifact.Push(context.Background(), ref, files, artifact.ProviderAnnotations("infrastructure", "up", version, ""), reg.Access()); err != nil {
		t.Fatal(err)
	}
	return ref.URL()
}

func TestUpgradeCheckDue(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	u := &UpgradeChecks{Interval: 6 * time.Hour, Started: start}
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	if u.due(p, true, start) {
		t.Error("a provider not installed is checked")
	}
	p.Status.InstalledVersion = "v0.1.0"
	if !u.due(p, true, start) {
		t.Error("a reconcile request does not check")
	}
	if u.due(p, false, start.Add(35*time.Minute)) {
		t.Error("a provider never checked is checked in the first tenth of the interval after the manager's start")
	}
	if !u.due(p, false, start.Add(6*time.Hour)) {
		t.Error("a provider never checked is not checked within the first interval")
	}
	p.Status.LastUpgradeCheck = &metav1.Time{Time: start}
	if u.due(p, false, start.Add(5*time.Hour)) {
		t.Error("checked again before the interval")
	}
	if !u.due(p, false, start.Add(6*time.Hour+37*time.Minute)) {
		t.Error("not checked an interval and its jitter later")
	}
	p.Status.Upgrades = []v1alpha1.AvailableUpgrade{{Version: "v0.1.0"}}
	if !u.due(p, false, start.Add(time.Minute)) {
		t.Error("not checked again once the version found was installed")
	}
	if (&UpgradeChecks{Interval: 0}).due(p, true, start) {
		t.Error("checked with the interval 0")
	}
}

func TestCheckUpgrades(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Options{})
	var url string
	for _, v := range []string{"v0.1.0", "v0.1.2", "v0.2.1", "v0.3.0"} {
		url = pushUpgradeVersion(t, reg, v)
	}
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi", Name: "cluster-api"},
		Status: v1alpha1.ProviderStatus{InstalledVersion: "v1.14.2", Contract: "v1beta2"}}
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "up", Name: "up", UID: "uid-up", Generation: 3},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}},
		Status: v1alpha1.ProviderStatus{InstalledVersion: "v0.1.0", Contract: "v1beta2",
			Artifact: &v1alpha1.ResolvedArtifact{URL: url}}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(core).Build()
	kinds := Kinds()
	r := &Reconciler{Client: c, Reader: c, Kind: kinds[3], Kinds: kinds, Source: newSource(c, &artifact.Fetcher{}),
		Upgrades: &UpgradeChecks{Interval: time.Hour, Started: time.Now(), Lister: &upgrades.Lister{Fetcher: &artifact.Fetcher{}}}}

	r.checkUpgrades(ctx, p, r.Source.Resolve(ctx, p), false)
	if p.Status.LastUpgradeCheck != nil {
		t.Fatal("checked without a request before the first interval")
	}
	r.checkUpgrades(ctx, p, r.Source.Resolve(ctx, p), true)
	if p.Status.LastUpgradeCheck == nil {
		t.Fatal("a reconcile request did not check")
	}
	got := p.Status.Upgrades
	if len(got) != 3 || got[0].Version != "v0.1.2" || got[1].Version != "v0.2.1" || got[2].Version != "v0.3.0" ||
		got[1].Blocked != "" || got[2].Blocked != upgrades.BlockedContract {
		t.Fatalf("status.upgrades = %+v", got)
	}
	cond := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.UpgradeAvailableCondition)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.UpgradeAvailableReason ||
		!strings.Contains(cond.Message, "v0.2.1 can be installed") || cond.ObservedGeneration != 3 {
		t.Fatalf("UpgradeAvailable = %+v", cond)
	}
	if next := upgradeAvailable(p); next != "v0.2.1" {
		t.Errorf("upgradeAvailable = %q", next)
	}

	// The registry gone: Unknown, and what the last check found stays.
	reg.Close()
	r.checkUpgrades(ctx, p, r.Source.Resolve(ctx, p), true)
	cond = apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.UpgradeAvailableCondition)
	if cond.Status != metav1.ConditionUnknown || cond.Reason != v1alpha1.UpgradeCheckFailedReason || !strings.Contains(cond.Message, reg.Host) || len(p.Status.Upgrades) != 3 {
		t.Errorf("registry gone: %+v, upgrades %d", cond, len(p.Status.Upgrades))
	}
}

// TestUpgradeEvent: a Normal event when a version first becomes
// available, none while it stays, another for a newer one.
func TestUpgradeEvent(t *testing.T) {
	kinds := Kinds()
	steps := providerSteps{&Reconciler{Kind: kinds[3]}}
	with := func(version string) v1alpha1.Provider {
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "up"},
			Status: v1alpha1.ProviderStatus{InstalledVersion: "v0.1.0"}}
		if version != "" {
			p.Status.Upgrades = []v1alpha1.AvailableUpgrade{{Version: version}, {Version: "v9.0.0", Blocked: upgrades.BlockedContract}}
			p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.UpgradeAvailableCondition, Status: metav1.ConditionTrue,
				Reason: v1alpha1.UpgradeAvailableReason, Message: version + " can be installed"}}
		}
		return p
	}
	if evs := steps.Events(with(""), with("v0.1.1")); len(evs) != 1 || evs[0].Reason != v1alpha1.UpgradeAvailableReason ||
		evs[0].Type != "Normal" || !strings.Contains(evs[0].Message, "InfrastructureProvider ns/up: v0.1.1 can be installed") {
		t.Errorf("first appearance: %+v", evs)
	}
	if evs := steps.Events(with("v0.1.1"), with("v0.1.1")); len(evs) != 0 {
		t.Errorf("unchanged: %+v", evs)
	}
	if evs := steps.Events(with("v0.1.1"), with("v0.1.2")); len(evs) != 1 {
		t.Errorf("a newer one: %+v", evs)
	}
	if st := steps.State(with("v0.1.1")); st.Upgrade != "v0.1.1" {
		t.Errorf("metric state: %+v", st)
	}
}
