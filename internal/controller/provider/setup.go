package provider

import (
	"cmp"
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
)

// The controller's permissions (controller-gen writes manifests/rbac from
// these): its own kinds, the Flux objects it owns, Secrets it reads for
// variables and registry credentials, CRDs and objects of the CAPI groups it
// lists to block deletion, the clusterctl inventory, and for additional
// manifests the ConfigMaps they are read from and the ExternalArtifacts
// (with their status) that hand them to Flux; the events Flux reports
// changes in (drift.go) are listed and watched.
// +kubebuilder:rbac:groups=providers.capwright.io,resources=*,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups=providers.capwright.io,resources=*/status;*/finalizers,verbs=get;patch;update
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// The groups listed for deletion blockers are clusterAPIGroups (delete.go).
// +kubebuilder:rbac:groups=cluster.x-k8s.io;addons.cluster.x-k8s.io;bootstrap.cluster.x-k8s.io;controlplane.cluster.x-k8s.io;infrastructure.cluster.x-k8s.io;ipam.cluster.x-k8s.io;runtime.cluster.x-k8s.io,resources=*,verbs=list
// +kubebuilder:rbac:groups=clusterctl.cluster.x-k8s.io,resources=providers,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Kinds lists the seven provider kinds.
func Kinds() []Kind { return v1alpha1.Kinds() }

// SetupWithManager registers the reconciler of r.Kind. It watches its
// provider kind (spec changes and reconcile requests, not its own status
// writes), the Flux objects it owns, and — for non-core kinds — the core
// provider, whose contract unblocks them: its preflight passing here
// (CorePreflights) and its status.
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager, opts controller.Options) error {
	fluxObjectChanged := builder.WithPredicates(shell.FluxObjectChanged())
	b := ctrlruntime.NewControllerManagedBy(mgr).
		Named(r.Kind.Name).
		For(r.Kind.NewObject(), builder.WithPredicates(shell.OwnObjectChanged(&r.written))).
		Owns(&sourcev1.OCIRepository{}, fluxObjectChanged).
		Owns(&kustomizev1.Kustomization{}, fluxObjectChanged).
		Owns(&helmv2.HelmRelease{}, fluxObjectChanged).
		Owns(&sourcev1.ExternalArtifact{}, fluxObjectChanged).
		// Metadata only: a ConfigMap's content is read, uncached, by the
		// provider that names it.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.configMapProviders), builder.OnlyMetadata).
		// The Kustomizations that apply providers from Git: one that drops
		// a provider, or lists it again, is seen at once (prune.go).
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.providersAppliedBy), builder.WithPredicates(inventoryChanged)).
		WithOptions(opts)
	if r.Kind.Name != "CoreProvider" {
		b = b.Watches(&v1alpha1.CoreProvider{}, handler.EnqueueRequestsFromMapFunc(r.allOfKind), builder.WithPredicates(coreProviderChanged()))
		if r.CorePreflights != nil {
			b = b.WatchesRawSource(r.CorePreflights.source(handler.EnqueueRequestsFromMapFunc(r.allOfKind)))
		}
	}
	// The Flux objects of spec.dependsOn (cert-manager's HelmRelease, say)
	// wake up the providers that wait for them.
	b = b.Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.dependents(kustomizev1.KustomizationKind)), fluxObjectChanged).
		Watches(&helmv2.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(r.dependents(helmv2.HelmReleaseKind)), fluxObjectChanged).
		// Flux's report of what it changed, drift it put back included.
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(r.changeReported))
	if r.APIs != nil {
		// A CRD created, established or removed (cert-manager installed)
		// changes what the cluster serves: the providers waiting for an
		// API look again at once. Metadata only: CRDs are large.
		b = b.Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.crdChanged), builder.OnlyMetadata)
	}
	return b.Complete(r)
}

// coreProviderChanged passes what of a CoreProvider the checks of the
// other providers read (their facts' Core): which core there is (creation,
// deletion, its generation), its contract and whether that contract is
// known. The status writes of the core's own install or upgrade, half a
// dozen, wake no other provider.
func coreProviderChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.CoreProvider)
		cur, okNew := e.ObjectNew.(*v1alpha1.CoreProvider)
		if !okOld || !okNew {
			return true
		}
		return old.Generation != cur.Generation || old.Status.Contract != cur.Status.Contract ||
			coreContractKnown(old) != coreContractKnown(cur) || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp)
	}}
}

// dependents enqueues the providers of r.Kind whose spec.dependsOn names
// the object.
func (r *Reconciler) dependents(kind string) handler.MapFunc {
	return func(ctx context.Context, obj ctrl.Object) []reconcile.Request {
		list := r.Kind.NewList()
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, p := range list.GetItems() {
			for _, d := range p.GetSpec().DependsOn {
				if cmp.Or(d.Kind, kustomizev1.KustomizationKind) == kind && d.Name == obj.GetName() &&
					namespaceOr(d.Namespace, p.GetNamespace()) == obj.GetNamespace() {
					reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
					break
				}
			}
		}
		return reqs
	}
}

// allOfKind enqueues every provider of r.Kind.
func (r *Reconciler) allOfKind(ctx context.Context, _ ctrl.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.GetItems() {
		reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
	}
	return reqs
}

// configMapProviders maps a ConfigMap to the providers of this kind in its
// namespace that name it in spec.additionalManifests.
func (r *Reconciler) configMapProviders(ctx context.Context, cm ctrl.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, ctrl.InNamespace(cm.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.GetItems() {
		if ref := p.GetSpec().AdditionalManifests; ref != nil && ref.Name == cm.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
		}
	}
	return reqs
}
