package tenant

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
)

// TestCacheHoldsOnlyWhatCapwrightWrote: the manager's cache of every
// management kind asks the API server only for objects carrying the
// tenant label.
func TestCacheHoldsOnlyWhatCapwrightWrote(t *testing.T) {
	byObject := CacheByObject()
	kinds := map[string]bool{}
	for obj, opts := range byObject {
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
			continue // the Flux kinds: all cached, transformed
		}
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		kinds[kind] = true
		if opts.Label == nil {
			t.Fatalf("%s: no label selector", kind)
		}
		if !opts.Label.Matches(labels.Set{tenancyv1alpha1.TenantLabel: "team-a"}) {
			t.Errorf("%s: the selector %q leaves out a tenant's object", kind, opts.Label)
		}
		if opts.Label.Matches(labels.Set{"app": "other"}) {
			t.Errorf("%s: the selector %q takes in an object without the tenant label", kind, opts.Label)
		}
	}
	for _, gvk := range managementKinds {
		if !kinds[gvk.Kind] {
			t.Errorf("the cache of %s is not restricted", gvk.Kind)
		}
	}
}

// indexed registers the controller's cache indexes with a fake client,
// as SetupWithManager does with the manager's cache.
func indexed(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, i := range indexes() {
		b = b.WithIndex(i.obj, i.field, i.extract)
	}
	return b
}

// TestFluxUpdatesComeAfterTenantChanges: a Flux object's update (its
// status) queues its tenant at low priority, so a tenant queued for its
// own change meanwhile is reconciled first; a deleted Flux object keeps
// the usual priority.
func TestFluxUpdatesComeAfterTenantChanges(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	flux := func(tenant, rv string) *kustomizev1.Kustomization {
		ks := &kustomizev1.Kustomization{}
		ks.Name, ks.Namespace, ks.ResourceVersion = tenant+"-c1", "clusters", rv
		ks.Labels = map[string]string{tenancyv1alpha1.TenantLabel: tenant}
		return ks
	}
	h := fluxUpdates(byTenantLabel)
	h.Update(ctx, event.UpdateEvent{ObjectOld: flux("status-only", "1"), ObjectNew: flux("status-only", "2")}, q)
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: "changed"}})
	h.Delete(ctx, event.DeleteEvent{Object: flux("deleted", "3")}, q)
	var order []string
	var priorities []int
	for range 3 {
		item, priority, _ := q.GetWithPriority()
		order = append(order, item.Name)
		priorities = append(priorities, priority)
		q.Done(item)
	}
	if order[2] != "status-only" || priorities[2] != handler.LowPriority || priorities[0] != 0 || priorities[1] != 0 {
		t.Fatalf("queue order %v at priorities %v: want the Flux update last, at %d", order, priorities, handler.LowPriority)
	}
}

// TestCachedTenantKustomizationsHoldNoInventory: the cache keeps a
// tenant's Kustomization without the inventory of what it applied, a
// provider's with it; neither keeps managedFields.
func TestCachedTenantKustomizationsHoldNoInventory(t *testing.T) {
	var transform func(any) (any, error)
	for obj, opts := range CacheByObject() {
		if _, ok := obj.(*kustomizev1.Kustomization); ok {
			transform = opts.Transform
		}
	}
	if transform == nil {
		t.Fatal("the cache has no transform of Kustomizations")
	}
	applied := func(labels map[string]string) *kustomizev1.Kustomization {
		ks := &kustomizev1.Kustomization{}
		ks.Labels = labels
		ks.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "capwright"}}
		ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "stack_settings__ConfigMap", Version: "v1"}}}
		ks.Status.LastAppliedRevision = "v1@sha256:0123"
		return ks
	}
	out, err := transform(applied(map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}))
	if err != nil {
		t.Fatal(err)
	}
	if ks := out.(*kustomizev1.Kustomization); ks.Status.Inventory != nil || ks.ManagedFields != nil || ks.Status.LastAppliedRevision == "" {
		t.Fatalf("a tenant's Kustomization cached with inventory %v, managedFields %v, revision %q: want neither, and the revision", ks.Status.Inventory, ks.ManagedFields, ks.Status.LastAppliedRevision)
	}
	out, err = transform(applied(nil))
	if err != nil {
		t.Fatal(err)
	}
	if ks := out.(*kustomizev1.Kustomization); ks.Status.Inventory == nil || ks.ManagedFields != nil {
		t.Fatalf("a provider's Kustomization cached with inventory %v and managedFields %v: want the inventory and no managedFields", ks.Status.Inventory, ks.ManagedFields)
	}
}
