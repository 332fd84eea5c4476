package provider

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/render"
)

// PreflightResult is what preflight established about the desired version;
// only with it are Flux objects written.
type PreflightResult struct {
	URL      string // oci://…, after mirror rules
	Tag      string
	Digest   string
	Revision string // tag@digest
	Contract string
	Artifact *CheckedArtifact
	// NamespacePatches move the components into the provider's namespace.
	NamespacePatches []kustomize.Patch
	// ManagerDeployment and ManagerArgs are the components' controller
	// Deployment and its manager container's args.
	ManagerDeployment string
	ManagerArgs       []string
	// CRDsSubstitutionFree is set when no CRD of the components holds a
	// variable (render.Input.SkipCRDSubstitution).
	CRDsSubstitutionFree bool
	// CoreDependency is the core provider's Kustomization when the
	// components hold objects of the core's kinds (see checkCore).
	CoreDependency *ctrl.ObjectKey
	// AdditionalManifests is the packed artifact of spec.additionalManifests
	// (tar+gzip); nil without them.
	AdditionalManifests []byte
	// Unreachable, when set, says why the registry could not be asked
	// again: the result is the revision checked and installed before,
	// which stays (see stillInstalled).
	Unreachable string
	// Keep is set when, besides, the artifact checked then is not at hand
	// (a restarted manager): the Flux objects, which pin Digest, are left
	// as they are, and nothing is checked or rendered again.
	Keep bool
}

// preflightError is a refusal: the condition and reason it sets and when
// to look again.
type preflightError struct {
	Condition string
	Reason    string
	Message   string
	Retry     time.Duration
	// Waiting is set when nothing is wrong yet: the check waits for
	// another object, and the condition is Unknown, not False.
	Waiting bool
}

func (e *preflightError) Error() string { return e.Message }

// stalls tells whether the refusal cannot lift itself: only a change of
// the spec, or of what it references (a Secret, a ConfigMap, the core
// provider's version), lifts it. Waiting, an unreachable registry and
// refused credentials are retried as progress.
func (e *preflightError) stalls() bool {
	if e.Waiting {
		return false
	}
	switch e.Reason {
	case v1alpha1.IncompatibleContractReason, v1alpha1.DowngradeReason, v1alpha1.DuplicateProviderReason,
		v1alpha1.MissingVariablesReason, v1alpha1.ConfigSecretMissingReason, v1alpha1.TagMovedReason,
		v1alpha1.ContractUnknownReason, v1alpha1.ArtifactInvalidReason, v1alpha1.ArtifactTooLargeReason,
		v1alpha1.DigestMismatchReason, v1alpha1.AdditionalManifestsInvalidReason, v1alpha1.ConfigSecretNotAllowedReason:
		return true
	}
	return false
}

func (e *preflightError) retryAfter() time.Duration {
	if e.Retry > 0 {
		return e.Retry
	}
	return time.Minute
}

// preflight checks the desired version before anything is written: the
// artifact resolves to a digest and follows the provider-artifact layout,
// the contract is known and compatible, the version is no downgrade across
// minors, the provider is unique, every variable has a value or a default,
// and the dependencies are Ready. It sets ArtifactResolved and Compatible.
func (r *Reconciler) preflight(ctx context.Context, obj v1alpha1.Provider) (*PreflightResult, *preflightError) {
	res, perr := r.resolveArtifact(ctx, obj)
	if perr != nil {
		return nil, r.refuse(obj, perr)
	}
	obj.GetStatus().LastAttemptedRevision = res.Revision
	if res.Unreachable != "" {
		setTrue(obj, v1alpha1.ArtifactResolvedCondition, v1alpha1.RegistryUnreachableReason, res.Unreachable)
	} else {
		setTrue(obj, v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolvedReason,
			fmt.Sprintf("%s:%s resolved to %s and follows the provider-artifact layout", strings.TrimPrefix(res.URL, "oci://"), res.Tag, res.Digest))
	}
	if res.Keep {
		// Nothing to check again: Compatible stays as the check of this
		// version left it.
		return res, nil
	}

	for _, step := range []func(context.Context, v1alpha1.Provider, *PreflightResult) *preflightError{
		r.checkContract,
		r.checkUpgrade,
		r.checkUnique,
		// Not a check: the checks that follow take longer, or wait.
		r.fetchAhead,
		r.checkCore,
		r.checkVariables,
		r.checkAdditionalManifests,
		r.checkDependencies,
	} {
		if perr := step(ctx, obj, res); perr != nil {
			return nil, r.refuse(obj, perr)
		}
	}
	if res.Artifact == nil {
		setTrue(obj, v1alpha1.CompatibleCondition, v1alpha1.CompatibleReason,
			fmt.Sprintf("%s %s can be installed (a chart declares no clusterctl contract)", obj.GetName(), obj.GetSpec().Version))
		return res, nil
	}
	patches, err := res.Artifact.NamespacePatches(obj.GetNamespace())
	if err != nil {
		return nil, r.refuse(obj, &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ArtifactInvalidReason,
			Message: fmt.Sprintf("cannot install %s into namespace %s: %v", res.Artifact.ComponentsFile, obj.GetNamespace(), err)})
	}
	res.NamespacePatches = patches
	res.ManagerDeployment, res.ManagerArgs = res.Artifact.ManagerDeployment()
	res.CRDsSubstitutionFree = res.Artifact.CRDsSubstitutionFree()
	setTrue(obj, v1alpha1.CompatibleCondition, v1alpha1.CompatibleReason,
		fmt.Sprintf("%s %s (contract %s) can be installed", obj.GetName(), obj.GetSpec().Version, res.Contract))
	return res, nil
}

// refuse sets the condition of a refusal; for an artifact problem the
// compatibility is unknown.
func (r *Reconciler) refuse(obj v1alpha1.Provider, e *preflightError) *preflightError {
	if e.Waiting {
		setCondition(obj, e.Condition, metav1.ConditionUnknown, e.Reason, e.Message)
		return e
	}
	setFalse(obj, e.Condition, e.Reason, e.Message)
	if e.Condition == v1alpha1.ArtifactResolvedCondition {
		setCondition(obj, v1alpha1.CompatibleCondition, metav1.ConditionUnknown, v1alpha1.ReconcilingReason, "waiting for the artifact to resolve")
	}
	return e
}

// resolveArtifact finds, fetches and checks the desired version's artifact.
func (r *Reconciler) resolveArtifact(ctx context.Context, obj v1alpha1.Provider) (*PreflightResult, *preflightError) {
	spec := obj.GetSpec()
	fail := func(reason, format string, args ...any) *preflightError {
		return &preflightError{Condition: v1alpha1.ArtifactResolvedCondition, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	url, err := catalog.ArtifactURL(obj, r.Mirrors)
	if err != nil {
		return nil, fail(v1alpha1.ResolveFailedReason, "%v", err)
	}
	ref, err := artifact.ParseURL(url)
	if err != nil {
		return nil, fail(v1alpha1.ResolveFailedReason, "artifact URL %s: %v", url, err)
	}
	ref.Tag = spec.Version
	if spec.Source != nil && spec.Source.OCI != nil {
		ref.Digest = spec.Source.OCI.Digest
	}
	res := r.recentlyResolved(obj, ref)
	if res == nil {
		var perr *preflightError
		if res, perr = r.fetchArtifact(ctx, obj, ref); perr != nil {
			return nil, perr
		}
		r.Resolutions.put(obj, ref.String(), res.Digest, res.Unreachable, time.Now())
	}

	// The digest checked for this version when it was installed stays
	// pinned: a tag re-pushed with other content is refused.
	if prev := obj.GetStatus().Artifact; prev != nil && ref.Digest == "" && prev.URL == res.URL &&
		strings.HasPrefix(prev.Revision, spec.Version+"@") && prev.Digest != res.Digest {
		return nil, fail(v1alpha1.TagMovedReason,
			"tag %s of %s now points to %s, but %s was checked and installed for this version; it stays installed. If the new content is intended, pin it with spec.source.oci.digest: %s",
			spec.Version, strings.TrimPrefix(res.URL, "oci://"), res.Digest, prev.Digest, res.Digest)
	}
	return res, nil
}

// fetchArtifact asks the registry what ref names now and, for
// components, fetches and checks the artifact (once per digest: the cache
// keeps it). The registry has at most RegistryTimeout to answer. When it
// cannot be reached, the revision installed for this spec stays, if there
// is one (stillInstalled).
func (r *Reconciler) fetchArtifact(ctx context.Context, obj v1alpha1.Provider, ref artifact.Reference) (*PreflightResult, *preflightError) {
	spec := obj.GetSpec()
	timeout := r.registryTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(what string, err error) *preflightError {
		msg := fmt.Sprintf("%s %s: %v", what, ref.String(), err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf("; the registry did not answer within %s (the manager's --registry-timeout)", timeout)
		}
		// Looked at again within a minute, sooner with a shorter interval.
		return &preflightError{Condition: v1alpha1.ArtifactResolvedCondition, Reason: fetchFailureReason(err), Message: msg + accessHint(obj, err),
			Retry: min(time.Minute, r.resyncInterval(obj))}
	}
	access, err := r.registryAccess(ctx, obj)
	if err != nil {
		return nil, &preflightError{Condition: v1alpha1.ArtifactResolvedCondition, Reason: v1alpha1.AuthenticationFailedReason, Message: err.Error()}
	}
	if isChart(obj) {
		// A chart is Helm's to read; preflight pins the digest the tag names.
		digest, err := r.Fetcher.Resolve(ctx, ref, access)
		if err != nil {
			if res := r.stillInstalled(ctx, obj, ref, err); res != nil {
				return res, nil
			}
			return nil, fail("chart", err)
		}
		return &PreflightResult{URL: ref.URL(), Tag: spec.Version, Digest: digest, Revision: spec.Version + "@" + digest}, nil
	}
	pa, err := r.Cache.Fetch(ctx, r.Fetcher, ref, access, obj.ProviderType(), obj.GetName(), spec.Version, obj.GetNamespace())
	if err != nil {
		if res := r.stillInstalled(ctx, obj, ref, err); res != nil {
			return res, nil
		}
		return nil, fail("artifact", err)
	}
	return &PreflightResult{URL: ref.URL(), Tag: spec.Version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Artifact: pa}, nil
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
// provider stays Ready with it, and preflight goes on with what it checked
// then — or, when the components checked then are no longer cached (a
// restarted manager), leaves the Flux objects as they are if they pin that
// revision and it passed its checks (Keep). nil when the registry did
// answer (a tag gone, access refused), or when the spec asks for something
// other than what is installed.
func (r *Reconciler) stillInstalled(ctx context.Context, obj v1alpha1.Provider, ref artifact.Reference, err error) *PreflightResult {
	spec, status := obj.GetSpec(), obj.GetStatus()
	prev := status.Artifact
	if !artifact.Unreachable(err) || prev == nil || status.InstalledVersion != spec.Version || prev.URL != ref.URL() ||
		!strings.HasPrefix(prev.Revision, spec.Version+"@") || (ref.Digest != "" && ref.Digest != prev.Digest) {
		return nil
	}
	msg := fmt.Sprintf("cannot reach the registry to check %s again (%v); %s, checked when it was installed, stays installed, and the tag is checked again within %s",
		ref.String(), err, prev.Revision, r.resyncInterval(obj))
	if isChart(obj) {
		return &PreflightResult{URL: prev.URL, Tag: spec.Version, Digest: prev.Digest, Revision: prev.Revision, Unreachable: msg}
	}
	pa := r.Cache.Cached(prev.Digest, obj.ProviderType(), obj.GetName(), spec.Version)
	if pa == nil {
		compatible := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.CompatibleCondition)
		if compatible == nil || compatible.Status != metav1.ConditionTrue || compatible.ObservedGeneration != obj.GetGeneration() ||
			!r.sourcePins(ctx, obj, prev.Digest) {
			return nil
		}
		return &PreflightResult{URL: prev.URL, Tag: spec.Version, Digest: prev.Digest, Revision: prev.Revision, Contract: status.Contract,
			Unreachable: msg, Keep: true}
	}
	return &PreflightResult{URL: prev.URL, Tag: spec.Version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Artifact: pa, Unreachable: msg}
}

// recentlyResolved is the result of resolving ref again when the
// provider resolved it recently (Resolutions) and its artifact is cached;
// nil otherwise.
func (r *Reconciler) recentlyResolved(obj v1alpha1.Provider, ref artifact.Reference) *PreflightResult {
	digest, unreachable, ok := r.Resolutions.get(obj, ref.String(), r.resyncInterval(obj)/2, time.Now())
	if !ok {
		return nil
	}
	version := obj.GetSpec().Version
	if isChart(obj) {
		return &PreflightResult{URL: ref.URL(), Tag: version, Digest: digest, Revision: version + "@" + digest, Unreachable: unreachable}
	}
	pa := r.Cache.Cached(digest, obj.ProviderType(), obj.GetName(), version)
	if pa == nil {
		return nil
	}
	return &PreflightResult{URL: ref.URL(), Tag: version, Digest: pa.Fetched.Digest, Revision: pa.Fetched.Revision, Artifact: pa, Unreachable: unreachable}
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

// checkContract takes the contract from the version's release series.
func (r *Reconciler) checkContract(_ context.Context, obj v1alpha1.Provider, res *PreflightResult) *preflightError {
	if res.Artifact == nil {
		return nil // a chart has no metadata.yaml
	}
	md, err := clusterctl.ParseMetadata(res.Artifact.Metadata)
	if err == nil {
		res.Contract, err = md.ContractFor(obj.GetSpec().Version)
	}
	if err != nil {
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ContractUnknownReason,
			Message: fmt.Sprintf("metadata.yaml of %s: %v", res.Revision, err)}
	}
	return nil
}

// checkUpgrade refuses a downgrade across minor versions. The installed
// version is status.installedVersion; when that is empty (a first
// install, a provider adopted from clusterctl, a provider restored from a
// backup without its status) and the provider's OCIRepository does not
// already pin what preflight resolved, it is the version clusterctl's
// inventory records, so a lost status does not switch the guard off.
func (r *Reconciler) checkUpgrade(ctx context.Context, obj v1alpha1.Provider, res *PreflightResult) *preflightError {
	installed, recorded := obj.GetStatus().InstalledVersion, ""
	if installed == "" && !r.sourcePins(ctx, obj, res.Digest) {
		v, err := r.inventoryVersion(ctx, obj)
		if err != nil {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ReconcilingReason, Waiting: true, Retry: 30 * time.Second,
				Message: fmt.Sprintf("cannot read clusterctl's inventory Provider %s/%s to check for a downgrade: %v", obj.GetNamespace(), inventoryName(obj), err)}
		}
		installed, recorded = v, v
	}
	if err := clusterctl.CheckUpgrade(installed, obj.GetSpec().Version); err != nil {
		msg := err.Error()
		if recorded != "" {
			msg += fmt.Sprintf(" (%s is what clusterctl's inventory Provider %s/%s records as installed; status.installedVersion is empty)",
				recorded, obj.GetNamespace(), inventoryName(obj))
		}
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.DowngradeReason, Message: msg, Retry: 10 * time.Minute}
	}
	return nil
}

// sourcePins tells whether the provider's OCIRepository already pins
// digest: what it installs is then what preflight resolved.
func (r *Reconciler) sourcePins(ctx context.Context, obj v1alpha1.Provider, digest string) bool {
	var repo sourcev1.OCIRepository
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}, &repo); err != nil {
		return false
	}
	return repo.Spec.Reference != nil && repo.Spec.Reference.Digest == digest
}

// checkUnique refuses a second provider of the same type and name anywhere
// in the cluster; the oldest one keeps it.
func (r *Reconciler) checkUnique(ctx context.Context, obj v1alpha1.Provider, _ *PreflightResult) *preflightError {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list); err != nil {
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ReconcilingReason, Message: fmt.Sprintf("listing %ss: %v", r.Kind.Name, err)}
	}
	for _, other := range list.GetItems() {
		if other.GetName() != obj.GetName() || other.GetUID() == obj.GetUID() {
			continue
		}
		ot, mt := other.GetCreationTimestamp(), obj.GetCreationTimestamp()
		if ot.Before(&mt) || (ot.Equal(&mt) && other.GetNamespace() < obj.GetNamespace()) {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.DuplicateProviderReason,
				Message: fmt.Sprintf("%s %s/%s already manages the %s provider %q; a cluster runs each provider once: delete this one or that one",
					r.Kind.Name, other.GetNamespace(), other.GetName(), obj.ProviderType(), obj.GetName())}
		}
	}
	return nil
}

// coreGroups are the API groups of the core provider's CRDs.
var coreGroups = map[string]bool{
	"cluster.x-k8s.io": true, "addons.cluster.x-k8s.io": true, "ipam.cluster.x-k8s.io": true, "runtime.cluster.x-k8s.io": true,
}

// checkCore makes a non-core provider wait until the core provider's
// contract is known and checks that the provider's contract works with it.
//
// The contract is known once the core's own preflight has read it from
// its artifact — not only once the core is installed — so a non-core
// provider's Flux objects are written while Flux is still installing the
// core, and Flux installs them side by side, as clusterctl applies them one
// after the other without waiting for health. The core's CRDs are an order
// constraint only for components that hold objects of the core's kinds
// (a ClusterClass, say): only those depend on the core's Kustomization. A
// provider's controller that watches the core's kinds waits for their CRDs
// when it starts. The wait is driven by the core's preflight passing in
// this manager (CorePreflights) and by the core provider's status
// changes, which the controller watches; nothing polls.
func (r *Reconciler) checkCore(ctx context.Context, obj v1alpha1.Provider, res *PreflightResult) *preflightError {
	if obj.ProviderType() == v1alpha1.CoreProviderType {
		return nil
	}
	waiting := func(format string, args ...any) *preflightError {
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.WaitingForCoreReason, Waiting: true,
			Retry: r.resyncInterval(obj), Message: fmt.Sprintf(format, args...)}
	}
	var cores v1alpha1.CoreProviderList
	if err := r.Client.List(ctx, &cores); err != nil {
		return waiting("listing CoreProviders: %v", err)
	}
	if len(cores.Items) == 0 {
		return waiting("waiting for the core provider: create a CoreProvider named cluster-api")
	}
	// The oldest core provider is the one uniqueness keeps.
	core := &cores.Items[0]
	for i := range cores.Items {
		if cores.Items[i].CreationTimestamp.Before(&core.CreationTimestamp) {
			core = &cores.Items[i]
		}
	}
	// What the core's preflight just read here comes first: its status
	// says it a moment later, and until then still holds the contract of
	// the version it is leaving.
	contract, known := r.CorePreflights.contract(core)
	if !known {
		contract, known = core.Status.Contract, coreContractKnown(core)
	}
	if !known {
		return waiting("waiting for CoreProvider %s/%s to pass its preflight, which reads its contract", core.Namespace, core.Name)
	}
	if res.Contract != "" {
		if err := clusterctl.CheckContractCompatible(contract, res.Contract); err != nil {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.IncompatibleContractReason, Retry: 10 * time.Minute,
				Message: fmt.Sprintf("%s %s has contract %s, CoreProvider %s/%s %s has %s: %v",
					obj.GetName(), obj.GetSpec().Version, res.Contract, core.Namespace, core.Name, core.Spec.Version, contract, err)}
		}
	}
	if res.Artifact != nil {
		uses, err := res.Artifact.CoreObjects()
		if err != nil {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ArtifactInvalidReason,
				Message: fmt.Sprintf("%s: %v", res.Artifact.ComponentsFile, err)}
		}
		if len(uses) > 0 {
			res.CoreDependency = &ctrl.ObjectKey{Namespace: core.Namespace, Name: objectName(core)}
		}
	}
	return nil
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

// checkVariables refuses a provider whose components use variables that
// have neither a value (inline or configSecret) nor a default, naming them.
func (r *Reconciler) checkVariables(ctx context.Context, obj v1alpha1.Provider, res *PreflightResult) *preflightError {
	if res.Artifact == nil {
		return nil // chart values are Helm's to check
	}
	spec := obj.GetSpec()
	provided := map[string]bool{}
	if ref := spec.ConfigSecret; ref != nil {
		if err := render.CheckConfigSecret(obj); err != nil {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ConfigSecretNotAllowedReason, Message: err.Error()}
		}
		ns := obj.GetNamespace()
		var secret corev1.Secret
		if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: ns, Name: ref.Name}, &secret); err != nil {
			msg := fmt.Sprintf("spec.configSecret: cannot read Secret %s/%s: %v", ns, ref.Name, err)
			if apierrors.IsNotFound(err) {
				msg = fmt.Sprintf("spec.configSecret: Secret %s/%s does not exist; create it with the variables as data keys, or drop spec.configSecret", ns, ref.Name)
			}
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ConfigSecretMissingReason, Retry: 30 * time.Second, Message: msg}
		}
		for k := range secret.Data {
			provided[k] = true
		}
	}
	for k := range spec.Variables {
		provided[k] = true
	}
	vars, err := res.Artifact.Variables()
	if err != nil {
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.ArtifactInvalidReason, Message: fmt.Sprintf("%s: %v", res.Artifact.ComponentsFile, err)}
	}
	missing := clusterctl.MissingVariables(vars, func(name string) bool { return provided[name] })
	if len(missing) > 0 {
		sort.Strings(missing)
		return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.MissingVariablesReason, Retry: 30 * time.Second,
			Message: fmt.Sprintf("%s of %s %s uses variables with no value and no default: %s; set them in spec.variables or in the spec.configSecret Secret",
				res.Artifact.ComponentsFile, obj.GetName(), obj.GetSpec().Version, strings.Join(missing, ", "))}
	}
	return nil
}

// checkDependencies waits for the Flux objects in spec.dependsOn; their
// status changes wake the provider up (dependents in setup.go).
func (r *Reconciler) checkDependencies(ctx context.Context, obj v1alpha1.Provider, _ *PreflightResult) *preflightError {
	for _, dep := range obj.GetSpec().DependsOn {
		ns := namespaceOr(dep.Namespace, obj.GetNamespace())
		kind := dep.Kind
		if kind == "" {
			kind = kustomizev1.KustomizationKind
		}
		ready, msg := r.dependencyReady(ctx, kind, ctrl.ObjectKey{Namespace: ns, Name: dep.Name})
		if !ready {
			return &preflightError{Condition: v1alpha1.CompatibleCondition, Reason: v1alpha1.WaitingForDependencyReason, Waiting: true, Retry: r.resyncInterval(obj),
				Message: fmt.Sprintf("waiting for %s %s/%s (spec.dependsOn): %s", kind, ns, dep.Name, msg)}
		}
	}
	return nil
}
