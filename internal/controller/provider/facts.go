package provider

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/fluxobjects"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/resolve"
)

// The facts stage: what the cluster and the registry say about a
// provider, gathered for the plan. Nothing here decides; each stage of
// facts is read only once the checks before it passed
// (providerplan.Check), so a refused provider reads no more than it did.

// facts gathers the facts of the quick checks from what the resolution
// found (the desired version's artifact, found, fetched and checked) and
// what the downgrade and uniqueness checks read.
func (r *Reconciler) facts(ctx context.Context, obj v1alpha1.Provider, found resolve.Result) providerplan.Facts {
	f := providerplan.Facts{Provider: obj, Kind: r.Kind.Name, Resync: found.Interval, Mirrors: r.Source.Mirrors,
		InsecureRegistries: r.Source.InsecureRegistries, ArtifactStorage: r.Artifacts != nil}
	if obj.GetSpec().Suspend {
		return f
	}
	f.Artifact, f.Release, f.Refusal = found.Artifact, found.Release, found.Refusal
	if f.Refusal != nil || f.Artifact.Keep || providerplan.CheckArtifact(f) != nil {
		return f
	}
	if obj.GetStatus().InstalledVersion == "" {
		f.SourcePins = found.SourcePins
		installed, err := r.installations(ctx, obj, found.Interval)
		if err != nil {
			f.InstallationsError = err.Error()
		}
		f.Installations = installed
	}
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list); err != nil {
		f.OthersError = err.Error()
	} else {
		f.Others = list.GetItems()
	}
	return f
}

// fetchAhead writes the OCIRepository of a provider that nothing has been
// applied from yet as soon as its artifact is resolved and the quick
// checks passed, so that source-controller fetches the artifact while the
// slower facts are gathered and checked (decoding the components, waiting
// for the core provider's contract, for spec.dependsOn): the
// Kustomization, written when every check passed, then finds its source
// Ready instead of waiting for it. It tells whether the slower facts are
// to be gathered (the quick checks passed).
//
// It is written ahead only while neither it nor its Kustomization or
// HelmRelease exists, the applier read without the cache, which may not
// have seen this controller's own last write yet: an upgrade, whose
// applier exists, moves its source only after the checks, as before. It
// refuses nothing: a failure is only logged, and the write after the
// checks reports it.
func (r *Reconciler) fetchAhead(ctx context.Context, f providerplan.Facts) bool {
	repo, more := providerplan.Ahead(f)
	if repo == nil {
		return more
	}
	obj := f.Provider
	key := ctrl.ObjectKeyFromObject(repo)
	if err := r.Client.Get(ctx, key, &sourcev1.OCIRepository{}); !apierrors.IsNotFound(err) {
		return true // written already (after the checks, or ahead)
	}
	var applier ctrl.Object = &kustomizev1.Kustomization{}
	if render.IsChart(obj) {
		applier = &helmv2.HelmRelease{}
	}
	if err := r.Reader.Get(ctx, key, applier); !apierrors.IsNotFound(err) {
		return true
	}
	owned := r.owned(r.owner(obj))
	err := apply.IfChanged(ctx, r.Client, r.Client, repo, plan.HashAnnotation, plan.FieldOwner, func(existing *unstructured.Unstructured) error {
		return owned(existing, repo)
	})
	if err != nil {
		log.FromContext(ctx).V(1).Info("cannot have Flux fetch the artifact ahead of the checks", "error", err.Error())
	}
	return true
}

// gather reads the facts of the slower checks, each only once the checks
// before it passed: the core provider's contract, the config Secret's
// keys, the additional manifests packed, the dependencies' readiness,
// what of additional manifests is no longer wanted, and the kinds the
// components need that the cluster does not serve.
func (r *Reconciler) gather(ctx context.Context, f providerplan.Facts) providerplan.Facts {
	obj := f.Provider
	spec := obj.GetSpec()
	f.Core = r.core(ctx, obj)
	if providerplan.Check(f, providerplan.CoreContract) != nil {
		return f
	}
	if spec.ConfigSecret != nil && f.Artifact.Checked != nil && render.CheckConfigSecret(obj) == nil {
		f.ConfigSecretKeys, f.ConfigSecretError = r.configSecretKeys(ctx, obj)
	}
	if providerplan.Check(f, providerplan.Variables) != nil {
		return f
	}
	if spec.AdditionalManifests != nil && r.Artifacts != nil && render.CheckAdditionalManifests(obj) == nil {
		f.AdditionalManifests, f.AdditionalManifestsError = r.packAdditional(ctx, obj)
	}
	if providerplan.Check(f, providerplan.AdditionalManifests) != nil {
		return f
	}
	for _, dep := range spec.DependsOn {
		d := providerplan.Dependency{Kind: dep.Kind, Namespace: namespaceOr(dep.Namespace, obj.GetNamespace()), Name: dep.Name}
		if d.Kind == "" {
			d.Kind = kustomizev1.KustomizationKind
		}
		d.Ready, d.Message = r.dependencyReady(ctx, d.Kind, ctrl.ObjectKey{Namespace: d.Namespace, Name: d.Name})
		f.Dependencies = append(f.Dependencies, d)
	}
	if spec.AdditionalManifests == nil || render.IsChart(obj) {
		f.AdditionalLeft = r.additionalLeft(ctx, obj)
	}
	f.SourceLeft = r.sourceLeft(ctx, obj, f.Release, f.RollingBack)
	if providerplan.Check(f, providerplan.Dependencies) != nil {
		return f
	}
	f.MissingKinds = r.missingKinds(ctx, f.Artifact.Checked)
	if providerplan.Check(f, providerplan.APIs) != nil {
		return f
	}
	if refs := providerplan.ComponentObjects(f); len(refs) > 0 && r.firstInstall(ctx, obj) {
		f.FirstInstall = true
		f.Existing, f.ExistingError = r.existing(ctx, obj, refs)
	}
	return f
}

// sourceLeft are the components sources the provider controls, as read,
// other than the one its Kustomization reads now: one of the other kind
// (the OCIRepository of a provider that moved to a release, or the other
// way round), the failed version's while a rollback reads from a source
// of its own (render.RollbackSourceName), that one once the rollback is
// over. One already being deleted is left to its finalizers.
func (r *Reconciler) sourceLeft(ctx context.Context, obj v1alpha1.Provider, release, rollingBack bool) []providerplan.AdditionalObject {
	owner := r.owner(obj)
	current := owner.ObjectName()
	if rollingBack {
		current = owner.RollbackSourceName()
	}
	var left []providerplan.AdditionalObject
	for _, name := range []string{owner.ObjectName(), owner.RollbackSourceName()} {
		m := metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: name}
		for _, o := range []ctrl.Object{&sourcev1.ExternalArtifact{ObjectMeta: m}, &sourcev1.OCIRepository{ObjectMeta: m}} {
			_, isRelease := o.(*sourcev1.ExternalArtifact)
			if name == current && isRelease == release {
				continue
			}
			if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o); err != nil {
				continue
			}
			if render.ControlledBy(o, obj.GetUID()) && o.GetDeletionTimestamp().IsZero() {
				left = append(left, o)
			}
		}
	}
	return left
}

// inventory reads the provider's clusterctl inventory object; nil when
// there is none (or no inventory CRD).
func (r *Reconciler) inventory(ctx context.Context, obj v1alpha1.Provider) (*unstructured.Unstructured, error) {
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(providerplan.InventoryGVK)
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: providerplan.InventoryName(obj)}, inv)
	if apierrors.IsNotFound(err) || fluxobjects.NotServed(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// core is what a non-core provider's checks read of the core provider.
// What the core's preflight just read here (CorePreflights) comes first:
// its status says it a moment later, and until then still holds the
// contract of the version it is leaving. The wait is driven by the core's
// preflight passing in this manager and by the core provider's status
// changes, which the controller watches; nothing polls.
func (r *Reconciler) core(ctx context.Context, obj v1alpha1.Provider) providerplan.Core {
	if obj.ProviderType() == v1alpha1.CoreProviderType {
		return providerplan.Core{}
	}
	var cores v1alpha1.CoreProviderList
	if err := r.Client.List(ctx, &cores); err != nil {
		return providerplan.Core{ListError: err.Error()}
	}
	if len(cores.Items) == 0 {
		return providerplan.Core{Installed: r.coreInstalled(ctx)}
	}
	// The oldest core provider is the one uniqueness keeps.
	core := &cores.Items[0]
	for i := range cores.Items {
		if cores.Items[i].CreationTimestamp.Before(&core.CreationTimestamp) {
			core = &cores.Items[i]
		}
	}
	contract, known := r.CorePreflights.contract(core)
	if !known {
		contract, known = core.Status.Contract, coreContractKnown(core)
	}
	c := providerplan.Core{Found: true, Namespace: core.Namespace, Name: core.Name, Version: core.Spec.Version, Contract: contract, Known: known}
	if compatible := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.CompatibleCondition); !known && compatible != nil &&
		compatible.Status == metav1.ConditionFalse && compatible.ObservedGeneration == core.Generation {
		c.Refused = compatible.Reason + ": " + compatible.Message
	}
	return c
}

// coreContractKnown tells whether the core provider's status.contract is
// that of the version it is installing or runs: its preflight passed for
// its current spec, or it is installed.
func coreContractKnown(core *v1alpha1.CoreProvider) bool {
	if core.Status.Contract == "" {
		return false
	}
	compatible := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.CompatibleCondition)
	if compatible != nil && compatible.Status == metav1.ConditionTrue && compatible.ObservedGeneration == core.Generation {
		return true
	}
	return apimeta.IsStatusConditionTrue(core.Status.Conditions, v1alpha1.InstalledCondition)
}

// configSecretKeys are the data keys of the spec.configSecret Secret
// (never its values), or why it cannot be read.
func (r *Reconciler) configSecretKeys(ctx context.Context, obj v1alpha1.Provider) ([]string, string) {
	ns, name := obj.GetNamespace(), obj.GetSpec().ConfigSecret.Name
	var secret corev1.Secret
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: ns, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("spec.configSecret: Secret %s/%s does not exist; create it with the variables as data keys, or drop spec.configSecret", ns, name)
		}
		return nil, fmt.Sprintf("spec.configSecret: cannot read Secret %s/%s: %v", ns, name, err)
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	return keys, ""
}

// packAdditional reads the ConfigMap of spec.additionalManifests and packs
// its objects into the artifact Flux will apply, or says why it cannot.
func (r *Reconciler) packAdditional(ctx context.Context, obj v1alpha1.Provider) ([]byte, string) {
	ref := obj.GetSpec().AdditionalManifests
	source := fmt.Sprintf("ConfigMap %s/%s (spec.additionalManifests)", obj.GetNamespace(), ref.Name)
	var cm corev1.ConfigMap
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("%s does not exist; create it with the objects under data key %q, or drop spec.additionalManifests", source, render.AdditionalManifestsKey)
		}
		return nil, fmt.Sprintf("reading %s: %v", source, err)
	}
	manifests, ok := cm.Data[render.AdditionalManifestsKey]
	if !ok {
		return nil, fmt.Sprintf("%s has no data key %q; put the objects (multi-document YAML) under it", source, render.AdditionalManifestsKey)
	}
	packed, err := render.AdditionalManifests(source, manifests, obj.GetNamespace(), r.scope)
	if err != nil {
		return nil, err.Error()
	}
	return packed, ""
}

// scope asks the API server (through the manager's REST mapper, which
// refreshes when it misses a kind) whether a kind is namespaced.
func (r *Reconciler) scope(gvk schema.GroupVersionKind) (namespaced, known bool) {
	if r.RESTMapper == nil {
		return false, false
	}
	m, err := r.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, false
	}
	return m.Scope.Name() == apimeta.RESTScopeNameNamespace, true
}

// dependencyReady tells whether a Flux object of spec.dependsOn is Ready
// for its current generation, and why not.
func (r *Reconciler) dependencyReady(ctx context.Context, kind string, key ctrl.ObjectKey) (bool, string) {
	var obs health.Observation
	switch kind {
	case helmv2.HelmReleaseKind:
		var hr helmv2.HelmRelease
		if err := r.Client.Get(ctx, key, &hr); err != nil {
			return false, err.Error()
		}
		obs = health.ObserveHelmRelease(&hr)
	default:
		var ks kustomizev1.Kustomization
		if err := r.Client.Get(ctx, key, &ks); err != nil {
			return false, err.Error()
		}
		obs = health.ObserveKustomization(&ks)
	}
	ready, msg, _ := providerplan.DependencyReady(obs)
	return ready, msg
}

// additionalLeft are the Flux objects of additional manifests the
// provider controls and no longer asks for, as read; one already being
// deleted is left to its finalizers.
func (r *Reconciler) additionalLeft(ctx context.Context, obj v1alpha1.Provider) []providerplan.AdditionalObject {
	var left []providerplan.AdditionalObject
	for _, o := range r.owner(obj).Additional() {
		if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o); err != nil {
			continue
		}
		if render.ControlledBy(o, obj.GetUID()) && o.GetDeletionTimestamp().IsZero() {
			left = append(left, o)
		}
	}
	return left
}
