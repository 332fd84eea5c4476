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
	"github.com/capwright/capwright/internal/fluxobjects"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// Capwright takes over Flux's prune of the provider CRs a Flux
// Kustomization applies. A provider removed from Git while Clusters (or,
// for the core provider, other providers) use it must not go: deleting it
// would uninstall what those Clusters run on, and once its deletion has
// started Kubernetes cannot take it back, so restoring the file in Git
// would not restore it. So Capwright annotates every provider that a
// pruning Kustomization applied kustomize.toolkit.fluxcd.io/prune=disabled,
// which makes Flux leave it in place when the source drops it, marks it as
// pruned by Capwright instead (pruneTakenOverAnnotation), and does the
// pruning itself: when that Kustomization no longer lists the provider in
// its inventory, or is deleted, the provider is deleted if nothing uses
// it, and otherwise kept, with Deleting True (DeletionBlocked) naming what
// uses it. Put back in Git, it is listed again and is the same object,
// with the same UID and what it installed. A provider whose source says
// prune=disabled itself is left alone, as Flux would leave it.

// Flux's annotation that keeps an object from being pruned, and
// Capwright's that says it set it, to prune in Flux's place.
const (
	fluxPruneAnnotation      = "kustomize.toolkit.fluxcd.io/prune"
	fluxPruneDisabled        = "disabled"
	pruneTakenOverAnnotation = "providers.capwright.io/pruned-by"
	prunedByCapwright        = "capwright"
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

// takeOverPrune marks a provider that a pruning Kustomization applied so
// that Flux leaves its pruning to Capwright; the shell writes the
// annotations with the finalizer. It reads the Kustomization from the
// cache.
func (r *Reconciler) takeOverPrune(obj v1alpha1.Provider) bool {
	key, ok := appliedBy(obj)
	a := obj.GetAnnotations()
	if !ok || a[fluxPruneAnnotation] == fluxPruneDisabled {
		// Not from Flux, taken over already, or kept by its source.
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ks := &kustomizev1.Kustomization{}
	if err := r.Client.Get(ctx, key, ks); err != nil || !ks.Spec.Prune || !ks.DeletionTimestamp.IsZero() {
		return false
	}
	if a == nil {
		a = map[string]string{}
	}
	a[fluxPruneAnnotation] = fluxPruneDisabled
	a[pruneTakenOverAnnotation] = prunedByCapwright
	obj.SetAnnotations(a)
	return true
}

// droppedBy tells whether Git dropped a provider whose pruning Capwright
// took over: the Kustomization that applied it no longer lists it in its
// inventory, or is deleted (which would have pruned it). A Kustomization
// that no longer prunes, or has no inventory yet, says nothing. It returns
// what to name as the dropping source.
func (r *Reconciler) droppedBy(ctx context.Context, obj v1alpha1.Provider) (string, error) {
	key, ok := appliedBy(obj)
	if !ok || obj.GetAnnotations()[pruneTakenOverAnnotation] != prunedByCapwright {
		return "", nil
	}
	ks := &kustomizev1.Kustomization{}
	if err := r.Client.Get(ctx, key, ks); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Kustomization %s, which applied it, was deleted", key), nil
		}
		if fluxobjects.NotServed(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading Kustomization %s, which applied %s %s/%s: %w", key, r.Kind.Name, obj.GetNamespace(), obj.GetName(), err)
	}
	if !ks.DeletionTimestamp.IsZero() {
		return fmt.Sprintf("Kustomization %s, which applied it, is being deleted", key), nil
	}
	if !ks.Spec.Prune || ks.Status.Inventory == nil {
		return "", nil
	}
	id := fluxobjects.ID(obj.GetNamespace(), obj.GetName(), v1alpha1.GroupVersion.Group, r.Kind.Name)
	if slices.ContainsFunc(ks.Status.Inventory.Entries, func(e kustomizev1.ResourceRef) bool { return e.ID == id }) {
		return "", nil
	}
	// The inventory is the last attempted revision's: Flux writes it once
	// it has applied, before its health checks (lastAppliedRevision moves
	// after them).
	return fmt.Sprintf("Kustomization %s no longer applies it (its source at %s dropped it)", key, ks.Status.LastAttemptedRevision), nil
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
	source, err := r.droppedBy(ctx, obj)
	if err != nil || source == "" {
		return notDropped, reconcile.Result{}, err
	}
	blockers, err := r.deletionBlockers(ctx, obj)
	if err != nil {
		return notDropped, reconcile.Result{}, err
	}
	if len(blockers) > 0 {
		conditions.True(obj, v1alpha1.DeletingCondition, v1alpha1.DeletionBlockedReason,
			fmt.Sprintf("%s, but it is kept while these exist: %s. Put it back in Git to keep it, or delete them to let it go", source, strings.Join(blockers, "; ")))
		return keptInUse, reconcile.Result{RequeueAfter: removedRecheck}, nil
	}
	log.FromContext(ctx).Info("deleting the provider, as Flux would have pruned it: " + source + " and nothing uses it")
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
			before.Spec.Prune != after.Spec.Prune || before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
	},
}
