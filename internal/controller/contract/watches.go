package contract

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// statusWatches watches the kinds statusFrom names, once each, as they
// are first seen: a backend's status object changing wakes the objects of
// its namespace that read that kind. The manager can watch a kind only
// where its ClusterRole lets it (a backend's chart grants it with the
// aggregation label clusters.capwright.io/aggregate-to-manager); a kind it
// may not watch is read uncached and polled.
type statusWatches struct {
	cache cache.Cache
	// probe reads uncached, to ask whether a kind may be listed.
	probe ctrl.Reader
	// controllers are the controllers to wake, each with the map function
	// that finds its objects reading a kind in a namespace.
	controllers []watchTarget

	mu      sync.Mutex
	started map[schema.GroupVersionKind]bool
}

type watchTarget struct {
	ctrl  controller.Controller
	byGVK func(ctx context.Context, gvk schema.GroupVersionKind, namespace string) []reconcile.Request
}

// ensure watches gvk unless it is watched already, and tells whether it
// is. A kind the manager may not list and watch is not watched (the
// informer would retry forever); it is tried again later.
func (w *statusWatches) ensure(ctx context.Context, gvk schema.GroupVersionKind) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvk] {
		return true
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	// The informer would retry a forbidden list forever: ask first.
	if err := w.probe.List(ctx, list, ctrl.Limit(1)); err != nil {
		log.FromContext(ctx).V(1).Info("not watching the status kind", "kind", gvk.String(), "error", err.Error())
		return false
	}
	for _, t := range w.controllers {
		t := t
		h := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o ctrl.Object) []reconcile.Request {
			return t.byGVK(ctx, gvk, o.GetNamespace())
		})
		if err := t.ctrl.Watch(source.Kind[ctrl.Object](w.cache, u, h)); err != nil {
			log.FromContext(ctx).Error(err, "watching the status kind", "kind", gvk.String())
			return false
		}
	}
	if w.started == nil {
		w.started = map[schema.GroupVersionKind]bool{}
	}
	w.started[gvk] = true
	return true
}
