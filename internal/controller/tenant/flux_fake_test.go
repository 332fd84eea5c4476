package tenant

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// fluxFinalizes stands in a fake client for Flux's controllers at
// deletion: a Flux object Capwright deletes has Flux's finalizer (it is
// created with it), which Flux removes once its clean-up is done, and then
// it is gone.
func fluxFinalizes() interceptor.Funcs {
	return interceptor.Funcs{Delete: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.DeleteOption) error {
		if err := c.Delete(ctx, obj, opts...); err != nil {
			return err
		}
		current := obj.DeepCopyObject().(ctrl.Object)
		if err := c.Get(ctx, ctrl.ObjectKeyFromObject(obj), current); err != nil {
			return ctrl.IgnoreNotFound(err)
		}
		if controllerutil.RemoveFinalizer(current, "finalizers.fluxcd.io") {
			return c.Update(ctx, current)
		}
		return nil
	}}
}
