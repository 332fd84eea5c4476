package upgrades

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

const (
	ns         = "capi-system"
	deployment = "capi-controller-manager"
	// fluxTimeout is the provider's spec.timeout: how long Flux's health
	// checks wait for the new version before it reports it failed.
	fluxTimeout = 20 * time.Second
	// upgradeTimeout is spec.upgrade.timeout.
	upgradeTimeout = 90 * time.Second
)

// TestUpgradesThatCannotStrandTheManagementCluster installs the real
// Cluster API core provider v1.14.2 with onFailure Rollback, starts the
// real Cluster API manager and a Cluster, and then upgrades it to bad
// releases derived from v1.14.2, checking after each that the Cluster is
// still reconciled:
//
//  1. v1.14.4 changes the manager Deployment's selector, which the API
//     server refuses: the dry run stops it and nothing changes;
//  2. v1.14.3 has a manager image that cannot be pulled: Flux's health
//     checks fail and Capwright rolls back to v1.14.2, the CRDs and
//     Clusters keeping their UIDs and the new CRDs staying; once with the
//     manager SIGKILLed mid-upgrade, once (after a reset) mid-rollback,
//     ending in the same state;
//  3. under onFailure Hold the same failure stays, as it always did,
//     until spec.version goes back;
//  4. v1.14.5 also moves a CRD's storage version: it cannot be rolled
//     back, so its failure is held, saying why.
func TestUpgradesThatCannotStrandTheManagementCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := framework.NewProviderClient(t, env.Config)
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	publishDerived(t, "v1.14.3", managerImage(brokenImage("v1.14.3")))
	publishDerived(t, "v1.14.4", selectorLabel("upgrades.capwright.test/variant", "v1.14.4"))
	publishDerived(t, "v1.14.5", managerImage(brokenImage("v1.14.5")), newStorageVersion("extensionconfigs.runtime.cluster.x-k8s.io", "v1beta3"))

	framework.EnsureNamespace(t, ctx, c, ns)
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: baseVersion,
			Source: &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{
				URL: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"}},
			Timeout: &metav1.Duration{Duration: fluxTimeout},
			Upgrade: &v1alpha1.UpgradePolicy{OnFailure: v1alpha1.UpgradeRollback, Timeout: &metav1.Duration{Duration: upgradeTimeout}}}}
	if err := c.Create(ctx, core); err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	if lg := core.Status.Upgrade; lg == nil || lg.LastGood == nil || lg.LastGood.Version != baseVersion || lg.LastGood.Digest != core.Status.Artifact.Digest {
		t.Fatalf("status.upgrade.lastGood after the install: %+v", core.Status.Upgrade)
	}

	// The real Cluster API manager, as the pod of the Deployment Flux
	// applied would run it (its ServiceAccount, its RBAC). During a
	// rolling update the old pod keeps running until the new one is
	// Ready, which the broken ones never are, and a rollback returns to
	// it: this process is that old pod.
	capi, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: ns, ServiceAccount: "capi-manager"})
	if err != nil {
		t.Fatal(err)
	}
	defer capi.Stop()
	if err := env.InstallTestInfraClusterCRD(ctx); err != nil {
		t.Fatal(err)
	}
	cluster := plane.NewTestCluster("default", "workload")
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatal(err)
	}
	clusters := &clusterWatch{c: c, key: client.ObjectKeyFromObject(cluster)}
	clusters.reconciled(t, ctx, "after the install")
	crds := crdUIDs(t, ctx, c)

	t.Run("an upgrade the API server refuses is stopped by the dry run, nothing changed", func(t *testing.T) {
		before := settledSnapshot(t, ctx, c)
		framework.UpdateProvider(t, ctx, c, core, func() { core.Spec.Version = "v1.14.4" })
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.DryRunFailedReason, time.Minute)
		msg := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.CompatibleCondition).Message
		for _, want := range []string{"Deployment " + ns + "/" + deployment, "field is immutable", baseVersion + " stays installed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Compatible does not say %q: %s", want, msg)
			}
		}
		stalled := apimeta.FindStatusCondition(core.Status.Conditions, "Stalled")
		if stalled == nil || stalled.Reason != v1alpha1.DryRunFailedReason {
			t.Errorf("Stalled: %+v", stalled)
		}
		time.Sleep(3 * time.Second) // anything written would be by now
		if after := snapshot(t, ctx, c); after != before {
			t.Errorf("the refused upgrade changed the cluster:\nbefore: %s\nafter:  %s", before, after)
		}
		clusters.reconciled(t, ctx, "after the refused upgrade")
		framework.UpdateProvider(t, ctx, c, core, func() { core.Spec.Version = baseVersion })
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	})
	if t.Failed() {
		return
	}

	t.Run("a new version that never becomes Available is rolled back, across a restart mid-upgrade", func(t *testing.T) {
		framework.UpdateProvider(t, ctx, c, core, func() { core.Spec.Version = "v1.14.3" })
		waitProvider(t, ctx, c, core, "the upgrade to start", func(p *v1alpha1.CoreProvider) bool {
			return p.Status.Upgrade != nil && p.Status.Upgrade.Version == "v1.14.3" && p.Status.Upgrade.StartedAt != nil
		})
		started := core.Status.Upgrade.StartedAt.Time
		if dr := core.Status.Upgrade.DryRun; !strings.Contains(dr, "accepted") {
			t.Errorf("status.upgrade.dryRun: %q", dr)
		}
		waitImage(t, ctx, c, brokenImage("v1.14.3"))
		clusters.reconciled(t, ctx, "during the upgrade")
		t.Log("SIGKILL the manager mid-upgrade")
		manager.Kill()
		time.Sleep(2 * time.Second)
		if err := manager.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		rolledBack(t, ctx, c, core, started, crds, clusters)
		if n := rollbacksMetric(t, ctx); n != 1 {
			t.Errorf("capwright_provider_rollbacks_total for v1.14.3 is %v, want 1", n)
		}
		warning := false
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == core.Name && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.RolledBackReason {
				warning = true
			}
		}
		if !warning {
			t.Error("no Warning event RolledBack")
		}
		// Never tried again by itself.
		time.Sleep(12 * time.Second) // past a resync
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		if f := core.Status.Upgrade.Failed; f == nil || !f.RolledBack || core.Status.InstalledVersion != baseVersion {
			t.Errorf("the failed version was tried again by itself: %+v", core.Status.Upgrade)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("a reset tries the failed version again, and a restart mid-rollback ends in the same state", func(t *testing.T) {
		failedAt := core.Status.Upgrade.Failed.Time
		token := time.Now().Format(time.RFC3339Nano)
		patch := client.MergeFrom(core.DeepCopy())
		core.Annotations = map[string]string{providerplan.ResetAnnotation: token, "reconcile.fluxcd.io/requestedAt": token}
		if err := c.Patch(ctx, core, patch); err != nil {
			t.Fatal(err)
		}
		waitProvider(t, ctx, c, core, "the failed version to be tried again", func(p *v1alpha1.CoreProvider) bool {
			u := p.Status.Upgrade
			return u != nil && u.LastHandledResetAt == token && u.Failed == nil && u.StartedAt != nil
		})
		started := core.Status.Upgrade.StartedAt.Time
		waitProvider(t, ctx, c, core, "the upgrade to fail again", func(p *v1alpha1.CoreProvider) bool {
			f := p.Status.Upgrade.Failed
			return f != nil && f.Time.After(failedAt.Time)
		})
		t.Log("SIGKILL the manager mid-rollback")
		manager.Kill()
		time.Sleep(2 * time.Second)
		if err := manager.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		rolledBack(t, ctx, c, core, started, crds, clusters)
	})
	if t.Failed() {
		return
	}

	t.Run("under onFailure Hold a failed upgrade stays until spec.version goes back", func(t *testing.T) {
		framework.UpdateProvider(t, ctx, c, core, func() { core.Spec.Version = baseVersion })
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
		if core.Status.Upgrade.Failed != nil {
			t.Errorf("status.upgrade.failed after going back: %+v", core.Status.Upgrade.Failed)
		}
		framework.UpdateProvider(t, ctx, c, core, func() {
			core.Spec.Version = "v1.14.3"
			core.Spec.Upgrade.OnFailure = v1alpha1.UpgradeHold
		})
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.InstalledCondition, metav1.ConditionFalse, v1alpha1.InstallFailedReason, 2*time.Minute)
		time.Sleep(15 * time.Second) // a rollback would have begun by now
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		if core.Status.Upgrade.Failed != nil || imageOf(t, ctx, c) != brokenImage("v1.14.3") {
			t.Errorf("a held upgrade was rolled back: %+v, image %s", core.Status.Upgrade, imageOf(t, ctx, c))
		}
		if r := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.ReadyCondition); r.Status != metav1.ConditionFalse {
			t.Errorf("Ready: %+v", r)
		}
		clusters.reconciled(t, ctx, "while the upgrade is held")
		// Today's way out: the old version committed back.
		framework.UpdateProvider(t, ctx, c, core, func() { core.Spec.Version = baseVersion })
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
		waitImage(t, ctx, c, "registry.k8s.io/cluster-api/cluster-api-controller:"+baseVersion)
	})
	if t.Failed() {
		return
	}

	t.Run("a release that moves a CRD's storage version is held, not rolled back, saying why", func(t *testing.T) {
		framework.UpdateProvider(t, ctx, c, core, func() {
			core.Spec.Version = "v1.14.5"
			core.Spec.Upgrade.OnFailure = v1alpha1.UpgradeRollback
		})
		waitProvider(t, ctx, c, core, "the upgrade to start", func(p *v1alpha1.CoreProvider) bool {
			return p.Status.Upgrade != nil && p.Status.Upgrade.Version == "v1.14.5" && p.Status.Upgrade.StartedAt != nil
		})
		blocked := core.Status.Upgrade.RollbackBlocked
		if !strings.Contains(blocked, "extensionconfigs.runtime.cluster.x-k8s.io") || !strings.Contains(blocked, "v1beta3") {
			t.Errorf("status.upgrade.rollbackBlocked: %q", blocked)
		}
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.InstalledCondition, metav1.ConditionFalse, v1alpha1.UpgradeHeldReason, 2*time.Minute)
		msg := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.InstalledCondition).Message
		if !strings.Contains(msg, "storage version") || !strings.Contains(msg, "not rolled back") {
			t.Errorf("Installed does not say why it is held: %s", msg)
		}
		time.Sleep(5 * time.Second)
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		if core.Status.Upgrade.Failed != nil || imageOf(t, ctx, c) != brokenImage("v1.14.5") {
			t.Errorf("an upgrade that cannot be rolled back was: %+v", core.Status.Upgrade)
		}
		clusters.reconciled(t, ctx, "while the upgrade is held")
	})
}

// rolledBack waits for core to be rolled back from v1.14.3 to v1.14.2 and
// checks everything a rollback promises.
func rolledBack(t *testing.T, ctx context.Context, c client.Client, core *v1alpha1.CoreProvider, started time.Time, crds map[string]types.UID, clusters *clusterWatch) {
	t.Helper()
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.InstalledCondition, metav1.ConditionFalse, v1alpha1.RolledBackReason, 3*time.Minute)
	u := core.Status.Upgrade
	if u.Failed != nil {
		t.Logf("rolled back %s after the failure was found", time.Since(u.Failed.Time.Time).Round(time.Second))
	}
	if f := u.Failed; f == nil || f.Version != "v1.14.3" || !f.RolledBack || !strings.HasPrefix(f.Revision, "v1.14.3@sha256:") {
		t.Errorf("status.upgrade.failed: %+v", u.Failed)
	}
	if core.Status.InstalledVersion != baseVersion || u.LastGood.Version != baseVersion {
		t.Errorf("installedVersion %s, lastGood %+v", core.Status.InstalledVersion, u.LastGood)
	}
	if took := u.Failed.Time.Sub(started); took > upgradeTimeout || took < 0 {
		t.Errorf("the failure was found %s after the upgrade started, beyond its timeout of %s", took, upgradeTimeout)
	} else {
		t.Logf("the failure was found %s after the upgrade started (spec.timeout %s, spec.upgrade.timeout %s)", took.Round(time.Second), fluxTimeout, upgradeTimeout)
	}
	for _, typ := range []string{v1alpha1.ReadyCondition, "Stalled"} {
		cond := apimeta.FindStatusCondition(core.Status.Conditions, typ)
		wantStatus := metav1.ConditionFalse
		if typ == "Stalled" {
			wantStatus = metav1.ConditionTrue
		}
		if cond == nil || cond.Status != wantStatus || cond.Reason != v1alpha1.RolledBackReason {
			t.Errorf("%s: %+v", typ, cond)
		}
	}
	if a := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.AvailableCondition); a == nil || a.Status != metav1.ConditionTrue {
		t.Errorf("Available after the rollback: %+v", a)
	}
	// Flux applied the last good revision, pinned by its digest.
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-cluster-api"}, &ks); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(ks.Status.LastAppliedRevision, u.LastGood.Digest) {
		t.Errorf("the Kustomization applied %s, not the last good %s", ks.Status.LastAppliedRevision, u.LastGood.Revision)
	}
	// From a source of its own, which the Kustomization moved to in the
	// same write that left the CRDs out.
	if ref := ks.Spec.SourceRef; ref.Kind != sourcev1.ExternalArtifactKind || ref.Name != "core-cluster-api-rollback" {
		t.Errorf("the Kustomization reads from %s %s", ref.Kind, ref.Name)
	}
	var ea sourcev1.ExternalArtifact
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-cluster-api-rollback"}, &ea); err != nil || ea.Status.Artifact == nil ||
		!strings.HasSuffix(ea.Status.Artifact.Digest, strings.TrimPrefix(u.LastGood.Digest, "sha256:")) {
		t.Errorf("the rollback's ExternalArtifact serves %+v, not %s (%v)", ea.Status.Artifact, u.LastGood.Digest, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-cluster-api"}, &sourcev1.ExternalArtifact{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed version's ExternalArtifact is still there (%v)", err)
	}
	waitImage(t, ctx, c, "registry.k8s.io/cluster-api/cluster-api-controller:"+baseVersion)
	// The CRDs are the same objects, still v1.14.3's.
	for name, uid := range crdUIDs(t, ctx, c) {
		if crds[name] != uid {
			t.Errorf("CRD %s was replaced (UID %s, was %s)", name, uid, crds[name])
		}
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Annotations[releaseMarker]; got != "v1.14.3" {
		t.Errorf("clusters.cluster.x-k8s.io comes from release %q after the rollback, want v1.14.3's (never downgraded)", got)
	}
	// clusterctl's inventory names the version that runs.
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "Provider"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-api"}, inv); err != nil || inv.Object["version"] != baseVersion {
		t.Errorf("clusterctl inventory: version %v (%v)", inv.Object["version"], err)
	}
	if uid := clusters.uid(t, ctx); uid != clusters.first {
		t.Errorf("the Cluster was replaced")
	}
	clusters.reconciled(t, ctx, "after the rollback")

	// capwright status shows it.
	cli, err := env.BuildCLI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, _, err := framework.RunCLI(ctx, cli, "status", "coreprovider/cluster-api", "-n", ns, "-o", "json", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	report, err := framework.ParseStatus(stdout)
	if err != nil || len(report.Objects) != 1 {
		t.Fatalf("capwright status: %v\n%s", err, stdout)
	}
	if o := report.Objects[0]; o.Reason != v1alpha1.RolledBackReason || o.InstalledVersion != baseVersion || !strings.Contains(o.Message, "rolled back") {
		t.Errorf("capwright status shows %s %s: %s", o.Reason, o.InstalledVersion, o.Message)
	}
}

// waitProvider polls core until ok.
func waitProvider(t *testing.T, ctx context.Context, c client.Client, core *v1alpha1.CoreProvider, what string, ok func(*v1alpha1.CoreProvider) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			return false, nil
		}
		return ok(core), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %+v %+v", what, core.Status.Upgrade, core.Status.Conditions)
	}
}

func imageOf(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// waitImage waits for the manager Deployment to run image; the good one
// must also be rolled out and Available.
func waitImage(t *testing.T, ctx context.Context, c client.Client, image string) {
	t.Helper()
	var d appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &d); err != nil {
			return false, nil
		}
		if d.Spec.Template.Spec.Containers[0].Image != image {
			return false, nil
		}
		if strings.Contains(image, ".invalid/") {
			return true, nil
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1 && d.Status.UnavailableReplicas == 0, nil
	})
	if err != nil {
		t.Fatalf("Deployment %s/%s does not run %s: image %s, status %+v", ns, deployment, image, d.Spec.Template.Spec.Containers[0].Image, d.Status)
	}
}

// crdUIDs are the UIDs of the core provider's CRDs.
func crdUIDs(t *testing.T, ctx context.Context, c client.Client) map[string]types.UID {
	t.Helper()
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list, client.MatchingLabels{"cluster.x-k8s.io/provider": "cluster-api"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, crd := range list.Items {
		out[crd.Name] = crd.UID
	}
	if len(out) < 10 {
		t.Fatalf("only %d CRDs of the core provider", len(out))
	}
	return out
}

// snapshot is what an upgrade would change: the Flux objects' specs, the
// Deployment and the CRDs, as resource versions and generations.
func snapshot(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	var ks kustomizev1.Kustomization
	var ea sourcev1.ExternalArtifact
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: ns, Name: "core-cluster-api"}
	if err := c.Get(ctx, key, &ks); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &ea); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &d); err != nil {
		t.Fatal(err)
	}
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list, client.MatchingLabels{"cluster.x-k8s.io/provider": "cluster-api"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kustomization gen %d applied %s; ExternalArtifact %s; Deployment %s", ks.Generation, ks.Status.LastAppliedRevision, ea.Status.Artifact.Digest, d.ResourceVersion)
	for _, crd := range list.Items {
		fmt.Fprintf(&b, "; %s %s", crd.Name, crd.ResourceVersion)
	}
	return b.String()
}

// settledSnapshot is snapshot once nothing writes what it records
// (framework.Settled): Cluster API's CRD migrator marking its CRDs is no
// change of an upgrade's.
func settledSnapshot(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	return framework.Settled(t, "the installed core provider", func() (string, bool) { return snapshot(t, ctx, c), true },
		func(a, b string) bool { return a == b })
}

// rollbacksMetric is capwright_provider_rollbacks_total of the core
// provider for v1.14.3, as the manager serves it.
func rollbacksMetric(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, manager.MetricsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "capwright_provider_rollbacks_total{") && strings.Contains(line, `name="cluster-api"`) && strings.Contains(line, `version="v1.14.3"`) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				return v
			}
		}
	}
	return 0
}

// clusterWatch checks that the real Cluster API manager reconciles a
// Cluster: each check changes its spec (an availability gate) and waits
// for the manager to report on the new generation.
type clusterWatch struct {
	c     client.Client
	key   client.ObjectKey
	first types.UID
	n     int
}

func (w *clusterWatch) uid(t *testing.T, ctx context.Context) types.UID {
	t.Helper()
	cluster := plane.NewTestCluster(w.key.Namespace, w.key.Name)
	if err := w.c.Get(ctx, w.key, cluster); err != nil {
		t.Fatal(err)
	}
	return cluster.GetUID()
}

func (w *clusterWatch) reconciled(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	if w.first == "" {
		w.first = w.uid(t, ctx)
	}
	w.n++
	gate := fmt.Sprintf("UpgradesCheck%d", w.n)
	var generation int64
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cluster := plane.NewTestCluster(w.key.Namespace, w.key.Name)
		if err := w.c.Get(ctx, w.key, cluster); err != nil {
			return false, nil
		}
		gates, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "availabilityGates")
		gates = append(gates, map[string]any{"conditionType": gate})
		if err := unstructured.SetNestedSlice(cluster.Object, gates, "spec", "availabilityGates"); err != nil {
			return false, err
		}
		if err := w.c.Update(ctx, cluster); err != nil {
			return false, nil
		}
		generation = cluster.GetGeneration()
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: cannot change the Cluster: %v", when, err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cluster := plane.NewTestCluster(w.key.Namespace, w.key.Name)
		if err := w.c.Get(ctx, w.key, cluster); err != nil {
			return false, nil
		}
		observed, _, _ := unstructured.NestedInt64(cluster.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
		last = fmt.Sprintf("generation %d, status.observedGeneration %d, %d conditions", cluster.GetGeneration(), observed, len(conditions))
		if observed >= generation {
			return true, nil
		}
		for _, c := range conditions {
			if g, ok := c.(map[string]any)["observedGeneration"].(int64); ok && g >= generation {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: the Cluster API manager does not reconcile Cluster %s: %s", when, w.key, last)
	}
}
