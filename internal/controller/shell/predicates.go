package shell

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// OwnObjectChanged is the predicate of a kind's watch of its own objects:
// a new generation (spec), annotations (reconcile requests), labels, what
// extra lets through, and the update that brings the cache past the
// shell's own write to an object whose reconcile was skipped as stale
// (w.CaughtUp). The shell's status writes wake nothing else.
func OwnObjectChanged(w *Written, extra ...predicate.Predicate) predicate.Predicate {
	return predicate.Or(append([]predicate.Predicate{predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
		predicate.LabelChangedPredicate{}, w.CaughtUp()}, extra...)...)
}

// FluxObjectChanged lets through the changes of a generated Flux object
// that can matter to its owner: a new generation (someone edited what
// Capwright set), a new status, labels, owners, finalizers or deletion.
// An annotation change alone — the reconcile request Capwright itself just
// passed on — is no news: reacting to it would run the owner again before
// the cache holds the status Capwright wrote a moment ago, and write it
// twice.
func FluxObjectChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
			!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!sameStatus(o, n)
	}}
}

// sameStatus tells whether a and b hold the same status. It runs for
// every update of every watched Flux object, once per controller that
// watches the kind, so it compares the typed status field as it is
// rather than converting whole objects — a provider's Kustomization with
// its patches and inventory — to unstructured twice (measured:
// BenchmarkSameStatus).
func sameStatus(a, b client.Object) bool {
	if rv := a.GetResourceVersion(); rv != "" && rv == b.GetResourceVersion() {
		return true // a resync: the same object
	}
	sa, okA := statusField(a)
	sb, okB := statusField(b)
	if okA && okB {
		return equality.Semantic.DeepEqual(sa, sb)
	}
	return sameUnstructuredStatus(a, b)
}

// statusField is the status of o: the map under "status" of an unstructured
// object, or the Status field of a typed API object (every Flux kind has
// one); false when o has neither.
func statusField(o client.Object) (any, bool) {
	if u, ok := o.(runtime.Unstructured); ok {
		return u.UnstructuredContent()["status"], true
	}
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("Status")
	if !f.IsValid() || !f.CanInterface() {
		return nil, false
	}
	return f.Interface(), true
}

// sameUnstructuredStatus compares the statuses of objects of any shape
// through their unstructured form (statusOf).
func sameUnstructuredStatus(a, b client.Object) bool {
	sa, err := statusOf(a)
	if err != nil {
		return false
	}
	sb, err := statusOf(b)
	if err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(sa, sb)
}
