// Package apply is how Capwright's controllers write the objects they own
// so that a resync with nothing changed writes nothing: each object carries
// a hash of what was last applied, and it is applied again (server-side,
// one field owner) only when the hash differs or someone changed one of
// the fields Capwright sets.
package apply

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/plan"
)

// Unchanged tells whether existing already holds want: the same hash,
// every field want sets still has its value, and each finalizer want sets
// is still there (others may come and go: someone else's is no change).
func Unchanged(want, existing *unstructured.Unstructured, hashAnnotation string) bool {
	if existing.GetAnnotations()[hashAnnotation] != want.GetAnnotations()[hashAnnotation] {
		return false
	}
	for _, f := range want.GetFinalizers() {
		if !slices.Contains(existing.GetFinalizers(), f) {
			return false
		}
	}
	return Subset(withoutFinalizers(want.Object), existing.Object)
}

// readBackoff is how a read the API server refuses for now is tried
// again (about 4 s in all): just after it starts, the API server answers
// 403 until its authorizer has read the RBAC objects, and 429 or 5xx while
// it catches up. Failed on such an answer, a reconcile would mark a
// healthy provider InstallFailed (found by the soak, docs/reliability.md).
var readBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Steps: 5}

// get reads key into obj, trying again, as readBackoff says, while the
// API server answers that it cannot for now. A read goes through no
// admission, so its 403 is the authorizer's: it lifts in a moment, or
// stays and is returned as it was.
func get(ctx context.Context, r ctrl.Reader, key ctrl.ObjectKey, obj ctrl.Object) error {
	var err error
	backoff := readBackoff
	for {
		if err = r.Get(ctx, key, obj); !notNow(err) || backoff.Steps <= 1 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff.Step()):
		}
	}
}

// notNow tells whether err is an API server's answer that may be another
// in a moment.
func notNow(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err))
}

// withoutFinalizers is obj without metadata.finalizers, sharing the rest.
func withoutFinalizers(obj map[string]any) map[string]any {
	meta, ok := obj["metadata"].(map[string]any)
	if _, set := meta["finalizers"]; !ok || !set {
		return obj
	}
	meta = maps.Clone(meta)
	delete(meta, "finalizers")
	obj = maps.Clone(obj)
	obj["metadata"] = meta
	return obj
}

// IfChanged applies desired server-side (as fieldOwner, forcing
// ownership) unless the object, read through r, already holds what was
// last applied and nobody changed those fields since. When it exists,
// check may refuse it (someone else's object of that name): its error is
// returned and nothing is written. The object is read as desired's own
// type: r is the manager's cache for kinds the controller watches (an
// unstructured read would start a second informer of the kind), else an
// uncached reader.
func IfChanged(ctx context.Context, r ctrl.Reader, w ctrl.Writer, desired ctrl.Object, hashAnnotation, fieldOwner string, check func(existing *unstructured.Unstructured) error) error {
	want, err := plan.AsApplied(desired, hashAnnotation)
	if err != nil {
		return err
	}
	current := desired.DeepCopyObject().(ctrl.Object)
	err = get(ctx, r, ctrl.ObjectKeyFromObject(want), current)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", want.GetKind(), plan.ObjectRef(want), err)
	default:
		withoutStatus(current)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
		if err != nil {
			return err
		}
		existing := &unstructured.Unstructured{Object: u}
		existing.SetGroupVersionKind(want.GroupVersionKind())
		if err := check(existing); err != nil {
			return err
		}
		// An object on its way out is left to its finalizers (Flux's
		// prune): an apply could neither add a finalizer to it nor
		// drop one without cutting that clean-up short. Its deletion
		// wakes the caller, which creates it anew.
		if existing.GetDeletionTimestamp() != nil || Unchanged(want, existing, hashAnnotation) {
			return nil
		}
	}
	if err := w.Apply(ctx, ctrl.ApplyConfigurationFromUnstructured(want), ctrl.FieldOwner(fieldOwner), ctrl.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", want.GetKind(), plan.ObjectRef(want), err)
	}
	return nil
}

// CachedUnchanged tells whether the cache c shows desired's object
// holding what was last applied, unchanged since, and not being deleted:
// then nothing needs writing and the caller need not read it again
// without the cache. A stale cache cannot make it skip a write for good:
// the object's change that the cache has not seen yet is a watch event
// that brings the owner back. Any doubt (not cached, unreadable, changed)
// is false, and the caller reads it uncached before deciding to write,
// so an object is never written (nor someone else's taken over) on an
// old read. The Unchanged comparison covers the owner's labels and owner
// references, so what it accepts is the owner's.
//
// At fleet scale this is most of a resync: a thousand tenants of twenty
// clusters read twenty thousand objects from memory instead of the API
// server.
func CachedUnchanged(ctx context.Context, c ctrl.Reader, desired ctrl.Object, hashAnnotation string) bool {
	want, err := plan.AsApplied(desired, hashAnnotation)
	if err != nil {
		return false
	}
	current := desired.DeepCopyObject().(ctrl.Object)
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(want), current); err != nil {
		return false
	}
	if current.GetDeletionTimestamp() != nil {
		return false
	}
	withoutStatus(current)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return false
	}
	existing := &unstructured.Unstructured{Object: u}
	existing.SetGroupVersionKind(want.GroupVersionKind())
	return Unchanged(want, existing, hashAnnotation)
}

// withoutStatus drops what the comparison never looks at (want holds
// neither) before current is converted: its status, which for a
// Kustomization is an inventory of every object it applied and for a
// HelmRelease its history, and its managedFields. The fold reads Flux's
// objects on every status change they make, so that conversion would
// otherwise be most of a reconcile's work.
func withoutStatus(current ctrl.Object) {
	current.SetManagedFields(nil)
	v := reflect.ValueOf(current)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if status := v.Elem().FieldByName("Status"); status.IsValid() && status.CanSet() {
		status.SetZero()
	}
}

// Subset reports whether every field set in want has the same value in
// have; fields only in have (server defaults, status, other managers'
// labels) are ignored.
func Subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !Subset(wv, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !Subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case bool:
		// A false the server (or a typed client) leaves out is the same.
		return fmt.Sprint(want) == fmt.Sprint(have) || (!w && have == nil)
	default:
		return fmt.Sprint(want) == fmt.Sprint(have)
	}
}

// RequestReconcile asks the Flux controller of obj to reconcile it now, as
// `flux reconcile` does: it sets the reconcile.fluxcd.io/requestedAt
// annotation to token, unless it holds token already (so a request is
// written once). obj is read and patched through c.
func RequestReconcile(ctx context.Context, c ctrl.Client, obj ctrl.Object, token, fieldOwner string) error {
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(obj), obj); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	if obj.GetAnnotations()[meta.ReconcileRequestAnnotation] == token {
		return nil
	}
	patch := ctrl.MergeFrom(obj.DeepCopyObject().(ctrl.Object))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[meta.ReconcileRequestAnnotation] = token
	obj.SetAnnotations(annotations)
	if err := c.Patch(ctx, obj, patch, ctrl.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("asking Flux to reconcile %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// DeleteExactly deletes obj as it was read — by UID, so an object
// recreated under the same name in the meantime is not touched — with
// background propagation. An object already gone or replaced is no error.
func DeleteExactly(ctx context.Context, c ctrl.Client, obj ctrl.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, ctrl.Preconditions{UID: &uid}, ctrl.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
