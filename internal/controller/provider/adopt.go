package provider

import (
	"context"
	"fmt"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/fluxobjects"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// The facts of an adoption, read before a provider's first install: what
// clusterctl and cluster-api-operator recorded as installed (in any
// namespace), and who manages the live objects the components would
// apply. Both are uncached reads, so they are made only while the
// provider has no status.installedVersion, the second only once every
// other check passed and no Kustomization of the provider exists yet.

// What the manager reads to tell who installed a provider. The inventory
// is listed (all namespaces); cluster-api-operator keeps no inventory,
// only its provider CRs.
// +kubebuilder:rbac:groups=clusterctl.cluster.x-k8s.io,resources=providers,verbs=list
// +kubebuilder:rbac:groups=operator.cluster.x-k8s.io,resources=coreproviders;bootstrapproviders;controlplaneproviders;infrastructureproviders;ipamproviders;runtimeextensionproviders;addonproviders,verbs=list

// Who manages an existing object of the components is read from its
// metadata: the kinds Cluster API's provider components hold (those the
// installer role lists) besides the ones the manager reads already.
// +kubebuilder:rbac:groups="",resources=services,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;roles,verbs=get
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates;issuers,verbs=get

// operatorVersion is the cluster-api-operator API whose provider CRs are
// read.
var operatorVersion = schema.GroupVersion{Group: providerplan.OperatorGroup, Version: "v1alpha2"}

// maxExistingReads bounds the objects read before a first install (a
// core provider's components hold about sixty).
const maxExistingReads = 1000

// installationsMemo keeps, per provider, the installations read for its
// generation, so the dozen reconciles of a first install list them once.
type installationsMemo struct {
	m sync.Map // the provider's UID → installationsRead
}

type installationsRead struct {
	generation int64
	request    string
	at         time.Time
	found      []providerplan.Installation
}

// get is what was read for the provider's generation and reconcile
// request less than maxAge ago.
func (m *installationsMemo) get(obj v1alpha1.Provider, maxAge time.Duration) ([]providerplan.Installation, bool) {
	v, ok := m.m.Load(obj.GetUID())
	if !ok {
		return nil, false
	}
	read := v.(installationsRead)
	if read.generation != obj.GetGeneration() || read.request != obj.GetAnnotations()[meta.ReconcileRequestAnnotation] || time.Since(read.at) >= maxAge {
		return nil, false
	}
	return read.found, true
}

// put remembers what was read for the provider's generation and request.
func (m *installationsMemo) put(obj v1alpha1.Provider, found []providerplan.Installation) {
	m.m.Store(obj.GetUID(), installationsRead{generation: obj.GetGeneration(), request: obj.GetAnnotations()[meta.ReconcileRequestAnnotation], at: time.Now(), found: found})
}

// installations are the provider's installations tools recorded, in any
// namespace (providerplan.Facts.Installations), read at most once a
// minute per generation and reconcile request, and at most every half of
// the provider's interval.
func (r *Reconciler) installations(ctx context.Context, obj v1alpha1.Provider, interval time.Duration) ([]providerplan.Installation, error) {
	if found, ok := r.installationsRead.get(obj, min(time.Minute, interval/2)); ok {
		return found, nil
	}
	found, err := r.readInstallations(ctx, obj.ProviderType(), r.Kind.Name, obj.GetName())
	if err != nil {
		return nil, err
	}
	r.installationsRead.put(obj, found)
	return found, nil
}

// readInstallations lists clusterctl's inventory entries of the
// provider's type and name and cluster-api-operator's CRs of its kind
// and name, in every namespace. An API the cluster does not serve holds
// nothing.
func (r *Reconciler) readInstallations(ctx context.Context, providerType, kind, name string) ([]providerplan.Installation, error) {
	// A cluster holds one inventory entry per installed provider, a
	// handful: all are listed and matched by type and name, as clusterctl
	// does (a label may have been lost, those fields cannot be).
	inventory := &unstructured.UnstructuredList{}
	inventory.SetGroupVersionKind(providerplan.InventoryGVK.GroupVersion().WithKind(providerplan.InventoryGVK.Kind + "List"))
	var found []providerplan.Installation
	err := r.Reader.List(ctx, inventory)
	switch {
	case fluxobjects.NotServed(err):
	case err != nil:
		return nil, fmt.Errorf("listing clusterctl's inventory (providers.clusterctl.cluster.x-k8s.io): %w", err)
	default:
		for _, inv := range inventory.Items {
			typ, _, _ := unstructured.NestedString(inv.Object, "type")
			providerName, _, _ := unstructured.NestedString(inv.Object, "providerName")
			if typ != providerplan.ClusterctlType(providerType) || providerName != name {
				continue
			}
			version, _, _ := unstructured.NestedString(inv.Object, "version")
			by := providerplan.ByClusterctl
			if inv.GetLabels()[v1alpha1.ProviderKindLabel] != "" {
				by = providerplan.ByCapwright
			}
			found = append(found, providerplan.Installation{Namespace: inv.GetNamespace(), Version: version, By: by,
				Record: fmt.Sprintf("clusterctl's inventory Provider %s/%s", inv.GetNamespace(), inv.GetName())})
		}
	}
	operator := &unstructured.UnstructuredList{}
	operator.SetGroupVersionKind(operatorVersion.WithKind(kind + "List"))
	err = r.Reader.List(ctx, operator)
	switch {
	case fluxobjects.NotServed(err):
	case err != nil:
		return nil, fmt.Errorf("listing cluster-api-operator's %ss (%s): %w", kind, operatorVersion, err)
	default:
		for _, cr := range operator.Items {
			if cr.GetName() != name {
				continue
			}
			version, _, _ := unstructured.NestedString(cr.Object, "status", "installedVersion")
			found = append(found, providerplan.Installation{Namespace: cr.GetNamespace(), Version: version, By: providerplan.ByOperator,
				Record: fmt.Sprintf("its %s %s/%s, %s", kind, cr.GetNamespace(), cr.GetName(), operatorVersion)})
		}
	}
	return found, nil
}

// coreInstalled is the core provider clusterctl or cluster-api-operator
// installed, for a non-core provider while no CoreProvider exists: read
// only then, while the provider waits.
func (r *Reconciler) coreInstalled(ctx context.Context) *providerplan.Installation {
	found, err := r.readInstallations(ctx, v1alpha1.CoreProviderType, "CoreProvider", "cluster-api")
	if err != nil {
		log.FromContext(ctx).V(1).Info("cannot tell whether a core provider is installed", "error", err.Error())
		return nil
	}
	for _, in := range found {
		if in.By != providerplan.ByCapwright {
			return &in
		}
	}
	return nil
}

// firstInstall tells whether nothing of the provider has been applied
// yet: no installed version and no Kustomization or HelmRelease of its
// own (read from the cache).
func (r *Reconciler) firstInstall(ctx context.Context, obj v1alpha1.Provider) bool {
	if obj.GetStatus().InstalledVersion != "" {
		return false
	}
	key := ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}
	var applier ctrl.Object = &kustomizev1.Kustomization{}
	if render.IsChart(obj) {
		applier = &helmv2.HelmRelease{}
	}
	return apierrors.IsNotFound(r.Client.Get(ctx, key, applier))
}

// existing reads, metadata only, each live object of refs (in the
// provider's namespace when namespaced), and for one another
// Kustomization or a Helm release marks whether that one still holds
// it. Objects of kinds the cluster does not serve cannot exist; those
// the manager may not read are left out (logged).
func (r *Reconciler) existing(ctx context.Context, obj v1alpha1.Provider, refs []clusterctl.ObjectRef) ([]providerplan.ExistingObject, string) {
	if len(refs) > maxExistingReads {
		refs = refs[:maxExistingReads]
	}
	found := make([]*providerplan.ExistingObject, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, ref := range refs {
		g.Go(func() error {
			o, err := r.existingObject(gctx, obj, ref)
			found[i] = o
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err.Error()
	}
	var out []providerplan.ExistingObject
	for _, o := range found {
		if o != nil {
			out = append(out, *o)
		}
	}
	return out, ""
}

func (r *Reconciler) existingObject(ctx context.Context, obj v1alpha1.Provider, ref clusterctl.ObjectRef) (*providerplan.ExistingObject, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil // the apply reports it
	}
	gvk := gv.WithKind(ref.Kind)
	namespace := ""
	if namespaced, known := r.scope(gvk); namespaced || (!known && ref.Namespace != "") {
		namespace = obj.GetNamespace()
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	err = r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: ref.Name}, m)
	switch {
	case apierrors.IsNotFound(err) || fluxobjects.NotServed(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		log.FromContext(ctx).V(1).Info("may not read an object of the components to check who manages it", "kind", ref.Kind, "name", ref.Name)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ctrl.ObjectKey{Namespace: namespace, Name: ref.Name}, err)
	}
	m.SetGroupVersionKind(gvk) // a metadata read may drop it
	o := &providerplan.ExistingObject{PartialObjectMetadata: *m}
	if name := m.GetLabels()[providerplan.KustomizationNameLabel]; name != "" {
		o.InKustomization, err = r.inKustomization(ctx, m.GetLabels()[providerplan.KustomizationNamespaceLabel], name, namespace, ref.Name, gvk.GroupKind())
		if err != nil {
			return nil, err
		}
	}
	if release := m.GetAnnotations()[providerplan.HelmReleaseNameAnnotation]; release != "" {
		o.InHelmRelease, err = r.helmReleaseExists(ctx, m.GetAnnotations()[providerplan.HelmReleaseNamespaceAnnotation], release)
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// inKustomization tells whether Kustomization ksNamespace/ksName exists
// and lists the object in its inventory (one without an inventory yet
// counts as holding it).
func (r *Reconciler) inKustomization(ctx context.Context, ksNamespace, ksName, namespace, name string, gk schema.GroupKind) (bool, error) {
	var ks kustomizev1.Kustomization
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: ksNamespace, Name: ksName}, &ks)
	if apierrors.IsNotFound(err) || fluxobjects.NotServed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Kustomization %s/%s: %w", ksNamespace, ksName, err)
	}
	if ks.Status.Inventory == nil {
		return true, nil
	}
	id := fluxobjects.ID(namespace, name, gk.Group, gk.Kind)
	for _, e := range ks.Status.Inventory.Entries {
		if e.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// helmReleaseExists tells whether Helm release namespace/name exists:
// Helm keeps each revision in a Secret labelled owner=helm and name; an
// uninstalled release has none left (or, kept as history, only
// status=uninstalled ones).
func (r *Reconciler) helmReleaseExists(ctx context.Context, namespace, name string) (bool, error) {
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.Reader.List(ctx, secrets, ctrl.InNamespace(namespace), ctrl.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		return false, fmt.Errorf("listing the Secrets of Helm release %s/%s: %w", namespace, name, err)
	}
	for _, s := range secrets.Items {
		if s.GetLabels()["status"] != "uninstalled" {
			return true, nil
		}
	}
	return false, nil
}
