package shell

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

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

func sameStatus(a, b client.Object) bool {
	ua, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return false
	}
	ub, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(ua["status"], ub["status"])
}
