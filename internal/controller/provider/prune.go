package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// Capwright takes over Flux's prune of the provider CRs a Flux
// Kustomization applies. A provider removed from Git while Clusters (or,
// for the core provider, other providers) use it must not go: deleting it
// would uninstall what those Clusters run on, and once its deletion has
// started Kubernetes cannot take it back, so restoring the file in Git
// would not restore it. So Capwright annotates every provider a
// Kustomization applied kustomize.toolkit.fluxcd.io/prune=disabled, which
// makes Flux leave it in place when the source drops it, and does the
// pruning itself: when the Kustomization that applied the provider no
// longer lists it in its inventory (and prunes), the provider is deleted
// if nothing uses it, and otherwise kept, with Deleting True
// (DeletionBlocked) naming what uses it. Put back in Git, it is listed
// again and is the same object, with the same UID and what it installed.

// Flux's annotation that keeps an object from being pruned.
const (
	fluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	fluxPruneDisabled   = "disabled"
)

// removedRecheck is how often a provider kept after Git dropped it looks
// for what uses it again (Clusters going away are not watched).
const removedRecheck = 30 * time.Second

// appliedBy is the Flux Kustomization that applied obj, from the labels
// kustomize-controller puts on what it applies.
func appliedBy(obj ctrl.Object) (ctrl.ObjectKey, bool) {
	l := obj.GetLabels()
	name, ns := l[providerplan.KustomizationNameLabel], l[providerplan.KustomizationNamespaceLabel]
	return ctrl.ObjectKey{Namespace: ns, Name: name}, name != "" && ns != ""
}

// keepFromFluxPrune puts Flux's prune=disabled annotation on a provider a
// Kustomization applied; the shell writes it with the finalizer.
func keepFromFluxPrune(obj v1alpha1.Provider) bool {
	if _, ok := appliedBy(obj); !ok || obj.GetAnnotations()[fluxPruneAnnotation] == fluxPruneDisabled {
		return false
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[fluxPruneAnnotation] = fluxPruneDisabled
	obj.SetAnnotations(a)
	return true
}

// droppedBy tells whether the Kustomization that applied obj prunes and
// no longer lists it: Git dropped it. A Kustomization that is gone, or
// does not prune, or has no inventory yet, says nothing.
func (r *Reconciler) droppedBy(ctx context.Context, obj v1alpha1.Provider) (*kustomizev1.Kustomization, error) {
	key, ok := appliedBy(obj)
	if !ok {
		return nil, nil
	}
	ks := &kustomizev1.Kustomization{}
	if err := r.Client.Get(ctx, key, ks); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Kustomization %s, which applied %s %s/%s: %w", key, r.Kind.Name, obj.GetNamespace(), obj.GetName(), err)
	}
	if !ks.Spec.Prune || ks.Status.Inventory == nil {
		return nil, nil
	}
	id := inventoryID(obj.GetNamespace(), obj.GetName(), v1alpha1.GroupVersion.Group, r.Kind.Name)
	if slices.ContainsFunc(ks.Status.Inventory.Entries, func(e kustomizev1.ResourceRef) bool { return e.ID == id }) {
		return nil, nil
	}
	return ks, nil
}

// pruned is what pruneDropped did.
type pruned int

const (
	// notDropped: the Kustomization that applied the provider still does
	// (or none did).
	notDropped pruned = iota
	// keptInUse: dropped from Git, kept while something uses it.
	keptInUse
	// deleted: dropped from Git and deleted; its status is not written
	// over the deletion (the finalizer's reconcile follows).
	deleted
)

// pruneDropped does what Flux would have done to a provider its
// Kustomization no longer applies: deletes it when nothing uses it, or
// keeps it, saying so in Deleting.
func (r *Reconciler) pruneDropped(ctx context.Context, obj v1alpha1.Provider) (pruned, reconcile.Result, error) {
	ks, err := r.droppedBy(ctx, obj)
	if err != nil || ks == nil {
		return notDropped, reconcile.Result{}, err
	}
	blockers, err := r.deletionBlockers(ctx, obj)
	if err != nil {
		return notDropped, reconcile.Result{}, err
	}
	// The inventory is the last attempted revision's: Flux writes it once
	// it has applied, before its health checks (lastAppliedRevision moves
	// after them).
	source := fmt.Sprintf("Kustomization %s/%s no longer applies it (its source at %s dropped it)", ks.Namespace, ks.Name, ks.Status.LastAttemptedRevision)
	if len(blockers) > 0 {
		conditions.True(obj, v1alpha1.DeletingCondition, v1alpha1.DeletionBlockedReason,
			fmt.Sprintf("%s, but it is kept while these exist: %s. Put it back in Git to keep it, or delete them to let it go", source, strings.Join(blockers, "; ")))
		return keptInUse, reconcile.Result{RequeueAfter: removedRecheck}, nil
	}
	log.FromContext(ctx).Info("deleting the provider, as Flux would have pruned it: "+source+" and nothing uses it",
		"kustomization", ctrl.ObjectKeyFromObject(ks).String())
	uid := obj.GetUID()
	if err := r.Client.Delete(ctx, obj.(ctrl.Object), ctrl.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return notDropped, reconcile.Result{}, fmt.Errorf("deleting %s %s/%s, which %s: %w", r.Kind.Name, obj.GetNamespace(), obj.GetName(), source, err)
	}
	return deleted, reconcile.Result{}, nil
}

// providersAppliedBy maps a Kustomization to the providers of this kind
// it applied, so that a change of its inventory (a provider dropped from
// Git, or put back) is seen at once.
func (r *Reconciler) providersAppliedBy(ctx context.Context, o ctrl.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, ctrl.MatchingLabels{
		providerplan.KustomizationNameLabel:      o.GetName(),
		providerplan.KustomizationNamespaceLabel: o.GetNamespace(),
	}); err != nil {
		log.FromContext(ctx).Error(err, "listing the providers a Kustomization applied", "kustomization", ctrl.ObjectKeyFromObject(o).String())
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.GetItems() {
		out = append(out, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
	}
	return out
}

// inventoryChanged passes Kustomization events whose inventory changed.
var inventoryChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*kustomizev1.Kustomization)
		after, ok2 := e.ObjectNew.(*kustomizev1.Kustomization)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(before.Status.Inventory, after.Status.Inventory) ||
			before.Spec.Prune != after.Spec.Prune
	},
}
