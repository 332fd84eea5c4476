package tenants

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The suite's Flux sharding (main_test.go): the manager runs with
// --flux-sharding=fluxShards, the plane with a kustomize-controller for
// each of fluxShardNames besides the main one.
const fluxShards = 2

var fluxShardNames = []string{"shard1", "shard2"}

// kustomizeInstances are the plane's kustomize-controller processes: the
// main one (no shard key) and one per shard.
func kustomizeInstances() []string {
	out := []string{"kustomize-controller"}
	for _, s := range fluxShardNames {
		out = append(out, plane.KustomizeShard(s))
	}
	return out
}

// instanceOf is the kustomize-controller instance that should reconcile
// an object of shard ("" for none).
func instanceOf(shard string) string {
	if shard == "" {
		return "kustomize-controller"
	}
	return plane.KustomizeShard(shard)
}

// Sharded Flux, on the plane: a Tenant's Flux objects carry the shard of
// their tenant and cluster, each kustomize-controller shard reconciles the
// Kustomizations of its shard and no other instance does, and the stack
// becomes Ready on every cluster; a Tenant labelled with a shard has all
// its objects there, and moving it to another shard relabels the same
// objects, which the other shard then reconciles.
func TestFluxShardsSplitTenants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const clustersNS, clusterCount = "sharded-clusters", 6
	for i := range clusterCount {
		if _, err := env.RegisterWorkloadCluster(ctx, workloads[i%len(workloads)], clustersNS, fmt.Sprintf("sharded-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/sharded", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	sharding := render.Sharding{Shards: fluxShards, TenantLabel: true}
	offsets := logSizes(t)
	start := time.Now()

	// "halves": its six clusters hash three to each shard.
	halves := kustomizeTenant("halves", art, tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}, Namespaces: []string{clustersNS}})
	// "pinned": labelled shard1, where the hash alone would put two of
	// its three clusters on shard2.
	pinned := kustomizeTenant("pinned", art, tenancyv1alpha1.ClusterSelector{Names: []string{"sharded-0", "sharded-1", "sharded-3"}, Namespaces: []string{clustersNS}})
	pinned.Labels = map[string]string{render.ShardLabel: "shard1"}
	// Registered before the Tenants, so it runs once they are deleted:
	// their target namespaces leave the workload clusters before the
	// next test (a Tenant of the same name, created again while its
	// namespace still terminates, waits for Flux's retry).
	t.Cleanup(func() { targetNamespacesGone(t, halves.TargetNamespace(), pinned.TargetNamespace()) })
	createTenant(t, ctx, c, halves)
	createTenant(t, ctx, c, pinned)
	readyOn := func(n int32) func(*tenancyv1alpha1.Tenant) bool {
		return func(tn *tenancyv1alpha1.Tenant) bool { return isReady(tn) && tn.Status.ReadyClusters == n }
	}
	waitTenant(t, ctx, c, halves.Name, 5*time.Minute, "halves Ready on 6 clusters", readyOn(clusterCount))
	waitTenant(t, ctx, c, pinned.Name, 5*time.Minute, "pinned Ready on 3 clusters", readyOn(3))
	t.Logf("both tenants Ready on their 9 clusters, through two kustomize-controller shards, after %s", time.Since(start).Round(time.Millisecond))

	halvesWant := wantShards(t, c, halves, sharding)
	if got := shardCounts(halvesWant); got["shard1"] == 0 || got["shard2"] == 0 {
		t.Fatalf("halves' Kustomizations hash to %v: pick cluster names that spread over both shards", got)
	}
	pinnedWant := wantShards(t, c, pinned, sharding)
	if got := shardCounts(pinnedWant); len(got) != 1 || got["shard1"] == 0 {
		t.Errorf("pinned's Kustomizations are on %v, want all on its label's shard1", got)
	}
	if hashed := shardCounts(wantShards(t, c, pinned, render.Sharding{Shards: fluxShards})); hashed["shard2"] == 0 {
		t.Fatalf("the hash alone puts pinned on %v: the label overrides nothing; pick cluster names the hash puts on shard2", hashed)
	}
	reconciledOnlyBy(t, offsets, halvesWant, pinnedWant)

	// Move pinned to shard2: the same objects (same UIDs) carry the new
	// label, and shard2 takes them over.
	uids := fluxUIDs(t, ctx, c, pinned.Name)
	offsets = logSizes(t)
	moved := time.Now()
	tn := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: pinned.Name}, tn); err != nil {
		t.Fatal(err)
	}
	tn.Labels[render.ShardLabel] = "shard2"
	if err := c.Update(ctx, tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "pinned's Flux objects relabelled shard2", func() (bool, string) {
		var off []string
		for ref, shard := range fluxShardsOf(t, ctx, c, pinned.Name) {
			if shard != "shard2" {
				off = append(off, ref+" on "+shard)
			}
		}
		sort.Strings(off)
		return len(off) == 0, strings.Join(off, ", ")
	})
	if after := fluxUIDs(t, ctx, c, pinned.Name); !equalMaps(after, uids) {
		t.Errorf("moving pinned to shard2 replaced objects: UIDs before %v, after %v", uids, after)
	}
	eventually(t, 2*time.Minute, "shard2 reconciles pinned's Kustomizations", func() (bool, string) {
		seen := reconciledIn(t, plane.KustomizeShard("shard2"), offsets[plane.KustomizeShard("shard2")])
		var missing []string
		for ks := range pinnedWant {
			if seen[ks] == 0 {
				missing = append(missing, ks.String())
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, "not yet: " + strings.Join(missing, ", ")
	})
	waitTenant(t, ctx, c, pinned.Name, 2*time.Minute, "pinned Ready on 3 clusters on shard2", readyOn(3))
	t.Logf("pinned moved to shard2 and reconciled there after %s", time.Since(moved).Round(time.Millisecond))
}

// targetNamespacesGone waits until none of namespaces is left on the
// workload clusters.
func targetNamespacesGone(t *testing.T, namespaces ...string) {
	t.Helper()
	for _, w := range workloads {
		remote := newClient(t, w.Config)
		eventually(t, 3*time.Minute, fmt.Sprintf("namespaces %v gone from %s", namespaces, w.Name), func() (bool, string) {
			var left []string
			for _, ns := range namespaces {
				err := remote.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
				if !apierrors.IsNotFound(err) {
					left = append(left, fmt.Sprintf("%s (%v)", ns, err))
				}
			}
			return len(left) == 0, "left: " + strings.Join(left, ", ")
		})
	}
}

// wantShards are the Kustomizations of tn's clusters (the stack's and the
// target namespace's) and the shard each must be on under s, checking on
// the way that the tenant's Flux objects carry exactly that shard: a
// cluster's objects its own, the namespace's source and ExternalArtifact
// the shard of the tenant and the namespace.
func wantShards(t *testing.T, c client.Client, tn *tenancyv1alpha1.Tenant, s render.Sharding) map[types.NamespacedName]string {
	t.Helper()
	current := &tenancyv1alpha1.Tenant{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: tn.Name}, current); err != nil {
		t.Fatal(err)
	}
	// What the objects are labelled with is checked against the Tenant's
	// own labels only when s honours them (the real manager does).
	if !s.TenantLabel {
		current.Labels = nil
	}
	want := map[types.NamespacedName]string{}
	namespaces := map[string]bool{}
	for _, line := range current.Status.Clusters {
		cluster := types.NamespacedName{Namespace: line.Namespace, Name: line.Name}
		shard := s.TenantShard(current, tn.Name+"/"+cluster.Namespace+"/"+cluster.Name)
		want[types.NamespacedName{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(tn.Name, cluster)}] = shard
		want[types.NamespacedName{Namespace: cluster.Namespace, Name: render.TenantNamespaceObjectName(tn.Name, cluster)}] = shard
		namespaces[cluster.Namespace] = true
	}
	if len(want) == 0 {
		t.Fatalf("Tenant %s lists no clusters: %s", tn.Name, tenantState(current))
	}
	if !s.TenantLabel {
		return want
	}
	got := fluxShardsOf(t, context.Background(), c, tn.Name)
	for ks, shard := range want {
		if ref := "Kustomization " + ks.String(); got[ref] != shard {
			t.Errorf("%s is labelled %s=%q, want %q", ref, render.ShardLabel, got[ref], shard)
		}
	}
	for ns := range namespaces {
		shard := s.TenantShard(current, tn.Name+"/"+ns)
		for _, ref := range []string{"OCIRepository " + ns + "/" + render.TenantSourceName(tn.Name), "ExternalArtifact " + ns + "/" + render.TenantNamespaceArtifactName(tn.Name)} {
			if got[ref] != shard {
				t.Errorf("%s is labelled %s=%q, want %q", ref, render.ShardLabel, got[ref], shard)
			}
		}
	}
	return want
}

func shardCounts(want map[types.NamespacedName]string) map[string]int {
	out := map[string]int{}
	for _, s := range want {
		out[s]++
	}
	return out
}

// fluxShardsOf are the shard labels of the tenant's Flux objects, by
// "Kind namespace/name".
func fluxShardsOf(t *testing.T, ctx context.Context, c client.Client, tenant string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for ref, o := range fluxObjects(t, ctx, c, tenant) {
		out[ref] = o.GetLabels()[render.ShardLabel]
	}
	return out
}

// fluxUIDs are the UIDs of the tenant's Flux objects.
func fluxUIDs(t *testing.T, ctx context.Context, c client.Client, tenant string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for ref, o := range fluxObjects(t, ctx, c, tenant) {
		out[ref] = o.GetUID()
	}
	return out
}

// fluxObjects are the Kustomizations, OCIRepositories and
// ExternalArtifacts labelled for the tenant.
func fluxObjects(t *testing.T, ctx context.Context, c client.Client, tenant string) map[string]metav1.Object {
	t.Helper()
	byTenant := client.MatchingLabels{tenancyv1alpha1.TenantLabel: tenant}
	out := map[string]metav1.Object{}
	var kss kustomizev1.KustomizationList
	var repos sourcev1.OCIRepositoryList
	var eas sourcev1.ExternalArtifactList
	for _, l := range []client.ObjectList{&kss, &repos, &eas} {
		if err := c.List(ctx, l, byTenant); err != nil {
			t.Fatal(err)
		}
	}
	for i := range kss.Items {
		out["Kustomization "+client.ObjectKeyFromObject(&kss.Items[i]).String()] = &kss.Items[i]
	}
	for i := range repos.Items {
		out["OCIRepository "+client.ObjectKeyFromObject(&repos.Items[i]).String()] = &repos.Items[i]
	}
	for i := range eas.Items {
		out["ExternalArtifact "+client.ObjectKeyFromObject(&eas.Items[i]).String()] = &eas.Items[i]
	}
	return out
}

func equalMaps[K, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// reconciledOnlyBy checks, in the kustomize-controller logs from offsets
// on, that each Kustomization of want was reconciled by the instance of
// its shard and by no other instance.
func reconciledOnlyBy(t *testing.T, offsets map[string]int64, wants ...map[types.NamespacedName]string) {
	t.Helper()
	seen := map[string]map[types.NamespacedName]int{}
	for _, instance := range kustomizeInstances() {
		seen[instance] = reconciledIn(t, instance, offsets[instance])
	}
	perInstance := map[string]int{}
	for _, want := range wants {
		for ks, shard := range want {
			own := instanceOf(shard)
			if seen[own][ks] == 0 {
				t.Errorf("Kustomization %s (%s) was not reconciled by %s", ks, shard, own)
			}
			perInstance[own]++
			for _, other := range kustomizeInstances() {
				if other != own && seen[other][ks] > 0 {
					t.Errorf("Kustomization %s (%s) was reconciled by %s too (%d log lines)", ks, shard, other, seen[other][ks])
				}
			}
		}
	}
	t.Logf("Kustomizations reconciled per instance: %v", perInstance)
}

// logSizes are the current sizes of the kustomize-controller instances'
// logs.
func logSizes(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, instance := range kustomizeInstances() {
		fi, err := os.Stat(env.LogPath(instance))
		if err != nil {
			t.Fatalf("the log of %s: %v (is the plane sharded? see main_test.go)", instance, err)
		}
		out[instance] = fi.Size()
	}
	return out
}

// reconciledIn counts, per Kustomization, the lines a kustomize-controller
// instance logged about reconciling it from offset on (its JSON log names
// the object being reconciled on every line of a reconcile).
func reconciledIn(t *testing.T, instance string, offset int64) map[types.NamespacedName]int {
	t.Helper()
	data, err := os.ReadFile(env.LogPath(instance))
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.NamespacedName]int{}
	for line := range bytes.Lines(data[min(offset, int64(len(data))):]) {
		var entry struct {
			ControllerKind string `json:"controllerKind"`
			Namespace      string `json:"namespace"`
			Name           string `json:"name"`
		}
		if json.Unmarshal(line, &entry) != nil || entry.ControllerKind != kustomizev1.KustomizationKind || entry.Name == "" {
			continue
		}
		out[types.NamespacedName{Namespace: entry.Namespace, Name: entry.Name}]++
	}
	return out
}
