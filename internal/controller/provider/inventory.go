package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
)

// recordInventory keeps the clusterctl inventory object of an installed
// provider in step with its installed version, the last write of a
// reconcile, after the fold read what the Flux objects show installed
// (version). The plan renders the object (providerplan.Inventory) with
// the name and labels clusterctl gives it, so an adopted provider's
// entry, which clusterctl created, is taken over in place (applied with
// force: the fields clusterctl wrote become Capwright's).
func (r *Reconciler) recordInventory(ctx context.Context, inventory *unstructured.Unstructured, uid types.UID, version string, resync time.Duration) error {
	if version == "" || inventory == nil {
		return nil
	}
	want := inventory.DeepCopy()
	want.Object["version"] = version

	// The inventory is read as unstructured, which the manager's client
	// does not cache: every read is a request to the API server. A
	// provider reconciles on every status change of its Flux objects, a
	// dozen times or more per upgrade, so what was recorded is remembered
	// and read again only every half resync interval (someone else may
	// have changed it), or when the version moves.
	if r.inventories.fresh(uid, version, resync/2) {
		return nil
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(providerplan.InventoryGVK)
	err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(want), existing)
	switch {
	case apimeta.IsNoMatchError(err):
		return fmt.Errorf("the clusterctl inventory CRD (providers.clusterctl.cluster.x-k8s.io) is not installed; install manifests/clusterctl: %w", err)
	case err == nil && apply.Subset(want.Object, existing.Object):
	case err != nil && !apierrors.IsNotFound(err):
		return err
	default:
		if err := r.Client.Apply(ctx, ctrl.ApplyConfigurationFromUnstructured(want), ctrl.FieldOwner(plan.FieldOwner), ctrl.ForceOwnership); err != nil {
			return err
		}
	}
	r.inventories.done(uid, version)
	return nil
}
