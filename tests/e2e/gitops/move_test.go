package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The second management cluster of docs/gitops.md ("A second management
// cluster, and moving Clusters to it"): bootstrapped from the same
// repository at clusters/management-b, and team A's Clusters moved to it
// with the real `clusterctl move`.
const (
	secondName = "management-b"
	secondPath = "clusters/" + secondName
)

var clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}

// moveToSecondManagementCluster is the end of the GitOps story: a second
// management cluster from the same repository, team A's Tenant back in
// Git (so both management clusters run it), its Clusters moved to the
// second, and the first torn down. clusters are team A's workload
// clusters, Clusters of the first management cluster.
func moveToSecondManagementCluster(t *testing.T, ctx context.Context, c client.Client, w *framework.WorkingCopy, hook *framework.Webhook, examples map[string][]byte, clusters []*workload) {
	var b *plane.Plane
	var cb client.Client
	step(t, "a second management cluster bootstraps from the same repository at clusters/management-b, its providers Ready from Git alone", func(t *testing.T) {
		var err error
		if b, err = env.StartManagementCluster(ctx, secondName); err != nil {
			t.Fatal(err)
		}
		if cb, err = client.New(b.Config, client.Options{Scheme: framework.Scheme()}); err != nil {
			t.Fatal(err)
		}
		// docs/gitops.md: the example's flux-system files in
		// clusters/management-b/flux-system, the site's kustomization.yaml
		// for it, its Secrets, then flux bootstrap git.
		framework.CustomiseFluxSystemAt(t, ctx, b, w, secondPath, map[string]map[string]string{
			"receiver-token":   {"token": receiverToken},
			"platform-webhook": {"address": hook.URL + "/gitops-b"},
		})
		for path, data := range framework.SiteOverlayAt(t, b, releases, secondPath) {
			w.Write(path, data)
		}
		w.CommitAndPush(ctx, "Add the management cluster management-b")

		start := time.Now()
		t.Logf("flux bootstrap git --path=%s:\n%s", secondPath, framework.Bootstrap(t, ctx, b, fluxCLI(t), t.TempDir(), secondPath))
		t.Logf("FIGURE second management cluster: flux bootstrap git, to the flux-system Kustomization Ready: %s", since(start))
		w.Pull(ctx)
		head := w.Head(ctx)
		waitApplied(t, ctx, cb, head, 8*time.Minute, "flux-system", "cert-manager", "providers", "tenants")
		// Capwright's Kustomization applies the release, not the commit.
		capwright, err := kustomization(ctx, cb, "capwright")
		if err != nil {
			t.Fatal(err)
		}
		if err := framework.WaitReady(ctx, cb, capwright, time.Minute); err != nil || !strings.HasPrefix(capwright.Status.LastAppliedRevision, framework.ExampleCapwrightVersion+"@sha256:") {
			t.Fatalf("Capwright's Kustomization on %s applied %q: %v", secondName, capwright.Status.LastAppliedRevision, err)
		}
		for _, p := range framework.ExampleProviders() {
			if err := framework.WaitReady(ctx, cb, p, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			if v := p.GetStatus().InstalledVersion; v != exampleVersion {
				t.Errorf("%T %s/%s on %s installed %q, want %s", p, p.GetNamespace(), p.GetName(), secondName, v, exampleVersion)
			}
		}
		t.Logf("FIGURE second management cluster: flux bootstrap git → every provider Ready: %s", since(start))

		// The same order as the first: the providers only once Capwright
		// and cert-manager were Ready.
		readyAt := func(name string) time.Time {
			ks, err := kustomization(ctx, cb, name)
			if err != nil {
				t.Fatal(err)
			}
			return apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition).LastTransitionTime.Time
		}
		for _, p := range framework.ExampleProviders() {
			if err := cb.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				t.Fatal(err)
			}
			for _, dep := range []string{"capwright", "cert-manager"} {
				if p.GetCreationTimestamp().Time.Before(readyAt(dep).Truncate(time.Second)) {
					t.Errorf("%T %s/%s was created on %s before Kustomization %s was Ready", p, p.GetNamespace(), p.GetName(), secondName, dep)
				}
			}
		}
		// clusterctl's inventory, which clusterctl move reads on both
		// sides, is kept on the second cluster as on the first.
		for _, kc := range []client.Client{c, cb} {
			if got := inventory(t, ctx, kc); got != "bootstrap-kubeadm,cluster-api,control-plane-kubeadm" {
				t.Errorf("clusterctl's inventory: %s", got)
			}
		}
	})

	step(t, "team A's Tenant back in Git: both management clusters run it, each for the Clusters it has", func(t *testing.T) {
		w.Remove("infrastructure/tenants/kustomization.yaml")
		w.Write(tenantFile, examples[tenantFile])
		sha, _ := w.CommitAndPush(ctx, "Bring team A back")
		framework.NotifyPush(t, ctx, c, env)
		framework.NotifyPush(t, ctx, cb, b)
		waitApplied(t, ctx, c, sha, 2*time.Minute, "tenants")
		waitApplied(t, ctx, cb, sha, 2*time.Minute, "tenants")
		waitTenant(t, ctx, c, 3*time.Minute, "Ready on both clusters", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2 && tn.Status.TotalClusters == 2
		})
		waitTenant(t, ctx, cb, time.Minute, "Ready with no Cluster yet on "+secondName, func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.TotalClusters == 0
		})
		for _, wl := range clusters {
			if v := wl.stackVersion(t, ctx); v != "v1.0.0" {
				t.Errorf("%s: the stack's version is %q, want v1.0.0", wl.Name, v)
			}
			waitAvailable(t, ctx, c, wl.Name, time.Minute)
		}
	})

	tools := newClusterctl(t)
	// The stack's ConfigMap on each workload cluster before the move.
	before := map[string]stackState{}
	step(t, "clusterctl move takes team A's Clusters to management-b, whose Cluster API makes them Available; the workload clusters are untouched", func(t *testing.T) {
		// What the second cluster needs of the Clusters' infrastructure
		// and control plane: their kinds, as their provider would install
		// them (the plane plays that provider; no Capwright object).
		if err := b.InstallTestProviderKinds(ctx); err != nil {
			t.Fatal(err)
		}
		for _, wl := range clusters {
			describe := tools.run(t, ctx, "describe", "cluster", wl.Name, "-n", tenantNamespace, "--kubeconfig", env.Kubeconfig)
			describes(t, describe, wl.Name, "on the first management cluster")
		}
		for _, wl := range clusters {
			before[wl.Name] = wl.stack(t, ctx)
		}

		watch := watchAvailable(ctx, map[string]client.Client{"first": c, secondName: cb}, clusterNames(clusters))
		start := time.Now()
		out := tools.run(t, ctx, "move", "-n", tenantNamespace, "--kubeconfig", env.Kubeconfig, "--to-kubeconfig", b.Kubeconfig, "-v", "1")
		took := since(start)
		created := regexp.MustCompile(`(?m)Creating\s+(\S+)="([^"]+)"`).FindAllStringSubmatch(out, -1)
		var moved []string
		for _, m := range created {
			moved = append(moved, m[1]+"/"+m[2])
		}
		t.Logf("FIGURE clusterctl move of namespace %s: %s, %d objects: %s", tenantNamespace, took, len(moved), strings.Join(moved, ", "))
		for _, wl := range clusters {
			for _, want := range []string{"Cluster/" + wl.Name, plane.TestInfraClusterKind + "/" + wl.Name, plane.TestControlPlaneKind + "/" + wl.Name, "Secret/" + wl.Name + "-kubeconfig"} {
				if !contains(moved, want) {
					t.Errorf("clusterctl move did not move %s (it moved %v)", want, moved)
				}
			}
		}

		for _, wl := range clusters {
			waitAvailable(t, ctx, cb, wl.Name, 3*time.Minute)
			if _, err := env.ClusterAPICluster(ctx, tenantNamespace, wl.Name); !apierrors.IsNotFound(err) {
				t.Errorf("Cluster %s/%s is still on the first management cluster: %v", tenantNamespace, wl.Name, err)
			}
		}
		gaps := watch.stop()
		for _, wl := range clusters {
			gap := gaps[wl.Name]
			if gap.firstSecond.IsZero() {
				// Not seen by the poll (its last word is below): when the
				// second cluster's Cluster API turned it Available, to the
				// second.
				t.Logf("Cluster %s on %s, last seen by the poll: %s", wl.Name, secondName, gap.lastSecondWord)
				gap.firstSecond = availableSince(t, ctx, cb, wl.Name)
			}
			t.Logf("FIGURE Cluster %s: Available on the first until %s, on %s from %s: a gap of %s (move started %s)",
				wl.Name, gap.lastFirst.Format("15:04:05.000"), secondName, gap.firstSecond.Format("15:04:05.000"), gap.gap().Round(100*time.Millisecond), start.Format("15:04:05.000"))
			if gap.lastFirst.IsZero() || gap.firstSecond.IsZero() {
				t.Errorf("Cluster %s: Available not seen on both sides (%+v)", wl.Name, gap)
			}
			if g := gap.gap(); g > 2*time.Minute {
				t.Errorf("Cluster %s was not Available for %s", wl.Name, g)
			}
		}

		// The second cluster's Cluster API reconciles the moved objects:
		// it owns them again and probes the workload cluster.
		for _, wl := range clusters {
			cluster := &unstructured.Unstructured{}
			cluster.SetGroupVersionKind(clusterGVK)
			if err := cb.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: wl.Name}, cluster); err != nil {
				t.Fatal(err)
			}
			if paused, _, _ := unstructured.NestedBool(cluster.Object, "spec", "paused"); paused {
				t.Errorf("Cluster %s is still paused on %s", wl.Name, secondName)
			}
			if c := clusterCondition(cluster, "RemoteConnectionProbe"); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("Cluster %s on %s: RemoteConnectionProbe %v", wl.Name, secondName, c)
			}
			describe := tools.run(t, ctx, "describe", "cluster", wl.Name, "-n", tenantNamespace, "--kubeconfig", b.Kubeconfig)
			describes(t, describe, wl.Name, "on "+secondName)
			if after := wl.stack(t, ctx); after != before[wl.Name] {
				t.Errorf("%s: the stack changed during the move: %+v, was %+v", wl.Name, after, before[wl.Name])
			}
		}
	})

	step(t, "the Tenant delivers its stack on management-b; on the first it lets the Clusters go and deletes nothing of the stack", func(t *testing.T) {
		waitTenant(t, ctx, cb, 3*time.Minute, "Ready on both moved clusters on "+secondName, func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2 && tn.Status.TotalClusters == 2
		})
		first := waitTenant(t, ctx, c, 2*time.Minute, "on the first management cluster, without the moved Clusters", func(tn *tenancyv1alpha1.Tenant) bool {
			return tn.Status.TotalClusters == 0
		})
		r := apimeta.FindStatusCondition(first.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		t.Logf("the first management cluster's Tenant: %d/%d clusters, Ready %v", first.Status.ReadyClusters, first.Status.TotalClusters, r)
		for _, wl := range clusters {
			if v := wl.stackVersion(t, ctx); v != "v1.0.0" {
				t.Errorf("%s: the stack's version is %q after the move, want v1.0.0", wl.Name, v)
			}
			owner := wl.stackOwner(t, ctx)
			t.Logf("%s: the stack's ConfigMap is applied by Kustomization %s", wl.Name, owner)
			// The second cluster's Flux found the stack as it was: the
			// same object, not rewritten.
			if after := wl.stack(t, ctx); after != before[wl.Name] {
				t.Errorf("%s: the stack changed when management-b's Tenant took it over: %+v, was %+v", wl.Name, after, before[wl.Name])
			}
		}
		// What the first cluster's Flux may still do to the workload
		// clusters: nothing, since the kubeconfig Secrets moved. The
		// Tenant lets its Kustomizations for them go without pruning
		// (suspended, then deleted): none is left in deletion, Flux
		// retrying a prune it cannot make.
		eventually(t, ctx, time.Minute, "the first management cluster's Kustomizations for the moved Clusters gone", func() (bool, string) {
			left := &unstructured.UnstructuredList{}
			left.SetGroupVersionKind(schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "KustomizationList"})
			if err := c.List(ctx, left, client.InNamespace(tenantNamespace)); err != nil {
				return false, err.Error()
			}
			var names []string
			for _, ks := range left.Items {
				if ks.GetLabels()[tenancyv1alpha1.ClusterNameLabel] != "" {
					names = append(names, fmt.Sprintf("%s (deleting %v, finalizers %v)", ks.GetName(), ks.GetDeletionTimestamp() != nil, ks.GetFinalizers()))
				}
			}
			return len(names) == 0, strings.Join(names, ", ")
		})
		for _, wl := range clusters {
			if after := wl.stack(t, ctx); after != before[wl.Name] {
				t.Errorf("%s: the stack changed when the first management cluster's Tenant let it go: %+v, was %+v", wl.Name, after, before[wl.Name])
			}
		}
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets, client.InNamespace(tenantNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			if strings.HasSuffix(s.Name, "-kubeconfig") {
				t.Errorf("Secret %s/%s is still on the first management cluster", s.Namespace, s.Name)
			}
		}
	})

	step(t, "Capwright's contract kinds are not moved: clusterctl move leaves a CapwrightControlPlane behind", func(t *testing.T) {
		// docs/clusters.md#limits. A Cluster whose control plane is a
		// CapwrightControlPlane, paused so that nothing is installed for
		// it: clusterctl's dry run says what a move would create.
		const ns, name = "hosted", "hosted-a"
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		cp := &clustersv1alpha1.CapwrightControlPlane{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"cluster.x-k8s.io/paused": "true"}},
			Spec: clustersv1alpha1.CapwrightControlPlaneSpec{
				Version:                           "v1.36.3",
				CapwrightControlPlaneResourceSpec: framework.HostedControlPlaneSpec("oci://"+env.Registry.Host+"/charts/hosted", nil),
			},
		}
		if err := c.Create(ctx, cp); err != nil {
			t.Fatal(err)
		}
		infra := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": plane.TestInfraClusterKind,
			"metadata": map[string]any{"namespace": ns, "name": name},
			"status":   map[string]any{"initialization": map[string]any{"provisioned": true}},
		}}
		if err := c.Create(ctx, infra); err != nil {
			t.Fatal(err)
		}
		cluster := plane.NewTestCluster(ns, name)
		_ = unstructured.SetNestedMap(cluster.Object, map[string]any{"apiGroup": clustersv1alpha1.GroupVersion.Group, "kind": clustersv1alpha1.ControlPlaneKind, "name": name}, "spec", "controlPlaneRef")
		if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, time.Minute, "Cluster API owns the CapwrightControlPlane", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
				return false, err.Error()
			}
			return len(cp.OwnerReferences) > 0, fmt.Sprintf("owners %v", cp.OwnerReferences)
		})
		out := tools.run(t, ctx, "move", "--dry-run", "-n", ns, "--kubeconfig", env.Kubeconfig, "--to-kubeconfig", b.Kubeconfig, "-v", "5")
		if !regexp.MustCompile(`Creating\s+Cluster="` + name + `"`).MatchString(out) {
			t.Errorf("clusterctl move --dry-run would not move Cluster %s/%s", ns, name)
		}
		if strings.Contains(out, clustersv1alpha1.ControlPlaneKind+"=") {
			t.Errorf("clusterctl move --dry-run would move the CapwrightControlPlane: docs/clusters.md#limits says it does not")
		}
		if !strings.Contains(out, "not included in GVK considered for move") {
			t.Logf("clusterctl move --dry-run did not say it leaves the CapwrightControlPlane out")
		}
		var crd unstructured.Unstructured
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, types.NamespacedName{Name: "capwrightcontrolplanes.clusters.capwright.io"}, &crd); err != nil {
			t.Fatal(err)
		}
		if _, ok := crd.GetLabels()["clusterctl.cluster.x-k8s.io"]; ok {
			t.Errorf("the CapwrightControlPlane CRD carries clusterctl's label, which makes clusterctl move move it: update docs/clusters.md#limits")
		}
	})

	step(t, "the first management cluster torn down, management-b runs team A's Clusters and stack alone", func(t *testing.T) {
		env.StopCluster()
		for _, wl := range clusters {
			waitAvailable(t, ctx, cb, wl.Name, time.Minute)
		}
		// Flux on management-b still applies the stack: a drifted
		// ConfigMap is put back.
		wl := clusters[0]
		cm := &corev1.ConfigMap{}
		if err := wl.remote.Get(ctx, client.ObjectKey{Namespace: stackNamespace, Name: "baseline"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["version"] = "drifted"
		if err := wl.remote.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"})
		owner := wl.stackOwner(t, ctx)
		ns, name, _ := strings.Cut(owner, "/")
		if err := cb.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks); err != nil {
			t.Fatalf("the stack's Kustomization %s on %s: %v", owner, secondName, err)
		}
		annotations := ks.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
		ks.SetAnnotations(annotations)
		if err := cb.Update(ctx, ks); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, 2*time.Minute, "management-b's Flux puts the drifted stack back", func() (bool, string) {
			v := wl.stackVersion(t, ctx)
			return v == "v1.0.0", "version " + v
		})
		waitTenant(t, ctx, cb, time.Minute, "Ready on both clusters", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2
		})
		for _, p := range framework.ExampleProviders() {
			if err := framework.WaitReady(ctx, cb, p, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		core := &v1alpha1.CoreProvider{}
		if err := cb.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "cluster-api"}, core); err != nil {
			t.Fatal(err)
		}
	})
}

// inventory lists clusterctl's inventory (Provider objects) as
// type-name, sorted.
func inventory(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.GetName())
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// clusterCondition is condition typ of a Cluster, nil when it has none.
func clusterCondition(cluster *unstructured.Unstructured, typ string) *metav1.Condition {
	list, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
	for _, item := range list {
		m, _ := item.(map[string]any)
		if m["type"] == typ {
			c := &metav1.Condition{Type: typ}
			c.Status = metav1.ConditionStatus(fmt.Sprint(m["status"]))
			c.Reason, _ = m["reason"].(string)
			c.Message, _ = m["message"].(string)
			return c
		}
	}
	return nil
}

// available tells whether Cluster tenant-team-a/name is Available on the
// management cluster of c, and what it says.
func available(ctx context.Context, c client.Client, name string) (bool, string) {
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: name}, cluster); err != nil {
		return false, err.Error()
	}
	a := clusterCondition(cluster, "Available")
	if a == nil {
		return false, "no Available condition"
	}
	return a.Status == metav1.ConditionTrue, fmt.Sprintf("Available=%s %s: %s", a.Status, a.Reason, a.Message)
}

func waitAvailable(t *testing.T, ctx context.Context, c client.Client, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, ctx, timeout, "Cluster "+tenantNamespace+"/"+name+" Available", func() (bool, string) {
		return available(ctx, c, name)
	})
}

// availability is what watchAvailable saw of one Cluster.
type availability struct {
	lastFirst, firstSecond time.Time
	// lastSecondWord is what the poll last read on the second cluster
	// while it was not Available there.
	lastSecondWord string
}

// availableSince is when Cluster tenant-team-a/name turned Available on
// the management cluster of c (its condition's lastTransitionTime).
func availableSince(t *testing.T, ctx context.Context, c client.Client, name string) time.Time {
	t.Helper()
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: name}, cluster); err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
	for _, item := range list {
		if m, _ := item.(map[string]any); m["type"] == "Available" && m["status"] == "True" {
			at, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
			if err != nil {
				t.Fatal(err)
			}
			return at
		}
	}
	return time.Time{}
}

// gap is how long the Cluster was Available on neither cluster, 0 when
// the second had it Available before the first stopped (a
// lastTransitionTime is to the second only).
func (a availability) gap() time.Duration {
	if a.lastFirst.IsZero() || a.firstSecond.IsZero() || a.firstSecond.Before(a.lastFirst) {
		return 0
	}
	return a.firstSecond.Sub(a.lastFirst)
}

// availableWatch polls the Clusters' Available condition on both
// management clusters every 100 ms.
type availableWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   map[string]availability
}

// watchAvailable records, per Cluster name, when it was last Available on
// the management cluster "first" and first Available on any other.
func watchAvailable(ctx context.Context, clients map[string]client.Client, names []string) *availableWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &availableWatch{cancel: cancel, done: make(chan struct{}), seen: map[string]availability{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for side, c := range clients {
				for _, name := range names {
					ok, word := available(ctx, c, name)
					if !ok {
						if side != "first" {
							w.mu.Lock()
							a := w.seen[name]
							a.lastSecondWord = word
							w.seen[name] = a
							w.mu.Unlock()
						}
						continue
					}
					now := time.Now()
					w.mu.Lock()
					a := w.seen[name]
					if side == "first" {
						a.lastFirst = now
					} else if a.firstSecond.IsZero() {
						a.firstSecond = now
					}
					w.seen[name] = a
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *availableWatch) stop() map[string]availability {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func clusterNames(clusters []*workload) []string {
	var names []string
	for _, wl := range clusters {
		names = append(names, wl.Name)
	}
	return names
}

// stackState identifies the stack's ConfigMap on a workload cluster: an
// object deleted and created again, or rewritten, changes it.
type stackState struct {
	UID, ResourceVersion, Version string
}

func (wl *workload) stack(t *testing.T, ctx context.Context) stackState {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := wl.remote.Get(ctx, client.ObjectKey{Namespace: stackNamespace, Name: "baseline"}, cm); err != nil {
		t.Fatalf("%s: %v", wl.Name, err)
	}
	return stackState{string(cm.UID), cm.ResourceVersion, cm.Data["version"]}
}

// stackOwner is the Kustomization (namespace/name) whose inventory holds
// the stack's ConfigMap, from Flux's labels on it.
func (wl *workload) stackOwner(t *testing.T, ctx context.Context) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := wl.remote.Get(ctx, client.ObjectKey{Namespace: stackNamespace, Name: "baseline"}, cm); err != nil {
		t.Fatalf("%s: %v", wl.Name, err)
	}
	return cm.Labels["kustomize.toolkit.fluxcd.io/namespace"] + "/" + cm.Labels["kustomize.toolkit.fluxcd.io/name"]
}

// describes checks that `clusterctl describe cluster` shows the Cluster as
// the root of its tree, Available, with its infrastructure and control
// plane.
func describes(t *testing.T, describe, name, where string) {
	t.Helper()
	t.Logf("clusterctl describe cluster %s %s:\n%s", name, where, describe)
	ref := regexp.QuoteMeta(tenantNamespace + "/" + name)
	for _, re := range []string{
		`(?m)^Cluster ` + ref + `\s+True\s+Available\s`,
		`(?m)^\W+` + plane.TestControlPlaneKind + ` ` + ref + `\b`,
		`(?m)^\W+` + plane.TestInfraClusterKind + ` ` + ref + `\b`,
	} {
		if !regexp.MustCompile(re).MatchString(describe) {
			t.Errorf("clusterctl describe cluster %s %s does not match %s", name, where, re)
		}
	}
}

// clusterctlCLI runs the clusterctl make tools builds, with a home of its
// own and no version check (there is no GitHub here).
type clusterctlCLI struct {
	binary string
	env    []string
}

func newClusterctl(t *testing.T) *clusterctlCLI {
	t.Helper()
	bin, err := plane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterctlCLI{binary: filepath.Join(bin, "clusterctl")}
	if _, err := os.Stat(c.binary); err != nil {
		t.Fatalf("clusterctl is not built (make tools): %v", err)
	}
	home := t.TempDir()
	c.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "CLUSTERCTL_DISABLE_VERSIONCHECK=true"}
	return c
}

func (c *clusterctlCLI) run(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.binary, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("clusterctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
