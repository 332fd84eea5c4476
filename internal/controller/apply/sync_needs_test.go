package apply

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/internal/plan"
)

// A conflict of a group the pruning or a nudge needs skips them; the
// objects pruned are reported; the write whose error stopped the sync is
// named.
func TestSyncPruneAndNudgeNeeds(t *testing.T) {
	theirs := repo("a", "stack", false)
	stale := kustomization("b", "old")
	stale.UID = types.UID("stale-uid")
	ks := kustomization("b", "stack")
	c := fake.NewClientBuilder().WithScheme(syncScheme(t)).WithObjects(theirs, stale, ks).Build()
	nudged := false
	d := plan.Desired{
		Writes:     []plan.Write{{Object: repo("a", "stack", true), Group: "owner"}},
		Owned:      ownedByMe,
		Prune:      []plan.Object{stale},
		PruneNeeds: []string{"owner"},
		Nudges: func(plan.Observed) []plan.Nudge {
			nudged = true
			return []plan.Nudge{{Object: kustomization("b", "stack"), Token: "t1", Needs: []string{"owner"}}}
		},
	}
	res, err := Syncer{Client: c}.Sync(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if _, bad := res.Conflicts["owner"]; !bad || len(res.Pruned) != 0 || res.Failed != nil {
		t.Fatalf("result %+v, want the owner's conflict, nothing pruned, nothing failed", res)
	}
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(stale), kustomization("b", "old")); err != nil {
		t.Errorf("pruned despite the conflict it needs: %v", err)
	}
	got := kustomization("b", "stack")
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(got), got); err != nil || !nudged || got.Annotations["reconcile.fluxcd.io/requestedAt"] != "" {
		t.Errorf("nudged despite the conflict it needs: %v %v", got.Annotations, err)
	}

	// Without the conflict: pruned and reported.
	d.Writes = nil
	if res, err = (Syncer{Client: c}).Sync(context.Background(), d); err != nil || len(res.Pruned) != 1 || res.Pruned[0].GetName() != "old" {
		t.Fatalf("pruned %v (%v), want old", res.Pruned, err)
	}

	boom := errors.New("boom")
	failing := interceptor.NewClient(c, interceptor.Funcs{Get: func(context.Context, ctrl.WithWatch, ctrl.ObjectKey, ctrl.Object, ...ctrl.GetOption) error {
		return boom
	}})
	w := plan.Write{Object: repo("c", "stack", true), Group: "c"}
	res, err = Syncer{Client: failing}.Sync(context.Background(), plan.Desired{Writes: []plan.Write{w}})
	if !errors.Is(err, boom) || res.Failed == nil || res.Failed.Group != "c" {
		t.Errorf("Sync = %+v, %v; want the failed write named", res, err)
	}
}

// An applier to orphan is suspended before it is deleted, so Flux's
// finalizer lets it go without pruning; another one is deleted as it is.
func TestSyncSuspendsAnOrphanBeforeDeletingIt(t *testing.T) {
	orphan, pruned := kustomization("b", "moved"), kustomization("b", "deselected")
	// Flux's finalizer holds both, so what the deletion found stays to see.
	orphan.Finalizers, pruned.Finalizers = []string{"finalizers.fluxcd.io"}, []string{"finalizers.fluxcd.io"}
	orphan.UID, pruned.UID = "orphan-uid", "pruned-uid"
	c := fake.NewClientBuilder().WithScheme(syncScheme(t)).WithObjects(orphan, pruned).Build()
	d := plan.Desired{
		Prune:  []plan.Object{orphan.DeepCopy(), pruned.DeepCopy()},
		Orphan: map[string]bool{plan.ObservedKey("Kustomization", "b", "moved"): true},
	}
	if _, err := (Syncer{Client: c}).Sync(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		suspend bool
	}{{"moved", true}, {"deselected", false}} {
		got := kustomization("b", tt.name)
		if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		if got.DeletionTimestamp == nil || got.Spec.Suspend != tt.suspend {
			t.Errorf("%s: deleting %v, spec.suspend %v; want deleting, suspend %v", tt.name, got.DeletionTimestamp != nil, got.Spec.Suspend, tt.suspend)
		}
	}
}
