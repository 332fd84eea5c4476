package provider

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/render"
)

// The installer's permissions: the controller writes each provider's
// ServiceAccount (the core group's serviceaccounts, see the tenant
// controller's markers) and its ClusterRoleBinding, and may bind the
// installer role and no other (bind by name: it does not hold what the
// role grants). The admission policy of manifests/rbac holds the
// bindings it writes to that role and to providers' ServiceAccounts.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;create;patch;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=capwright-provider-installer

// writeInstaller applies the identity Flux installs the provider with
// (render.ProviderInstaller) before the Flux objects that name it, so
// Flux's first attempt already has its permissions. Both are read
// uncached (the controller keeps no informer of ServiceAccounts or
// ClusterRoleBindings for this), so what was found or applied is
// remembered and read again only each half resync interval, when it
// changes, or after Flux failed to install (someone may have removed it).
func (r *Reconciler) writeInstaller(ctx context.Context, in render.Input) error {
	inst, err := render.ProviderInstaller(in)
	if err != nil {
		return &renderError{fmt.Errorf("rendering the installer of %s %s/%s: %w", r.Kind.Name, in.Provider.GetNamespace(), in.Provider.GetName(), err)}
	}
	p := in.Provider
	sa, err := apply.AsApplied(inst.ServiceAccount, specHashAnnotation)
	if err != nil {
		return err
	}
	crb, err := apply.AsApplied(inst.ClusterRoleBinding, specHashAnnotation)
	if err != nil {
		return err
	}
	key := sa.GetAnnotations()[specHashAnnotation] + "/" + crb.GetAnnotations()[specHashAnnotation]
	if r.installers.fresh(p.GetUID(), key, r.resyncInterval(p)/2) {
		return nil
	}
	// Side by side: a binding names its subject, which need not exist yet,
	// and each is a read and a write on a first install.
	var g errgroup.Group
	g.Go(func() error {
		return r.applyUncached(ctx, inst.ServiceAccount, func(existing *unstructured.Unstructured) bool {
			return render.ControlledBy(existing, p.GetUID())
		})
	})
	g.Go(func() error {
		return r.applyUncached(ctx, inst.ClusterRoleBinding, func(existing *unstructured.Unstructured) bool {
			return isInstallerBindingOf(existing, p, r.Kind.Name)
		})
	})
	if err := g.Wait(); err != nil {
		return err
	}
	r.installers.done(p.GetUID(), key)
	return nil
}

// isInstallerBindingOf tells whether a ClusterRoleBinding is the one
// Capwright wrote for the provider: it carries the provider's kind, name
// and namespace.
func isInstallerBindingOf(o ctrl.Object, p v1alpha1.Provider, kind string) bool {
	l := o.GetLabels()
	return l[v1alpha1.ProviderKindLabel] == kind && l[v1alpha1.ProviderNameLabel] == p.GetName() &&
		l[v1alpha1.ProviderNamespaceLabel] == p.GetNamespace()
}

// applyUncached applies desired unless it already holds what was last
// applied; an existing object that ours does not recognise is left alone
// and reported, like a Flux object of the provider's name that is not its.
func (r *Reconciler) applyUncached(ctx context.Context, desired ctrl.Object, ours func(*unstructured.Unstructured) bool) error {
	return apply.IfChanged(ctx, r.Reader, r.Client, desired, specHashAnnotation, FieldOwner, func(existing *unstructured.Unstructured) error {
		if ours(existing) {
			return nil
		}
		return fmt.Errorf("%s %s exists and was not created by Capwright for this provider; rename or delete it", existing.GetKind(), apply.ObjectRef(existing))
	})
}

// deleteInstallerBinding deletes the provider's ClusterRoleBinding once
// Flux no longer needs it (its objects are gone). The ServiceAccount goes
// with the provider through its owner reference.
func (r *Reconciler) deleteInstallerBinding(ctx context.Context, obj v1alpha1.Provider) error {
	r.installers.forget(obj.GetUID())
	crb := &rbacv1.ClusterRoleBinding{}
	err := r.Reader.Get(ctx, ctrl.ObjectKey{Name: render.InstallerBindingName(obj)}, crb)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", render.InstallerBindingName(obj), err)
	case !isInstallerBindingOf(crb, obj, r.Kind.Name):
		return nil
	}
	if err := apply.DeleteExactly(ctx, r.Client, crb); err != nil {
		return fmt.Errorf("deleting ClusterRoleBinding %s: %w", crb.Name, err)
	}
	return nil
}
