package providers

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/upgrades"
)

// upgradePlanMetadata maps v0.1 to the core's contract and v0.2 to one no
// Cluster API release implements: v0.2.0 is offered but blocked.
const upgradePlanMetadata = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- major: 0
  minor: 1
  contract: v1beta2
- major: 0
  minor: 2
  contract: v1beta9
`

// upgradePlanShown: with the three kubeadm-line providers at
// installedVersion (the registry has newVersion, published by the
// suite), and an infrastructure provider whose repository offers a newer
// patch of the same contract and a newer minor of a contract no core
// works with, `capwright upgrade plan` and the manager's check (on a
// reconcile request) say the same: newVersion and the patch can be
// installed, the minor is blocked by its contract. The check records
// status.upgrades and UpgradeAvailable, an event and the metric.
func upgradePlanShown(t *testing.T, ctx context.Context, c client.Client, providers []installed, installedVersion, available string) {
	const ns = "upgradeplan"
	ensureNamespace(t, ctx, c, ns)
	var url string
	for _, v := range []string{"v0.1.0", "v0.1.1", "v0.2.0"} {
		url = publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "upgradeplan", v, map[string][]byte{
			"metadata.yaml":                  []byte(upgradePlanMetadata),
			"infrastructure-components.yaml": testComponents("upgradeplan-system", v),
		})
	}
	infra := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upgradeplan"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
	if err := c.Create(ctx, infra); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, infra)
	waitCondition(t, ctx, c, infra, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)

	// The manager checks at --upgrade-check-interval (hours), and at once
	// on a reconcile request.
	start := time.Now()
	all := []v1alpha1.Provider{infra}
	for _, p := range providers {
		all = append(all, p.obj)
	}
	for _, p := range all {
		requestReconcile(t, ctx, c, p)
	}
	for _, p := range all {
		waitUpgradeCondition(t, ctx, c, p, metav1.ConditionTrue)
	}
	t.Logf("every provider's UpgradeAvailable set %s after the reconcile requests", time.Since(start).Round(time.Millisecond))
	for _, p := range providers {
		if v := p.obj.GetStatus().InstalledVersion; v != installedVersion {
			t.Errorf("%s/%s has %s installed, want %s", p.obj.GetNamespace(), p.obj.GetName(), v, installedVersion)
		}
		want := []v1alpha1.AvailableUpgrade{{Version: available, Series: series(available), Contract: "v1beta2"}}
		if got := p.obj.GetStatus().Upgrades; !sameUpgrades(got, want) {
			t.Errorf("%s %s/%s status.upgrades = %+v, want %+v", p.obj.ProviderType(), p.obj.GetNamespace(), p.obj.GetName(), got, want)
		}
	}
	got := infra.Status.Upgrades
	if len(got) != 2 || got[0].Version != "v0.1.1" || got[0].Blocked != "" || got[1].Version != "v0.2.0" ||
		got[1].Contract != "v1beta9" || got[1].Blocked != upgrades.BlockedContract || !strings.Contains(got[1].Message, "contract v1beta9") {
		t.Errorf("status.upgrades of the infrastructure provider = %+v; want v0.1.1 available and v0.2.0 blocked by ContractMismatch", got)
	}
	if cond := apimeta.FindStatusCondition(infra.Status.Conditions, v1alpha1.UpgradeAvailableCondition); !strings.Contains(cond.Message, "v0.1.1 can be installed") {
		t.Errorf("UpgradeAvailable of the infrastructure provider says %q", cond.Message)
	}
	if ready := apimeta.FindStatusCondition(infra.Status.Conditions, v1alpha1.ReadyCondition); ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready with an upgrade available: %+v", ready)
	}
	assertUpgradeEvent(t, ctx, c, infra, "v0.1.1")
	info := waitUpgradeMetric(t, ctx, "InfrastructureProvider", ns, "upgradeplan")
	if info["version"] != "v0.1.1" {
		t.Errorf("capwright_provider_upgrade_available of the infrastructure provider: %v", info)
	}

	// The CLI, on the same cluster and registry.
	cli, err := env.BuildCLI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"upgrade", "plan", "--kubeconfig", env.Kubeconfig, "--plain-http", "-o", "json"}
	start = time.Now()
	out, err := exec.CommandContext(ctx, cli, args...).Output()
	t.Logf("capwright %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("capwright upgrade plan: %v", err)
	}
	var plan upgrades.Plan
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Core != "capi-system/cluster-api" || plan.CoreContract != "v1beta2" {
		t.Errorf("core %q contract %q", plan.Core, plan.CoreContract)
	}
	for _, p := range all {
		r := planOf(plan, p)
		if r == nil {
			t.Errorf("upgrade plan has no line for %s/%s", p.GetNamespace(), p.GetName())
			continue
		}
		if !sameUpgrades(upgrades.Statuses(r.Candidates), p.GetStatus().Upgrades) || r.Version != p.GetStatus().InstalledVersion {
			t.Errorf("upgrade plan of %s/%s: %+v; the manager's status.upgrades: %+v", p.GetNamespace(), p.GetName(), r, p.GetStatus().Upgrades)
		}
	}
	if r := planOf(plan, infra); r != nil && r.Next != "v0.1.1" {
		t.Errorf("NEXT of the infrastructure provider is %q, want v0.1.1", r.Next)
	}

	table, err := exec.CommandContext(ctx, cli, "upgrade", "plan", "--kubeconfig", env.Kubeconfig, "--plain-http").Output()
	if err != nil {
		t.Fatalf("capwright upgrade plan: %v", err)
	}
	// Columns are aligned with spaces: compare words.
	var words []string
	for _, line := range strings.Split(string(table), "\n") {
		words = append(words, strings.Join(strings.Fields(line), " "))
	}
	flat := strings.Join(words, "\n")
	for _, want := range []string{"Core provider: capi-system/cluster-api (contract v1beta2)",
		"InfrastructureProvider upgradeplan upgradeplan v0.1.0 v1beta2 v0.1.1",
		"CoreProvider capi-system cluster-api " + installedVersion + " v1beta2 " + available,
		"InfrastructureProvider upgradeplan/upgradeplan v0.2.0 v0.2 v1beta9 blocked: ContractMismatch",
		"v0.2.0: ContractMismatch: v0.2.0 implements contract v1beta9"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the table has no %q:\n%s", want, table)
		}
	}
}

func waitUpgradeCondition(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, status metav1.ConditionStatus) {
	t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p.(client.Object)), p.(client.Object)); err != nil {
			return false, nil
		}
		last = apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.UpgradeAvailableCondition)
		return last != nil && last.Status == status && p.GetStatus().LastUpgradeCheck != nil, nil
	})
	if err != nil {
		t.Fatalf("%s/%s: UpgradeAvailable %+v, want %s", p.GetNamespace(), p.GetName(), last, status)
	}
}

func assertUpgradeEvent(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, version string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(p.GetNamespace())); err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == p.GetName() && e.Reason == v1alpha1.UpgradeAvailableReason && strings.Contains(e.Message, version) && e.Type == corev1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Normal event %s naming %s for %s/%s", v1alpha1.UpgradeAvailableReason, version, p.GetNamespace(), p.GetName())
	}
}

func waitUpgradeMetric(t *testing.T, ctx context.Context, kind, namespace, name string) map[string]string {
	t.Helper()
	var last map[string]string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, m := range scrape(t, ctx)["capwright_provider_upgrade_available"].GetMetric() {
			l := labelsOf(m)
			if l["kind"] == kind && l["namespace"] == namespace && l["name"] == name && m.GetGauge().GetValue() == 1 {
				last = l
			}
		}
		return last != nil, nil
	})
	if err != nil {
		t.Fatalf("no capwright_provider_upgrade_available for %s %s/%s", kind, namespace, name)
	}
	return last
}

func planOf(plan upgrades.Plan, p v1alpha1.Provider) *upgrades.Result {
	for i, r := range plan.Providers {
		if r.Namespace == p.GetNamespace() && r.Name == p.GetName() && r.Type == p.ProviderType() {
			return &plan.Providers[i]
		}
	}
	return nil
}

func sameUpgrades(a, b []v1alpha1.AvailableUpgrade) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Version != b[i].Version || a[i].Series != b[i].Series || a[i].Contract != b[i].Contract || a[i].Blocked != b[i].Blocked {
			return false
		}
	}
	return true
}

// series is vMAJOR.MINOR of a version vMAJOR.MINOR.PATCH.
func series(version string) string {
	return version[:strings.LastIndex(version, ".")]
}

// upgradesCleared: once a provider installed the version its check
// offered, the manager checks again in the same reconcile and finds it up
// to date.
func upgradesCleared(t *testing.T, ctx context.Context, c client.Client, providers []installed) {
	t.Helper()
	for _, p := range providers {
		waitUpgradeCondition(t, ctx, c, p.obj, metav1.ConditionFalse)
		cond := apimeta.FindStatusCondition(p.obj.GetConditions(), v1alpha1.UpgradeAvailableCondition)
		if cond.Reason != v1alpha1.UpToDateReason || len(p.obj.GetStatus().Upgrades) != 0 {
			t.Errorf("%s/%s after its upgrade: UpgradeAvailable %+v, status.upgrades %+v; want UpToDate and none", p.obj.GetNamespace(), p.obj.GetName(), cond, p.obj.GetStatus().Upgrades)
		}
	}
}

// releaseUpgradeShown: providers installed from GitHub release URLs (the
// stand-in, through the manager's mirror rule) are checked too: the
// host's latest release link names newVersion, its metadata.yaml gives the
// contract, and the manager and `capwright upgrade plan` (with the same
// mirror rule as --release-mirror) say it can be installed.
func releaseUpgradeShown(t *testing.T, ctx context.Context, c client.Client, providers []installed, available string) {
	since := time.Now()
	for _, p := range providers {
		requestReconcile(t, ctx, c, p.obj)
	}
	for _, p := range providers {
		waitUpgradeCondition(t, ctx, c, p.obj, metav1.ConditionTrue)
		want := []v1alpha1.AvailableUpgrade{{Version: available, Series: series(available), Contract: "v1beta2"}}
		if got := p.obj.GetStatus().Upgrades; !sameUpgrades(got, want) {
			t.Errorf("%s/%s status.upgrades = %+v, want %+v", p.obj.GetNamespace(), p.obj.GetName(), got, want)
		}
	}
	// Per provider one request for the latest link; the latest release's
	// metadata.yaml at most once for the three, which share a project (not
	// at all when an earlier check of the suite cached it). (A reconcile
	// request also has the manager fetch the installed release again:
	// those are the installed version's files.)
	var latest, metadata int
	for _, r := range releases.Requests(since) {
		switch {
		case strings.Contains(r.Path, "/releases/latest/"):
			latest++
		case strings.HasSuffix(r.Path, "/"+available+"/metadata.yaml"):
			metadata++
		}
	}
	t.Logf("the checks asked the release host %d times for the latest release and %d times for its metadata.yaml", latest, metadata)
	if latest != len(providers) || metadata > 1 {
		t.Errorf("%d latest-link requests and %d requests for the metadata.yaml of %s, for %d providers of one project; want %d and at most 1",
			latest, metadata, available, len(providers), len(providers))
	}

	cli, err := env.BuildCLI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := releases.WriteCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"upgrade", "plan", "--kubeconfig", env.Kubeconfig, "-o", "json", "--plain-http",
		"--release-mirror", "github.com=https://" + releases.Host, "--release-ca-file", ca, "--release-redirect-host", releases.DownloadHost}
	out, err := exec.CommandContext(ctx, cli, args...).Output()
	t.Logf("capwright %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("capwright upgrade plan: %v", err)
	}
	var plan upgrades.Plan
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatal(err)
	}
	for _, p := range providers {
		r := planOf(plan, p.obj)
		if r == nil || r.Next != available || !r.LatestOnly || !sameUpgrades(upgrades.Statuses(r.Candidates), p.obj.GetStatus().Upgrades) {
			t.Errorf("upgrade plan of %s/%s: %+v; the manager's status.upgrades: %+v", p.obj.GetNamespace(), p.obj.GetName(), r, p.obj.GetStatus().Upgrades)
		}
	}
}
