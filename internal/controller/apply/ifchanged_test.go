package apply

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/internal/plan"
)

const testHash = "test.capwright.io/hash"

// appliedKustomization is what a cache holds once kustomize-controller has
// applied a provider: the spec Capwright applied and an inventory of
// every object, here 150 (the core provider has about that many).
func appliedKustomization(t testing.TB) (desired, cached *kustomizev1.Kustomization) {
	desired = &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: "core-cluster-api", Namespace: "capi-system", Labels: map[string]string{"app": "x"}},
		Spec:       kustomizev1.KustomizationSpec{Path: "./", Prune: true, Wait: true, TargetNamespace: "capi-system", Interval: metav1.Duration{Duration: 600e9}},
	}
	want, err := plan.AsApplied(desired, testHash)
	if err != nil {
		t.Fatal(err)
	}
	cached = &kustomizev1.Kustomization{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(want.Object, cached); err != nil {
		t.Fatal(err)
	}
	inv := &kustomizev1.ResourceInventory{}
	for i := range 150 {
		inv.Entries = append(inv.Entries, kustomizev1.ResourceRef{ID: fmt.Sprintf("capi-system_object-%d__ConfigMap", i), Version: "v1"})
	}
	cached.Status = kustomizev1.KustomizationStatus{Inventory: inv, LastAppliedRevision: "v1.14.2@sha256:0123",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded", Message: "Applied revision: v1.14.2@sha256:0123"}}}
	return desired, cached
}

func newClient(t testing.TB, applies *int, objs ...ctrl.Object) ctrl.Client {
	scheme := runtime.NewScheme()
	if err := kustomizev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build(), interceptor.Funcs{
		Apply: func(context.Context, ctrl.WithWatch, runtime.ApplyConfiguration, ...ctrl.ApplyOption) error {
			*applies++
			return nil
		},
	})
}

// TestIfChangedLooksOnlyAtWhatItApplies: the status Flux writes (an
// inventory, conditions) and the managedFields are no change; a field
// Capwright sets that someone changed is one, and what the check sees is
// the object without them.
func TestIfChangedLooksOnlyAtWhatItApplies(t *testing.T) {
	desired, cached := appliedKustomization(t)
	applies := 0
	c := newClient(t, &applies, cached)
	var seen *unstructured.Unstructured
	check := func(existing *unstructured.Unstructured) error { seen = existing; return nil }
	if err := IfChanged(context.Background(), c, c, desired.DeepCopy(), testHash, "capwright", check); err != nil {
		t.Fatal(err)
	}
	if applies != 0 {
		t.Fatalf("applied %d times an object that holds what was applied", applies)
	}
	if seen.GetName() != "core-cluster-api" || seen.GetLabels()["app"] != "x" {
		t.Errorf("the check saw %s with labels %v", seen.GetName(), seen.GetLabels())
	}
	if status, _ := seen.Object["status"].(map[string]any); len(status) > 0 {
		t.Errorf("the check saw a status: %v", status)
	}

	// The cache's own copy keeps its status.
	got := &kustomizev1.Kustomization{}
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(cached), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Inventory == nil || len(got.Status.Inventory.Entries) != 150 {
		t.Errorf("the stored object lost its inventory")
	}

	changed := cached.DeepCopy()
	changed.Spec.Prune = false
	changed.ResourceVersion = ""
	applies = 0
	c = newClient(t, &applies, changed)
	if err := IfChanged(context.Background(), c, c, desired.DeepCopy(), testHash, "capwright", check); err != nil {
		t.Fatal(err)
	}
	if applies != 1 {
		t.Fatalf("applied %d times an object someone changed, want once", applies)
	}
}

// BenchmarkIfChangedOfAnAppliedKustomization is the reconcile's look at a
// Flux object that holds what Capwright applied: what every status change
// of that object costs the manager.
func BenchmarkIfChangedOfAnAppliedKustomization(b *testing.B) {
	desired, cached := appliedKustomization(b)
	applies := 0
	c := newClient(b, &applies, cached)
	ok := func(*unstructured.Unstructured) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := IfChanged(context.Background(), c, c, desired, testHash, "capwright", ok); err != nil {
			b.Fatal(err)
		}
	}
	if applies != 0 {
		b.Fatalf("applied %d times", applies)
	}
}

// TestIfChangedLeavesAnObjectBeingDeleted: a Flux object someone deleted
// waits for Flux's finalizer (its prune); applying to it could not add the
// finalizer back and might drop it, so nothing is written, even when its
// spec differs.
func TestIfChangedLeavesAnObjectBeingDeleted(t *testing.T) {
	desired, cached := appliedKustomization(t)
	deleting := cached.DeepCopy()
	deleting.Spec.Prune = false
	deleting.ResourceVersion = ""
	deleting.Finalizers = []string{"finalizers.fluxcd.io"}
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	applies := 0
	c := newClient(t, &applies, deleting)
	if err := IfChanged(context.Background(), c, c, desired.DeepCopy(), testHash, "capwright", func(*unstructured.Unstructured) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if applies != 0 {
		t.Fatalf("applied %d times to an object being deleted", applies)
	}
}

// TestSyncerSkipsWhatTheCacheShowsUnchanged: an Uncached write of a kind
// in the cache is not read again without it when the cache shows it as
// last applied; a changed one, one the cache does not hold, and one whose
// kind is not cached are read uncached, and the changed one written.
func TestSyncerSkipsWhatTheCacheShowsUnchanged(t *testing.T) {
	ctx := context.Background()
	desired, cached := appliedKustomization(t)
	var applies, uncachedReads int
	flux := func(plan.Object) bool { return true }
	sync := func(s Syncer, o plan.Object) {
		t.Helper()
		if _, err := s.Sync(ctx, plan.Desired{Writes: []plan.Write{{Object: o, Uncached: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	hashed := func(o *kustomizev1.Kustomization) *kustomizev1.Kustomization {
		// Sync applies with plan.HashAnnotation; the cached object must
		// carry that hash to be unchanged.
		want, err := plan.AsApplied(o, plan.HashAnnotation)
		if err != nil {
			t.Fatal(err)
		}
		out := o.DeepCopy()
		out.Annotations = want.GetAnnotations()
		return out
	}
	c := cached.DeepCopy()
	c.Annotations = hashed(desired).Annotations
	cache := newClient(t, &applies, c)
	uncached := interceptor.NewClient(fake.NewClientBuilder().WithScheme(cache.Scheme()).WithObjects(c.DeepCopy()).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
			uncachedReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})

	sync(Syncer{Client: cache, Reader: uncached, Cached: flux}, desired)
	if applies != 0 || uncachedReads != 0 {
		t.Fatalf("unchanged in the cache: %d applies and %d uncached reads, want none", applies, uncachedReads)
	}
	sync(Syncer{Client: cache, Reader: uncached}, desired)
	if applies != 0 || uncachedReads != 1 {
		t.Fatalf("kind not cached: %d applies and %d uncached reads, want 0 and 1", applies, uncachedReads)
	}
	changed := desired.DeepCopy()
	changed.Spec.Path = "./other"
	sync(Syncer{Client: cache, Reader: uncached, Cached: flux}, changed)
	if applies != 1 || uncachedReads != 2 {
		t.Fatalf("changed: %d applies and %d uncached reads, want 1 and 2", applies, uncachedReads)
	}
	missing := desired.DeepCopy()
	missing.Name = "not-cached-yet"
	sync(Syncer{Client: cache, Reader: uncached, Cached: flux}, missing)
	if applies != 2 || uncachedReads != 3 {
		t.Fatalf("not in the cache: %d applies and %d uncached reads, want 2 and 3", applies, uncachedReads)
	}
}

// Just after it starts, the API server answers 403 until its authorizer
// has read the RBAC objects (the soak saw a healthy provider marked
// InstallFailed by one such answer): IfChanged reads again a while, and
// goes on once the answer changes; a 403 that stays is returned.
func TestIfChangedReadsAgainWhileTheAPIServerRefusesForNow(t *testing.T) {
	readBackoff.Duration = time.Millisecond
	defer func() { readBackoff.Duration = 250 * time.Millisecond }()
	desired, cached := appliedKustomization(t)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: kustomizev1.GroupVersion.Group, Resource: "kustomizations"}, desired.Name, errors.New(`User "capwright-manager" cannot get resource`))
	for _, tc := range []struct {
		name      string
		refusals  int
		wantReads int
		wantErr   bool
	}{
		{"refused twice, then read", 2, 3, false},
		{"refused every time", 100, readBackoff.Steps, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applies, reads := 0, 0
			base := newClient(t, &applies, cached.DeepCopy())
			c := interceptor.NewClient(base.(ctrl.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
					if reads++; reads <= tc.refusals {
						return forbidden
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			err := IfChanged(context.Background(), c, c, desired, testHash, plan.FieldOwner, func(*unstructured.Unstructured) error { return nil })
			if (err != nil) != tc.wantErr || reads != tc.wantReads {
				t.Errorf("IfChanged = %v after %d reads, want error %v after %d", err, reads, tc.wantErr, tc.wantReads)
			}
			if tc.wantErr && !apierrors.IsForbidden(err) {
				t.Errorf("the error %v lost the API server's answer", err)
			}
		})
	}
}
