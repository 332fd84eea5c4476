package gitops

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The example's providers, and the version the control plane provider is
// committed at first, one release back: the upgrade commit brings
// infrastructure/providers/cluster-api.yaml to the example as written.
const (
	providersFile    = framework.ExampleProvidersFile
	tenantFile       = "infrastructure/tenants/team-a.yaml"
	tenantAlertsFile = "infrastructure/tenant-alerts/team-a-rollouts.yaml"
	exampleVersion   = plane.CAPIVersion
	previousVersion  = framework.PreviousCAPIVersion
	tenantNamespace  = framework.ExampleTenantNamespace
	stackNamespace   = framework.ExampleStackNamespace
)

// clusterAlertsFile is the Alert of team A's contract kinds, in the
// Tenant's namespace.
const clusterAlertsFile = "infrastructure/tenant-alerts/team-a-clusters.yaml"

// controlPlaneDeployment is the kubeadm control plane provider's manager.
var controlPlaneDeployment = client.ObjectKey{Namespace: "capi-kubeadm-control-plane-system", Name: "capi-kubeadm-control-plane-controller-manager"}

// TestGitOps runs a management cluster from a Git repository, the way a
// platform team does, one commit at a time: bootstrap, the first push, the
// Tenant's clusters, a provider upgrade, a rollout, commits that are
// refused and their reverts, a Tenant removed, and then a second
// management cluster bootstrapped from the same repository, the Clusters
// moved to it with clusterctl move and the first torn down. Each step
// starts from where the one before left the cluster.
func TestGitOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c := newClient(t)
	hook := framework.NewWebhook(t)
	examples := framework.ExampleRepository(t, env.RepoRoot())

	// What the site has before its first commit: Capwright's release and
	// team A's stack in its registry, and the workload clusters Cluster
	// API will have made (started now, registered once Cluster API runs).
	framework.ReleaseCapwright(t, ctx, env, framework.ExampleCapwrightVersion, func(line string) { t.Log(line) })
	publishStack(ctx, t, "v1.0.0")
	workloads := startWorkloads(t, ctx, "canary", "late")
	w := framework.CloneFleet(t, ctx, env.Git, t.TempDir())

	step(t, "flux bootstrap git syncs the cluster from the repository, with the feature gate the repository sets", func(t *testing.T) {
		framework.CustomiseFluxSystem(t, ctx, env, w, map[string]map[string]string{
			"receiver-token":   {"token": receiverToken},
			"platform-webhook": {"address": hook.URL + "/gitops"},
		})

		start := time.Now()
		t.Logf("flux bootstrap git:\n%s", framework.Bootstrap(t, ctx, env, fluxCLI(t), t.TempDir(), framework.ManagementPath))
		t.Logf("FIGURE flux bootstrap git, to the flux-system Kustomization Ready: %s", since(start))
		w.Pull(ctx)
		for _, name := range []string{"gotk-components.yaml", "gotk-sync.yaml"} {
			if len(w.Read(framework.ManagementPath+"/flux-system/"+name)) == 0 {
				t.Errorf("flux bootstrap committed no %s", name)
			}
		}
		if !strings.Contains(string(w.Read(framework.ManagementPath+"/flux-system/kustomization.yaml")), "--feature-gates=ExternalArtifact=true,") {
			t.Errorf("flux bootstrap replaced the committed flux-system/kustomization.yaml")
		}
		// The gate reaches kustomize-controller only through the
		// repository: the plane starts Flux with nothing of its own.
		deploy := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "kustomize-controller"}, deploy); err != nil {
			t.Fatal(err)
		}
		const gates = "--feature-gates=ExternalArtifact=true,CancelHealthCheckOnNewRevision=true"
		if args := deploy.Spec.Template.Spec.Containers[0].Args; !contains(args, gates) {
			t.Errorf("kustomize-controller's Deployment has args %q, without the gate flux-system/kustomization.yaml adds", args)
		}
		if cmd := lastCommandLine(t, env.LogPath("kustomize-controller")); !strings.Contains(cmd, gates) {
			t.Errorf("kustomize-controller runs as %q, without the gate", cmd)
		}
	})

	var firstPush time.Time
	step(t, "one push takes the empty cluster to Capwright, the providers and the Tenant, in dependsOn order", func(t *testing.T) {
		for path, data := range examples {
			if !strings.HasPrefix(path, framework.ManagementPath+"/flux-system/") {
				w.Write(path, data)
			}
		}
		for path, data := range framework.SiteOverlay(t, env, releases) {
			w.Write(path, data)
		}
		w.Edit(providersFile, func(s string) string { return framework.SetControlPlaneVersion(t, s, previousVersion) })
		sha, pushed := w.CommitAndPush(ctx, "Install Capwright, cert-manager, the Cluster API providers and team A")
		firstPush = pushed
		// No Receiver call: the GitRepository finds the commit at its
		// interval (1m, bootstrap's default).
		got := fetched(t, ctx, c, sha, 3*time.Minute)
		t.Logf("FIGURE push → the GitRepository has the commit, without the Receiver (interval 1m): %s", got.Sub(pushed).Round(100*time.Millisecond))
		waitApplied(t, ctx, c, sha, 8*time.Minute, "flux-system", "cert-manager", "providers", "tenants")
		// Capwright's Kustomization applies the release, not the commit.
		capwright, err := kustomization(ctx, c, "capwright")
		if err != nil {
			t.Fatal(err)
		}
		if err := framework.WaitReady(ctx, c, capwright, time.Minute); err != nil || !strings.HasPrefix(capwright.Status.LastAppliedRevision, framework.ExampleCapwrightVersion+"@sha256:") {
			t.Fatalf("Capwright's Kustomization applied %q: %v", capwright.Status.LastAppliedRevision, err)
		}
		providers := framework.ExampleProviders()
		for _, p := range providers {
			if err := framework.WaitReady(ctx, c, p, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		tenant := waitTenant(t, ctx, c, time.Minute, "Ready", func(tn *tenancyv1alpha1.Tenant) bool { return isReady(tn) })
		t.Logf("FIGURE push → Capwright, every provider and the Tenant Ready: %s (the GitRepository's poll included)", since(pushed))
		t.Logf("FIGURE the GitRepository has the commit → all Ready: %s", since(got))

		// dependsOn order: providers only once Capwright and cert-manager
		// were Ready, the Tenant once the providers were.
		readyAt := func(name string) time.Time {
			ks, err := kustomization(ctx, c, name)
			if err != nil {
				t.Fatal(err)
			}
			return apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition).LastTransitionTime.Time
		}
		for _, p := range providers {
			created := p.GetCreationTimestamp().Time
			for _, dep := range []string{"capwright", "cert-manager"} {
				if created.Before(readyAt(dep).Truncate(time.Second)) {
					t.Errorf("%T %s/%s was created at %s, before Kustomization %s was Ready (%s)", p, p.GetNamespace(), p.GetName(), created, dep, readyAt(dep))
				}
			}
			if c := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition); c == nil || c.LastTransitionTime.After(readyAt("providers").Add(time.Second)) {
				t.Errorf("provider %s/%s Ready %v after the providers Kustomization was Ready (%s)", p.GetNamespace(), p.GetName(), c, readyAt("providers"))
			}
		}
		if tenant.CreationTimestamp.Time.Before(readyAt("providers").Truncate(time.Second)) {
			t.Errorf("the Tenant was created at %s, before the providers were Ready (%s)", tenant.CreationTimestamp, readyAt("providers"))
		}
	})

	var clusters []*workload
	step(t, "the Tenant's stack lands on the Clusters it selects", func(t *testing.T) {
		for i, wl := range workloads.get(t) {
			registerCluster(t, ctx, c, wl, []string{"canary", "late"}[i])
			clusters = append(clusters, wl)
		}
		waitTenant(t, ctx, c, 3*time.Minute, "Ready on both clusters", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2
		})
		for _, wl := range clusters {
			if v := wl.stackVersion(t, ctx); v != "v1.0.0" {
				t.Errorf("%s: the stack's version is %q, want v1.0.0", wl.Name, v)
			}
		}
		t.Logf("FIGURE first push → the stack on both clusters (registered as Cluster API made them): %s", since(firstPush))
	})

	step(t, "a commit upgrades a provider", func(t *testing.T) {
		before := &appsv1.Deployment{}
		if err := c.Get(ctx, controlPlaneDeployment, before); err != nil {
			t.Fatal(err)
		}
		w.Write(providersFile, examples[providersFile])
		sha, pushed := w.CommitAndPush(ctx, "Upgrade the kubeadm control plane provider to "+exampleVersion)
		framework.NotifyPush(t, ctx, c, env)
		got := fetched(t, ctx, c, sha, time.Minute)
		t.Logf("FIGURE push + the Receiver → the GitRepository has the commit: %s", got.Sub(pushed).Round(100*time.Millisecond))
		cp := &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlaneDeployment.Namespace, Name: "kubeadm"}}
		eventually(t, ctx, 3*time.Minute, "the control plane provider upgraded and Ready", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
				return false, err.Error()
			}
			ready := apimeta.FindStatusCondition(cp.Status.Conditions, v1alpha1.ReadyCondition)
			return cp.Spec.Version == exampleVersion && cp.Status.InstalledVersion == exampleVersion && ready != nil &&
				ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cp.Generation, fmt.Sprintf("version %s installed %s Ready %v", cp.Spec.Version, cp.Status.InstalledVersion, ready)
		})
		t.Logf("FIGURE push + the Receiver → the upgraded provider Ready: %s", since(pushed))
		waitApplied(t, ctx, c, sha, time.Minute, "providers")
		after := &appsv1.Deployment{}
		if err := c.Get(ctx, controlPlaneDeployment, after); err != nil {
			t.Fatal(err)
		}
		if image := after.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, ":"+exampleVersion) {
			t.Errorf("the control plane provider runs %s after the upgrade", image)
		}
		if after.UID != before.UID {
			t.Errorf("the upgrade replaced the Deployment %s (UID %s, was %s)", controlPlaneDeployment, after.UID, before.UID)
		}
	})

	step(t, "a commit rolls the Tenant's stack out wave by wave", func(t *testing.T) {
		// As tenants.md says: spec.rollout in a commit of its own, which
		// makes what runs the last good revision; then the new tag.
		w.Edit(tenantFile, func(s string) string {
			return strings.TrimRight(s, "\n") + `
  rollout:
    waveLabel: ring
    waves:
    - name: canary
    - name: late
    maxUpdating: 100%
    bakeTime: 10s
`
		})
		w.CommitAndPush(ctx, "Roll team A's stack out canary first")
		framework.NotifyPush(t, ctx, c, env)
		waitTenant(t, ctx, c, 2*time.Minute, "with v1.0.0 as its last good revision", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.Rollout != nil && tn.Status.Rollout.LastGood != nil &&
				strings.HasPrefix(tn.Status.Rollout.LastGood.Artifact, "v1.0.0")
		})
		publishStack(ctx, t, "v1.1.0")
		w.Edit(tenantFile, func(s string) string { return strings.Replace(s, "tag: v1.0.0", "tag: v1.1.0", 1) })
		_, pushed := w.CommitAndPush(ctx, "Move team A's stack to v1.1.0")
		framework.NotifyPush(t, ctx, c, env)
		var split bool
		eventually(t, ctx, 3*time.Minute, "v1.1.0 on both clusters", func() (bool, string) {
			canary, late := clusters[0].stackVersion(t, ctx), clusters[1].stackVersion(t, ctx)
			if canary == "v1.1.0" && late == "v1.0.0" {
				split = true
			}
			if late == "v1.1.0" && canary != "v1.1.0" {
				t.Fatalf("the late wave got v1.1.0 before the canary")
			}
			return canary == "v1.1.0" && late == "v1.1.0", "canary " + canary + ", late " + late
		})
		if !split {
			t.Errorf("the canary never ran v1.1.0 while the late wave still ran v1.0.0")
		}
		waitTenant(t, ctx, c, time.Minute, "rollout Complete", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.Rollout != nil && tn.Status.Rollout.Phase == tenancyv1alpha1.RolloutComplete
		})
		t.Logf("FIGURE push + the Receiver → rollout complete on 2 clusters in 2 waves (bake 10s): %s", since(pushed))
	})

	step(t, "a commit the API server refuses fails its Kustomization, changes nothing and pages with the commit; the revert recovers", func(t *testing.T) {
		core := framework.ExampleProviders()[0]
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		w.Edit(providersFile, func(s string) string {
			return strings.Replace(s, "kind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\nspec:\n  version: "+exampleVersion,
				"kind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\nspec:\n  version: "+strings.TrimPrefix(exampleVersion, "v"), 1)
		})
		sha, _ := w.CommitAndPush(ctx, "Pin the core provider without its v")
		framework.NotifyPush(t, ctx, c, env)
		refused(t, ctx, c, hook, "providers", sha, "CoreProvider/capi-system/cluster-api", "spec.version", "version must be a semantic version with a leading v")
		unchanged(t, ctx, c, core)
		revert, _ := w.Revert(ctx, sha)
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, revert, 2*time.Minute, "providers")

		w.Edit(tenantFile, func(s string) string {
			return strings.Replace(s, "  clusters:\n", "  clusters:\n    namespaces: [kube-system]\n", 1)
		})
		sha, _ = w.CommitAndPush(ctx, "Let team A select Clusters in kube-system")
		framework.NotifyPush(t, ctx, c, env)
		refused(t, ctx, c, hook, "tenants", sha, "Tenant/team-a", "clusters.namespaces", "must not list kube-system")
		revert, _ = w.Revert(ctx, sha)
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, revert, 2*time.Minute, "tenants")
	})

	step(t, "a commit Capwright refuses leaves the provider as installed, the providers Kustomization says so; the revert recovers", func(t *testing.T) {
		core := framework.ExampleProviders()[0]
		w.Edit(providersFile, func(s string) string {
			return strings.Replace(s, "name: cluster-api\n  namespace: capi-system\nspec:\n  version: "+exampleVersion, "name: cluster-api\n  namespace: capi-system\nspec:\n  version: v1.14.99", 1)
		})
		sha, _ := w.CommitAndPush(ctx, "Upgrade the core provider to a version never released")
		framework.NotifyPush(t, ctx, c, env)
		eventually(t, ctx, 2*time.Minute, "the CoreProvider refuses v1.14.99", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
				return false, err.Error()
			}
			ready := apimeta.FindStatusCondition(core.GetConditions(), v1alpha1.ReadyCondition)
			return core.GetSpec().Version == "v1.14.99" && ready != nil && ready.ObservedGeneration == core.GetGeneration() &&
				ready.Status == metav1.ConditionFalse, fmt.Sprintf("Ready %v", ready)
		})
		ready := apimeta.FindStatusCondition(core.GetConditions(), v1alpha1.ReadyCondition)
		t.Logf("the CoreProvider says: %s: %s", ready.Reason, ready.Message)
		if !strings.Contains(ready.Message, "v1.14.99") {
			t.Errorf("the CoreProvider's Ready does not name the version: %s", ready.Message)
		}
		if installed := core.GetStatus().InstalledVersion; installed != exampleVersion {
			t.Errorf("the core provider's installed version is %q, want %s still", installed, exampleVersion)
		}
		// The CoreProvider is not stalled (a release may yet be
		// published), so Flux's health check waits on it, and says so,
		// until its timeout (10m in the example) or the next commit.
		eventually(t, ctx, 2*time.Minute, "the providers Kustomization waits on the commit", func() (bool, string) {
			ks, err := kustomization(ctx, c, "providers")
			if err != nil {
				return false, err.Error()
			}
			r := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			h := apimeta.FindStatusCondition(ks.Status.Conditions, "Healthy")
			return r != nil && r.Status != metav1.ConditionTrue && ks.Status.LastAttemptedRevision == gitRevision(sha) &&
					h != nil && h.Status != metav1.ConditionTrue && strings.Contains(h.Message, gitRevision(sha)),
				fmt.Sprintf("Ready %v, Healthy %v", r, h)
		})
		deploy := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, deploy); err != nil {
			t.Fatal(err)
		}
		if image := deploy.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, ":"+exampleVersion) {
			t.Errorf("the core provider runs %s, want %s still", image, exampleVersion)
		}
		revert, _ := w.Revert(ctx, sha)
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, revert, 3*time.Minute, "providers")
		if err := framework.WaitReady(ctx, c, core, time.Minute); err != nil {
			t.Fatal(err)
		}
	})

	step(t, "removing a provider from Git while Clusters use it keeps it; putting it back keeps its UIDs", func(t *testing.T) {
		core := framework.ExampleProviders()[0]
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		if a := core.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"]; a != "disabled" {
			t.Errorf("Capwright did not take the CoreProvider's pruning over from Flux: annotation %q", a)
		}
		manager := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, manager); err != nil {
			t.Fatal(err)
		}
		const coreDoc = "apiVersion: providers.capwright.io/v1alpha1\nkind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\nspec:\n  version: " + exampleVersion + "\n---\n"
		w.Edit(providersFile, func(s string) string { return strings.Replace(s, coreDoc, "", 1) })
		sha, pushed := w.CommitAndPush(ctx, "Remove the core provider")
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, sha, 2*time.Minute, "providers")
		kept := core.DeepCopyObject().(v1alpha1.Provider)
		eventually(t, ctx, time.Minute, "the CoreProvider kept, Deleting naming what uses it", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(kept), kept); err != nil {
				return false, err.Error()
			}
			d := apimeta.FindStatusCondition(kept.GetConditions(), v1alpha1.DeletingCondition)
			return d != nil && d.Status == metav1.ConditionTrue && d.Reason == v1alpha1.DeletionBlockedReason, fmt.Sprintf("Deleting %v", d)
		})
		d := apimeta.FindStatusCondition(kept.GetConditions(), v1alpha1.DeletingCondition)
		t.Logf("the CoreProvider says: %s", d.Message)
		for _, want := range []string{"Kustomization flux-system/providers no longer applies it", gitRevision(sha), "Cluster " + tenantNamespace + "/canary", "Cluster " + tenantNamespace + "/late"} {
			if !strings.Contains(d.Message, want) {
				t.Errorf("Deleting's message does not name %q: %s", want, d.Message)
			}
		}
		if kept.GetUID() != core.GetUID() || !kept.GetDeletionTimestamp().IsZero() {
			t.Errorf("the CoreProvider was deleted (UID %s, was %s; deletion %v)", kept.GetUID(), core.GetUID(), kept.GetDeletionTimestamp())
		}
		t.Logf("FIGURE push + the Receiver → the removed provider held, saying why: %s", since(pushed))

		revert, _ := w.Revert(ctx, sha)
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, revert, 2*time.Minute, "providers")
		if err := framework.WaitReady(ctx, c, kept, time.Minute); err != nil {
			t.Fatal(err)
		}
		if d := apimeta.FindStatusCondition(kept.GetConditions(), v1alpha1.DeletingCondition); d == nil || d.Status != metav1.ConditionFalse {
			t.Errorf("Deleting = %v once the file is back", d)
		}
		after := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(manager), after); err != nil {
			t.Fatal(err)
		}
		if kept.GetUID() != core.GetUID() || after.UID != manager.UID {
			t.Errorf("UIDs changed: CoreProvider %s → %s, Deployment %s → %s", core.GetUID(), kept.GetUID(), manager.UID, after.UID)
		}
	})

	step(t, "deleting the Tenant's file uninstalls its stack from its clusters and keeps its Clusters", func(t *testing.T) {
		w.Remove(tenantFile)
		w.Remove(tenantAlertsFile)
		w.Remove(clusterAlertsFile)
		// They were the last files of their folders, and Flux refuses a
		// Kustomization whose path is gone rather than prune all it
		// applied: as docs/gitops.md says, the folders stay, empty.
		for _, dir := range []string{"infrastructure/tenants", "infrastructure/tenant-alerts"} {
			w.Write(dir+"/kustomization.yaml", []byte(emptyKustomization))
		}
		sha, pushed := w.CommitAndPush(ctx, "Remove team A")
		framework.NotifyPush(t, ctx, c, env)
		waitApplied(t, ctx, c, sha, 2*time.Minute, "tenants")
		eventually(t, ctx, 2*time.Minute, "the Tenant gone", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, &tenancyv1alpha1.Tenant{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		for _, wl := range clusters {
			eventually(t, ctx, 2*time.Minute, "the stack gone from "+wl.Name, func() (bool, string) {
				v := wl.stackVersion(t, ctx)
				return v == "", "version " + v
			})
		}
		t.Logf("FIGURE push + the Receiver → the stack uninstalled from 2 clusters: %s", since(pushed))
		for _, wl := range clusters {
			if _, err := env.ClusterAPICluster(ctx, tenantNamespace, wl.Name); err != nil {
				t.Errorf("Cluster %s/%s after the Tenant went: %v", tenantNamespace, wl.Name, err)
			}
		}
	})

	moveToSecondManagementCluster(t, ctx, c, w, hook, examples, clusters)
}

// emptyKustomization keeps a folder with nothing in it for Flux.
const emptyKustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"

// step runs one step of a story as a subtest; a failed step ends the
// story, as every later one starts from where it left the cluster.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}

// refused checks that commit sha failed Kustomization name, naming each of
// what in its Ready message, and that the Alert paged with an error event
// of that Kustomization naming the commit.
func refused(t *testing.T, ctx context.Context, c client.Client, hook *framework.Webhook, name, sha string, what ...string) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "Kustomization "+name+" fails at "+sha[:12], func() (bool, string) {
		ks, err := kustomization(ctx, c, name)
		if err != nil {
			return false, err.Error()
		}
		r := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		if r == nil || r.Status != metav1.ConditionFalse || ks.Status.LastAttemptedRevision != gitRevision(sha) {
			return false, fmt.Sprintf("Ready %v, attempted %s", r, ks.Status.LastAttemptedRevision)
		}
		for _, s := range what {
			if !strings.Contains(r.Message, s) {
				return false, fmt.Sprintf("Ready's message does not name %q: %s", s, r.Message)
			}
		}
		t.Logf("Kustomization %s: %s: %s", name, r.Reason, r.Message)
		return true, ""
	})
	eventually(t, ctx, time.Minute, "an Alert naming the commit", func() (bool, string) {
		events := hook.Events("/gitops")
		for _, e := range events {
			if e.InvolvedObject.Kind == "Kustomization" && e.InvolvedObject.Name == name && e.Severity == "error" &&
				strings.Contains(e.Metadata["revision"], sha) && strings.Contains(e.Message, what[0]) {
				t.Logf("paged: %s %s: %s (revision %s)", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, e.Metadata["revision"])
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none of Kustomization %s at %s", len(events), name, sha[:12])
	})
}

// unchanged checks that a refused commit left the provider as it was.
func unchanged(t *testing.T, ctx context.Context, c client.Client, before v1alpha1.Provider) {
	t.Helper()
	now := before.DeepCopyObject().(v1alpha1.Provider)
	if err := c.Get(ctx, client.ObjectKeyFromObject(before), now); err != nil {
		t.Fatal(err)
	}
	if now.GetGeneration() != before.GetGeneration() || now.GetSpec().Version != before.GetSpec().Version {
		t.Errorf("the refused commit changed %s/%s: generation %d → %d, version %s → %s", before.GetNamespace(), before.GetName(),
			before.GetGeneration(), now.GetGeneration(), before.GetSpec().Version, now.GetSpec().Version)
	}
}

// lastCommandLine is the command line a plane component was last started
// with, as its log's header records it.
func lastCommandLine(t *testing.T, log string) string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "# ") {
			last = line
		}
	}
	return last
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isReady tells whether the Tenant is Ready for its generation.
func isReady(tn *tenancyv1alpha1.Tenant) bool {
	r := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	return r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == tn.Generation
}

// waitTenant waits until Tenant team-a is as ok says.
func waitTenant(t *testing.T, ctx context.Context, c client.Client, timeout time.Duration, what string, ok func(*tenancyv1alpha1.Tenant) bool) *tenancyv1alpha1.Tenant {
	t.Helper()
	tn := &tenancyv1alpha1.Tenant{}
	eventually(t, ctx, timeout, "Tenant team-a "+what, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, tn); err != nil {
			return false, err.Error()
		}
		r := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		return ok(tn), fmt.Sprintf("Ready %v, %d/%d clusters", r, tn.Status.ReadyClusters, tn.Status.TotalClusters)
	})
	return tn
}

// workload is a workload cluster of team A.
type workload struct {
	*plane.WorkloadCluster
	remote client.Client
}

// stackVersion is the version of the stack's ConfigMap on the cluster, ""
// when there is none.
func (wl *workload) stackVersion(t *testing.T, ctx context.Context) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := wl.remote.Get(ctx, client.ObjectKey{Namespace: stackNamespace, Name: "baseline"}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return ""
		}
		t.Fatalf("%s: %v", wl.Name, err)
	}
	return cm.Data["version"]
}

// pendingWorkloads are workload clusters starting in the background.
type pendingWorkloads struct {
	wg  sync.WaitGroup
	out []*workload
	err []error
}

// startWorkloads starts a workload cluster per name in the background.
func startWorkloads(t *testing.T, ctx context.Context, names ...string) *pendingWorkloads {
	p := &pendingWorkloads{out: make([]*workload, len(names)), err: make([]error, len(names))}
	for i, name := range names {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w, err := env.StartWorkloadCluster(ctx, name, plane.WorkloadOptions{ControllerManager: true})
			if err != nil {
				p.err[i] = err
				return
			}
			remote, err := client.New(w.Config, client.Options{})
			p.out[i], p.err[i] = &workload{WorkloadCluster: w, remote: remote}, err
		}()
	}
	return p
}

func (p *pendingWorkloads) get(t *testing.T) []*workload {
	t.Helper()
	p.wg.Wait()
	for _, err := range p.err {
		if err != nil {
			t.Fatal(err)
		}
	}
	return p.out
}

// registerCluster makes wl a Cluster of team A in wave ring, as Cluster API
// would once it had provisioned it: the Cluster (through the real Cluster
// API manager's webhooks) with its infrastructure and control plane
// objects, which the real manager makes Available and clusterctl move
// can move, and its kubeconfig Secret.
func registerCluster(t *testing.T, ctx context.Context, c client.Client, wl *workload, ring string) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "Cluster "+wl.Name+" registered", func() (bool, string) {
		_, err := env.ProvisionWorkloadCluster(ctx, wl.WorkloadCluster, tenantNamespace, wl.Name)
		return err == nil, fmt.Sprint(err)
	})
	if err := env.LabelCluster(ctx, tenantNamespace, wl.Name, map[string]string{"tenant": "team-a", "ring": ring}); err != nil {
		t.Fatal(err)
	}
}
