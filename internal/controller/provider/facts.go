package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// The facts stage: what the cluster and the registry say about a
// provider, gathered for the plan. Nothing here decides; each stage of
// facts is read only once the checks before it passed
// (providerplan.Check), so a refused provider reads no more than it did.

// resolve gathers the facts of the quick checks: the desired version's
// artifact, found, fetched and checked (once per digest: the cache keeps
// it), and what the downgrade and uniqueness checks read.
func (r *Reconciler) resolve(ctx context.Context, obj v1alpha1.Provider) providerplan.Facts {
	f := providerplan.Facts{Provider: obj, Kind: r.Kind.Name, Resync: r.resyncInterval(obj), Mirrors: r.Mirrors,
		InsecureRegistries: r.InsecureRegistries, ArtifactStorage: r.Artifacts != nil}
	if obj.GetSpec().Suspend {
		return f
	}
	f.Artifact, f.Release, f.Refusal = r.resolveArtifact(ctx, obj)
	if f.Refusal != nil || f.Artifact.Keep || providerplan.CheckArtifact(f) != nil {
		return f
	}
	if obj.GetStatus().InstalledVersion == "" {
		f.SourcePins = r.sourcePins(ctx, obj, f.Artifact.Digest, f.Release)
		installed, err := r.installations(ctx, obj)
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
	if isChart(obj) {
		applier = &helmv2.HelmRelease{}
	}
	if err := r.Reader.Get(ctx, key, applier); !apierrors.IsNotFound(err) {
		return true
	}
	owned := r.owned(obj)
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
	if spec.AdditionalManifests == nil || isChart(obj) {
		f.AdditionalLeft = r.additionalLeft(ctx, obj)
	}
	f.SourceLeft = r.sourceLeft(ctx, obj, f.Release)
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

// sourceLeft is the components source of the other kind than the
// provider's now (the OCIRepository of a provider that moved to a
// release, or the other way round) when the provider controls it, as
// read; one already being deleted is left to its finalizers.
func (r *Reconciler) sourceLeft(ctx context.Context, obj v1alpha1.Provider, release bool) []providerplan.AdditionalObject {
	m := metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: objectName(obj)}
	var other ctrl.Object = &sourcev1.ExternalArtifact{ObjectMeta: m}
	if release {
		other = &sourcev1.OCIRepository{ObjectMeta: m}
	}
	if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(other), other); err != nil {
		return nil
	}
	if !render.ControlledBy(other, obj.GetUID()) || !other.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return []providerplan.AdditionalObject{other}
}

// isChart tells a provider whose source is an OCI Helm chart.
func isChart(obj v1alpha1.Provider) bool { return render.IsChart(obj) }

// resyncInterval is how often the provider is looked at again: the
// shorter of spec.interval and the manager's resync interval.
func (r *Reconciler) resyncInterval(obj v1alpha1.Provider) time.Duration {
	interval := 10 * time.Minute
	if i := obj.GetSpec().Interval; i != nil && i.Duration > 0 {
		interval = i.Duration
	}
	if r.ResyncInterval > 0 && r.ResyncInterval < interval {
		interval = r.ResyncInterval
	}
	return interval
}

// resolveArtifact finds, fetches and checks the desired version's
// artifact: from its release files (release tells) or its OCI repository.
func (r *Reconciler) resolveArtifact(ctx context.Context, obj v1alpha1.Provider) (a providerplan.Artifact, release bool, refusal *plan.Refusal) {
	loc, err := catalog.Locate(obj, r.catalogOptions())
	if err != nil {
		return providerplan.Artifact{}, false, unresolved(v1alpha1.ResolveFailedReason, err.Error(), 0)
	}
	if loc.Release != "" {
		a, refusal := r.resolveRelease(ctx, obj, loc.Release)
		return a, true, refusal
	}
	ref, err := ociReference(obj, loc.OCI)
	if err != nil {
		return providerplan.Artifact{}, false, unresolved(v1alpha1.ResolveFailedReason, err.Error(), 0)
	}
	if res, ok := r.recentlyResolved(obj, ref); ok {
		return res, false, nil
	}
	res, refusal := r.fetchArtifact(ctx, obj, ref)
	if refusal == nil {
		r.Resolutions.put(obj, ref.String(), res.Digest, kept{reason: res.KeptReason, message: res.Unreachable}, time.Now(), 0)
	}
	return res, false, refusal
}

// ociReference is what the desired version of obj is fetched as from
// the OCI repository url: its tag, and the digest spec.source.oci pins.
func ociReference(obj v1alpha1.Provider, url string) (artifact.Reference, error) {
	ref, err := artifact.ParseURL(url)
	if err != nil {
		return ref, fmt.Errorf("artifact URL %s: %v", url, err)
	}
	spec := obj.GetSpec()
	ref.Tag = spec.Version
	if spec.Source != nil && spec.Source.OCI != nil {
		ref.Digest = spec.Source.OCI.Digest
	}
	return ref, nil
}

// ArtifactReference is where obj's artifact is fetched from, after the
// catalog and mirror rules; release is set instead for a provider
// installed from release files (its release URL), and the reference is
// then empty.
func (r *Reconciler) ArtifactReference(obj v1alpha1.Provider) (ref artifact.Reference, release string, err error) {
	loc, err := catalog.Locate(obj, r.catalogOptions())
	if err != nil || loc.Release != "" {
		return ref, loc.Release, err
	}
	ref, err = ociReference(obj, loc.OCI)
	return ref, "", err
}

// Preload takes fetched — obj's artifact read elsewhere than from its
// registry: an OCI image layout, for capwright build offline — as what
// the registry answers for it: checked as a fetched artifact is, and
// remembered as what obj's reference resolves to, so gathering obj's
// facts asks no registry. A chart, or a digest other than the one
// spec.source.oci pins, is refused.
func (r *Reconciler) Preload(obj v1alpha1.Provider, fetched *artifact.Fetched) error {
	ref, release, err := r.ArtifactReference(obj)
	switch {
	case err != nil:
		return err
	case release != "":
		return fmt.Errorf("%s installs from the release files at %s, not from an OCI artifact", obj.GetName(), release)
	case isChart(obj):
		return fmt.Errorf("%s is a Helm chart, which the manager does not read", obj.GetName())
	case ref.Digest != "" && ref.Digest != fetched.Digest:
		return &artifact.DigestMismatchError{Ref: ref.String(), Expected: ref.Digest, Actual: fetched.Digest}
	}
	at := *fetched
	at.Ref, at.Revision = ref, ref.Tag+"@"+fetched.Digest
	spec := obj.GetSpec()
	if _, err := r.Cache.check(&at, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace(), nil); err != nil {
		return err
	}
	r.Resolutions.put(obj, ref.String(), fetched.Digest, kept{}, time.Now(), 0)
	return nil
}

// catalogOptions are the manager's settings for where providers come
// from.
func (r *Reconciler) catalogOptions() catalog.Options {
	return catalog.Options{Mirrors: r.Mirrors, OCIArtifacts: r.CatalogOCIArtifacts}
}

// unresolved is a refusal of ArtifactResolved.
func unresolved(reason, message string, retry time.Duration) *plan.Refusal {
	return providerplan.Refusal(v1alpha1.ArtifactResolvedCondition, reason, message, retry)
}

// fetchArtifact asks the registry what ref names now and, for
// components, fetches and checks the artifact (once per digest: the cache
// keeps it). The registry has at most RegistryTimeout to answer. When it
// cannot be reached, the revision installed for this spec stays, if there
// is one (stillInstalled).
func (r *Reconciler) fetchArtifact(ctx context.Context, obj v1alpha1.Provider, ref artifact.Reference) (providerplan.Artifact, *plan.Refusal) {
	spec := obj.GetSpec()
	timeout := r.registryTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(what string, err error) *plan.Refusal {
		msg := fmt.Sprintf("%s %s: %v", what, ref.String(), err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf("; the registry did not answer within %s (the manager's --registry-timeout)", timeout)
		}
		if artifact.Unreachable(err) {
			r.unreached(obj, err)
		}
		// Looked at again within a minute, sooner with a shorter interval.
		return unresolved(fetchFailureReason(err), msg+accessHint(obj, err), min(time.Minute, r.resyncInterval(obj)))
	}
	access, err := r.registryAccess(ctx, obj)
	if err != nil {
		return providerplan.Artifact{}, unresolved(v1alpha1.AuthenticationFailedReason, err.Error(), 0)
	}
	if isChart(obj) {
		// A chart is Helm's to read; the plan pins the digest the tag names.
		digest, err := r.Fetcher.Resolve(ctx, ref, access)
		if err != nil {
			if res, ok := r.stillInstalled(ctx, obj, ref, err); ok {
				return res, nil
			}
			return providerplan.Artifact{}, fail("chart", err)
		}
		return providerplan.Artifact{URL: ref.URL(), Tag: spec.Version, Digest: digest, Revision: spec.Version + "@" + digest}, nil
	}
	pa, err := r.Cache.Fetch(ctx, r.Fetcher, ref, access, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace())
	if err != nil {
		if res, ok := r.stillInstalled(ctx, obj, ref, err); ok {
			return res, nil
		}
		return providerplan.Artifact{}, fail("artifact", err)
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: spec.Version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa}, nil
}

// unreached tells OnUnreachable that obj's registry or release host could
// not be asked.
func (r *Reconciler) unreached(obj v1alpha1.Provider, err error) {
	if r.OnUnreachable != nil {
		r.OnUnreachable(obj, err)
	}
}

// DefaultRegistryTimeout bounds the registry's share of one reconcile when
// the manager sets no RegistryTimeout.
const DefaultRegistryTimeout = 2 * time.Minute

func (r *Reconciler) registryTimeout() time.Duration {
	if r.RegistryTimeout > 0 {
		return r.RegistryTimeout
	}
	return DefaultRegistryTimeout
}

// stillInstalled is the revision checked and installed for the provider's
// spec, when err says the registry cannot be reached to check it again
// (artifact.Unreachable): Flux keeps running what it applied, so the
// provider stays Ready with it (keepInstalled). Not ok when the registry
// did answer (a tag gone, access refused), or when the spec asks for
// something other than what is installed.
func (r *Reconciler) stillInstalled(ctx context.Context, obj v1alpha1.Provider, ref artifact.Reference, err error) (providerplan.Artifact, bool) {
	prev := obj.GetStatus().Artifact
	if !artifact.Unreachable(err) || prev == nil || (ref.Digest != "" && ref.Digest != prev.Digest) {
		return providerplan.Artifact{}, false
	}
	held := kept{reason: v1alpha1.RegistryUnreachableReason, message: fmt.Sprintf(
		"cannot reach the registry to check %s again (%v); %s, checked when it was installed, stays installed, and the tag is checked again within %s",
		ref.String(), err, prev.Revision, r.resyncInterval(obj))}
	return r.keepInstalled(ctx, obj, ref.URL(), held)
}

// keepInstalled is the revision checked and installed for the provider's
// spec from url, kept for the reason held gives: the plan goes on with
// what was checked then — or, when the artifact checked then is no longer
// cached (a restarted manager), leaves the Flux objects as they are if
// they pin that revision and it passed its checks (Keep). Not ok when the
// spec asks for something other than what is installed.
func (r *Reconciler) keepInstalled(ctx context.Context, obj v1alpha1.Provider, url string, held kept) (providerplan.Artifact, bool) {
	spec, status := obj.GetSpec(), obj.GetStatus()
	prev := status.Artifact
	if prev == nil || status.InstalledVersion != spec.Version || prev.URL != url || !strings.HasPrefix(prev.Revision, spec.Version+"@") {
		return providerplan.Artifact{}, false
	}
	a := providerplan.Artifact{URL: prev.URL, Tag: spec.Version, Digest: prev.Digest, Revision: prev.Revision, Unreachable: held.message, KeptReason: held.reason}
	release := len(prev.Files) > 0
	if release {
		a.Release = &providerplan.Release{Files: prev.Files}
	}
	if isChart(obj) {
		return a, true
	}
	pa := r.Cache.Cached(prev.Digest, obj.ProviderType(), obj.GetName(), spec.Version)
	if pa == nil {
		compatible := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.CompatibleCondition)
		if compatible == nil || compatible.Status != metav1.ConditionTrue || compatible.ObservedGeneration != obj.GetGeneration() ||
			!r.sourcePins(ctx, obj, prev.Digest, release) {
			return providerplan.Artifact{}, false
		}
		a.Contract, a.Keep = status.Contract, true
		return a, true
	}
	a.Checked, a.Release = pa, pa.Release
	return a, true
}

// recentlyResolved is the result of resolving ref again when the
// provider resolved it recently (Resolutions) and its artifact is cached.
func (r *Reconciler) recentlyResolved(obj v1alpha1.Provider, ref artifact.Reference) (providerplan.Artifact, bool) {
	digest, held, ok := r.Resolutions.get(obj, ref.String(), r.resyncInterval(obj)/2, time.Now())
	if !ok {
		return providerplan.Artifact{}, false
	}
	version := obj.GetSpec().Version
	if isChart(obj) {
		return providerplan.Artifact{URL: ref.URL(), Tag: version, Digest: digest, Revision: version + "@" + digest, Unreachable: held.message, KeptReason: held.reason}, true
	}
	pa := r.Cache.Cached(digest, obj.ProviderType(), obj.GetName(), version)
	if pa == nil {
		return providerplan.Artifact{}, false
	}
	return providerplan.Artifact{URL: ref.URL(), Tag: version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Checked: pa, Unreachable: held.message, KeptReason: held.reason}, true
}

func fetchFailureReason(err error) string {
	var tooLarge *artifact.TooLargeError
	var layout *artifact.LayoutError
	var mismatch *artifact.DigestMismatchError
	var auth *artifact.AuthError
	switch {
	case errors.As(err, &tooLarge):
		return v1alpha1.ArtifactTooLargeReason
	case errors.As(err, &layout):
		return v1alpha1.ArtifactInvalidReason
	case errors.As(err, &mismatch):
		return v1alpha1.DigestMismatchReason
	case errors.As(err, &auth):
		return v1alpha1.AuthenticationFailedReason
	default:
		return v1alpha1.ResolveFailedReason
	}
}

// sourcePins tells whether the provider's OCIRepository already pins
// digest, or for a release its ExternalArtifact serves it: what it
// installs is then what was resolved.
func (r *Reconciler) sourcePins(ctx context.Context, obj v1alpha1.Provider, digest string, release bool) bool {
	if release {
		return r.componentsArtifactPins(ctx, obj, digest)
	}
	var repo sourcev1.OCIRepository
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}, &repo); err != nil {
		return false
	}
	return repo.Spec.Reference != nil && repo.Spec.Reference.Digest == digest
}

// inventory reads the provider's clusterctl inventory object; nil when
// there is none (or no inventory CRD).
func (r *Reconciler) inventory(ctx context.Context, obj v1alpha1.Provider) (*unstructured.Unstructured, error) {
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(inventoryGVK)
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: providerplan.InventoryName(obj)}, inv)
	if apierrors.IsNotFound(err) || isNoMatch(err) {
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
	for _, o := range additionalObjects(obj) {
		if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o); err != nil {
			continue
		}
		if render.ControlledBy(o, obj.GetUID()) && o.GetDeletionTimestamp().IsZero() {
			left = append(left, o)
		}
	}
	return left
}
