package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// ServedAPIs tells which kinds the cluster serves, from discovery cached
// until a CustomResourceDefinition changes: the provider controllers
// watch CRDs' metadata and invalidate it, so a served kind costs no
// request, and a CRD that appears (cert-manager installed) is seen at
// once. A kind not served is asked of the API server again each time.
// Shared by the reconcilers of all kinds.
type ServedAPIs struct {
	discovery discovery.CachedDiscoveryInterface
}

// NewServedAPIs asks the API server of cfg.
func NewServedAPIs(cfg *rest.Config) (*ServedAPIs, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &ServedAPIs{discovery: memory.NewMemCacheClient(dc)}, nil
}

// Serves tells whether the cluster serves kind.
func (a *ServedAPIs) Serves(kind schema.GroupVersionKind) (bool, error) {
	list, err := a.discovery.ServerResourcesForGroupVersion(kind.GroupVersion().String())
	if errors.Is(err, memory.ErrCacheNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Kind == kind.Kind && !strings.Contains(r.Name, "/") {
			return true, nil
		}
	}
	return false, nil
}

// Invalidate drops what discovery said; the next question asks again.
func (a *ServedAPIs) Invalidate() { a.discovery.Invalidate() }

// missingKinds are the kinds the checked components apply and do not
// define that the cluster does not serve; nil when nothing is to be
// asked (a chart, no ServedAPIs: capwright build) or discovery fails
// (Flux then says what it cannot apply).
func (r *Reconciler) missingKinds(ctx context.Context, checked *providerplan.CheckedArtifact) []schema.GroupVersionKind {
	if r.APIs == nil || checked == nil {
		return nil
	}
	needs, err := checked.NeededKinds()
	if err != nil {
		return nil // refused by the checks before
	}
	missing, err := r.unserved(needs)
	if err == nil && len(missing) > 0 {
		// A miss is asked again of the API server, not of the cache: a
		// provider waiting for an API then sees it on its next reconcile
		// (its resync) even if the CRD's event was missed.
		r.APIs.Invalidate()
		missing, err = r.unserved(needs)
	}
	if err != nil {
		log.FromContext(ctx).V(1).Info("cannot tell whether the cluster serves the kinds the components apply", "error", err.Error())
		return nil
	}
	return missing
}

// unserved are the kinds the cluster does not serve.
func (r *Reconciler) unserved(kinds []schema.GroupVersionKind) ([]schema.GroupVersionKind, error) {
	var missing []schema.GroupVersionKind
	for _, k := range kinds {
		served, err := r.APIs.Serves(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if !served {
			missing = append(missing, k)
		}
	}
	return missing, nil
}

// crdChanged invalidates what discovery said and enqueues the providers of
// r.Kind that wait for an API the cluster did not serve.
func (r *Reconciler) crdChanged(ctx context.Context, _ ctrl.Object) []reconcile.Request {
	r.APIs.Invalidate()
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.GetItems() {
		if c := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.CompatibleCondition); c != nil && c.Reason == v1alpha1.MissingAPIReason {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
		}
	}
	return reqs
}
