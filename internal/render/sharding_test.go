package render

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

func TestParseSharding(t *testing.T) {
	for in, want := range map[string]Sharding{
		"":             {},
		"off":          {},
		"tenant-label": {TenantLabel: true},
		"1":            {Shards: 1, TenantLabel: true},
		"2":            {Shards: 2, TenantLabel: true},
		" 100 ":        {Shards: 100, TenantLabel: true},
	} {
		got, err := ParseSharding(in)
		if err != nil || got != want {
			t.Errorf("ParseSharding(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseSharding(got.String()); err != nil || again != got {
			t.Errorf("ParseSharding(%q) = %+v, %v: does not read back its String %q", in, again, err, got.String())
		}
	}
	for _, in := range []string{"0", "-1", "101", "two", "hash", "shard1"} {
		_, err := ParseSharding(in)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) || !strings.Contains(err.Error(), "tenant-label") {
			t.Errorf("ParseSharding(%q) = %v, want an error naming it and the values to write", in, err)
		}
	}
}

// The same tenant and cluster land on the same shard in every process
// and release: the figures are pinned, so a change of the hash (which
// would move objects between shards on upgrade) fails here.
func TestTenantShardIsStable(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	for _, tt := range []struct {
		key    string
		shards int
		want   string
	}{
		{"team-a/default/workload-1", 2, "shard2"},
		{"team-a/default/workload-2", 2, "shard1"},
		{"team-a/default", 2, "shard2"},
		{"team-a/default/workload-1", 4, "shard2"},
		{"team-a/default/workload-1", 1, "shard1"},
	} {
		s := Sharding{Shards: tt.shards}
		for range 3 {
			if got := s.TenantShard(tenant, tt.key); got != tt.want {
				t.Errorf("%d shards: %s is on %s, want %s", tt.shards, tt.key, got, tt.want)
			}
		}
	}
}

// 1,000 tenants with 20 clusters each spread about evenly, and a shard
// added moves only about the share the new shard takes.
func TestTenantShardsSpreadEvenly(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{}
	keys := make([]string, 0, 20000)
	for i := range 1000 {
		for c := range 20 {
			keys = append(keys, fmt.Sprintf("tenant-%04d/fleet-%d/cluster-%02d", i, i%7, c))
		}
	}
	for _, n := range []int{2, 3, 4, 8, 16} {
		counts := map[string]int{}
		for _, k := range keys {
			counts[Sharding{Shards: n}.TenantShard(tenant, k)]++
		}
		if len(counts) != n {
			t.Errorf("%d shards: objects went to %d shards: %v", n, len(counts), counts)
		}
		even := len(keys) / n
		for i := 1; i <= n; i++ {
			// Within 5% of an even share: a binomial spread's standard
			// deviation here is below 1%.
			if got := counts[ShardName(i)]; got < even*95/100 || got > even*105/100 {
				t.Errorf("%d shards: %s holds %d of %d objects, want about %d", n, ShardName(i), got, len(keys), even)
			}
		}
		moved := 0
		for _, k := range keys {
			if (Sharding{Shards: n}).TenantShard(tenant, k) != (Sharding{Shards: n + 1}).TenantShard(tenant, k) {
				moved++
			}
		}
		if want := len(keys) / (n + 1); moved < want*90/100 || moved > want*110/100 {
			t.Errorf("from %d to %d shards: %d of %d objects moved, want about %d (the new shard's share)", n, n+1, moved, len(keys), want)
		}
	}
}

func TestLabelTenantObjects(t *testing.T) {
	tenant := kustomizeTenant()
	a := types.NamespacedName{Namespace: "team-b-clusters", Name: "a"}
	b := types.NamespacedName{Namespace: "shared", Name: "b"}
	sel := ClusterSelection{Clusters: []ClusterDecision{{Cluster: a, Selected: true, Eligible: true}, {Cluster: b, Selected: true, Eligible: true}}}
	render := func(s Sharding, labels map[string]string) *RenderedTenant {
		t.Helper()
		tn := tenant.DeepCopy()
		tn.Labels = labels
		out, err := Tenant(tn, sel, TenantOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.LabelTenantObjects(tn, out.Objects()...)
		return out
	}
	shards := func(r *RenderedTenant) map[string]string {
		out := map[string]string{}
		for _, o := range r.Objects() {
			if v, ok := o.GetLabels()[ShardLabel]; ok {
				out[o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName()] = v
			}
		}
		return out
	}

	t.Run("off", func(t *testing.T) {
		if got := shards(render(Sharding{}, map[string]string{ShardLabel: "shard7"})); len(got) != 0 {
			t.Errorf("sharding off labelled %v", got)
		}
	})

	t.Run("hash", func(t *testing.T) {
		s := Sharding{Shards: 2, TenantLabel: true}
		r := render(s, nil)
		got := shards(r)
		// Every Flux object, and nothing else.
		if want := len(r.Sources) + len(r.NamespaceArtifacts) + 2*len(r.Clusters); len(got) != want {
			t.Errorf("labelled %d objects, want the %d Flux objects: %v", len(got), want, got)
		}
		for _, o := range []Object{r.Management.Namespace, r.Management.ServiceAccount, r.Management.RoleBinding} {
			if _, ok := o.GetLabels()[ShardLabel]; ok {
				t.Errorf("%s %s labelled", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
			}
		}
		// A cluster's objects stay together, on the shard of the tenant
		// and the cluster; a namespace's shared objects on the shard of
		// the tenant and the namespace.
		for _, c := range r.Clusters {
			want := s.TenantShard(tenant, tenant.Name+"/"+c.Cluster.Namespace+"/"+c.Cluster.Name)
			if c.Kustomization.Labels[ShardLabel] != want || c.Namespace.Labels[ShardLabel] != want {
				t.Errorf("cluster %s: stack on %q, namespace Kustomization on %q, want %q", c.Cluster, c.Kustomization.Labels[ShardLabel], c.Namespace.Labels[ShardLabel], want)
			}
		}
		for i, src := range r.Sources {
			want := s.TenantShard(tenant, tenant.Name+"/"+src.Namespace)
			if src.Labels[ShardLabel] != want || r.NamespaceArtifacts[i].Labels[ShardLabel] != want {
				t.Errorf("namespace %s: source on %q, ExternalArtifact on %q, want %q", src.Namespace, src.Labels[ShardLabel], r.NamespaceArtifacts[i].Labels[ShardLabel], want)
			}
		}
		// The tenant's own labels stay.
		if r.Clusters[0].Kustomization.Labels[tenancyv1alpha1.TenantLabel] != tenant.Name {
			t.Errorf("labels %v lost the tenant's", r.Clusters[0].Kustomization.Labels)
		}
	})

	t.Run("tenant label overrides the hash", func(t *testing.T) {
		for _, s := range []Sharding{{Shards: 2, TenantLabel: true}, {TenantLabel: true}} {
			got := shards(render(s, map[string]string{ShardLabel: "team-b-shard"}))
			if len(got) == 0 {
				t.Errorf("%s: nothing labelled", s)
			}
			for o, v := range got {
				if v != "team-b-shard" {
					t.Errorf("%s: %s on %q, want the Tenant's team-b-shard", s, o, v)
				}
			}
		}
	})

	t.Run("tenant-label leaves unlabelled tenants alone", func(t *testing.T) {
		for _, labels := range []map[string]string{nil, {ShardLabel: ""}} {
			if got := shards(render(Sharding{TenantLabel: true}, labels)); len(got) != 0 {
				t.Errorf("Tenant labels %v: labelled %v", labels, got)
			}
		}
	})

	t.Run("chart stack", func(t *testing.T) {
		tn := chartTenant()
		out, err := Tenant(tn, ClusterSelection{Clusters: []ClusterDecision{{Cluster: prodEU1, Selected: true, Eligible: true}}}, TenantOptions{})
		if err != nil {
			t.Fatal(err)
		}
		Sharding{Shards: 3}.LabelTenantObjects(tn, out.Objects()...)
		if out.Clusters[0].HelmRelease.Labels[ShardLabel] == "" || out.Sources[0].Labels[ShardLabel] == "" {
			t.Errorf("HelmRelease labels %v, source labels %v: want both sharded", out.Clusters[0].HelmRelease.Labels, out.Sources[0].Labels)
		}
	})
}
