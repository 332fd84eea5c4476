package tenant

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// With sharding, every Flux object the plan writes carries its shard, a
// cluster's objects the same one, and nothing else does; a new number of
// shards writes the same objects under new labels and prunes nothing.
func TestPlanShardsFluxObjects(t *testing.T) {
	clusters := []clusterapi.Facts{ready("team-b-clusters", "a", nil), ready("team-b-clusters", "b", nil), ready("team-b-clusters", "c", nil)}
	plans := map[render.Sharding]Desired{}
	for _, s := range []render.Sharding{{}, {Shards: 2, TenantLabel: true}, {Shards: 3, TenantLabel: true}} {
		f := facts(kustomizeTenant(), clusters)
		f.Sharding = s
		f.Stacks = map[types.NamespacedName]StackFacts{}
		for _, c := range clusters {
			// Every stack exists: all of them are written.
			f.Stacks[c.Ref()] = StackFacts{StackExists: true}
		}
		d, err := Plan(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Prune) != 0 {
			t.Errorf("sharding %s prunes %d objects", s, len(d.Prune))
		}
		plans[s] = d
		byCluster := map[string]string{}
		for _, w := range d.Writes {
			kind := w.Object.GetObjectKind().GroupVersionKind()
			shard, ok := w.Object.GetLabels()[render.ShardLabel]
			flux := strings.HasSuffix(kind.Group, ".toolkit.fluxcd.io")
			switch {
			case s == render.Sharding{} && ok:
				t.Errorf("sharding off: %s %s labelled %s", kind.Kind, w.Object.GetName(), shard)
			case s != render.Sharding{} && flux && !ok:
				t.Errorf("sharding %s: %s %s not labelled", s, kind.Kind, w.Object.GetName())
			case !flux && ok:
				t.Errorf("sharding %s: %s %s labelled", s, kind.Kind, w.Object.GetName())
			}
			if w.Group != "" && strings.HasPrefix(w.Group, "cluster ") {
				if had, seen := byCluster[w.Group]; seen && had != shard {
					t.Errorf("sharding %s: %s split over %s and %s", s, w.Group, had, shard)
				}
				byCluster[w.Group] = shard
			}
		}
	}
	off, two, three := plans[render.Sharding{}], plans[render.Sharding{Shards: 2, TenantLabel: true}], plans[render.Sharding{Shards: 3, TenantLabel: true}]
	if names(off.Writes) != names(two.Writes) || names(two.Writes) != names(three.Writes) {
		t.Errorf("the writes differ by more than their labels:\noff   %s\n2     %s\n3     %s", names(off.Writes), names(two.Writes), names(three.Writes))
	}
}

func names(writes []plan.Write) string {
	var out []string
	for _, w := range writes {
		out = append(out, w.Object.GetObjectKind().GroupVersionKind().Kind+" "+w.Object.GetNamespace()+"/"+w.Object.GetName())
	}
	return strings.Join(out, ", ")
}
