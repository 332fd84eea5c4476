package provider

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Refusal is a refusal of condition: Stalling for the reasons that cannot
// lift themselves (only a change of the spec, or of what it references —
// a Secret, a ConfigMap, the core provider's version — lifts them),
// Failing for the others (an unreachable registry, refused credentials).
// Without retry it is looked at again after a minute.
func Refusal(condition, reason, message string, retry time.Duration) *plan.Refusal {
	if retry <= 0 {
		retry = time.Minute
	}
	switch reason {
	case v1alpha1.IncompatibleContractReason, v1alpha1.DowngradeReason, v1alpha1.DuplicateProviderReason,
		v1alpha1.MissingVariablesReason, v1alpha1.ConfigSecretMissingReason, v1alpha1.TagMovedReason,
		v1alpha1.ContractUnknownReason, v1alpha1.ArtifactInvalidReason, v1alpha1.ArtifactTooLargeReason,
		v1alpha1.DigestMismatchReason, v1alpha1.AdditionalManifestsInvalidReason, v1alpha1.ConfigSecretNotAllowedReason,
		v1alpha1.ReleaseChangedReason, v1alpha1.InstalledElsewhereReason, v1alpha1.OwnedByAnotherToolReason,
		v1alpha1.DryRunFailedReason, v1alpha1.InvalidSpecReason:
		return plan.Stalling(condition, reason, message, retry)
	}
	return plan.Failing(condition, reason, message, retry)
}

// waiting is nothing wrong yet: a check waits for another object.
func waiting(condition, reason, message string, retry time.Duration) *plan.Refusal {
	if retry <= 0 {
		retry = time.Minute
	}
	return plan.Waiting(condition, reason, message, retry)
}

func incompatible(reason, message string, retry time.Duration) *plan.Refusal {
	return Refusal(v1alpha1.CompatibleCondition, reason, message, retry)
}

// DryRunRefused is the refusal of an upgrade the dry run stopped.
func DryRunRefused(p v1alpha1.Provider, message string, retry time.Duration) error {
	return incompatible(v1alpha1.DryRunFailedReason, fmt.Sprintf(
		"the API server refused %s %s in a dry run, so nothing of it was applied and %s stays installed: %s",
		p.GetName(), p.GetSpec().Version, p.GetStatus().InstalledVersion, message), retry)
}

// Stage names the checks in their order; each reads facts the ones
// before it do not: a controller gathers a stage's facts only once the
// checks before it passed (Check), as a refused provider reads nothing
// more.
type Stage int

const (
	// Quick: no field Flux would fail on (checkSpec), the tag did not
	// move, the contract from the artifact's metadata, no downgrade,
	// unique, not installed in another namespace. Reads SourcePins,
	// Installations… and Others.
	Quick Stage = iota
	// CoreContract: the core provider's contract is known and
	// compatible. Reads Core.
	CoreContract
	// Variables: every variable has a value or a default. Reads
	// ConfigSecret….
	Variables
	// AdditionalManifests: they pack. Reads AdditionalManifests….
	AdditionalManifests
	// Dependencies: spec.dependsOn is Ready. Reads Dependencies.
	Dependencies
	// APIs: the cluster serves every kind the components apply and do
	// not define. Reads MissingKinds.
	APIs
	// Owners: on a first install, no object the components would apply
	// is another tool's. Reads Existing.
	Owners
)

// checked is what the checks established.
type checked struct {
	contract       string
	coreDependency *meta.NamespacedObjectReference
}

// Check runs the checks of a resolved artifact through stage through,
// and tells the first refusal.
func Check(f Facts, through Stage) error {
	_, err := check(f, through)
	return err
}

func check(f Facts, through Stage) (checked, error) {
	var c checked
	var err error
	if err = checkSpec(f); err != nil {
		return c, err
	}
	if err = checkTag(f); err != nil {
		return c, err
	}
	if c.contract, err = checkContract(f); err != nil {
		return c, err
	}
	if err = checkUpgrade(f); err != nil {
		return c, err
	}
	if err = checkUnique(f); err != nil {
		return c, err
	}
	if err = checkInstalledElsewhere(f); err != nil || through == Quick {
		return c, err
	}
	if c.coreDependency, err = checkCore(f, c.contract); err != nil || through == CoreContract {
		return c, err
	}
	if err = checkVariables(f); err != nil || through == Variables {
		return c, err
	}
	if err = checkAdditionalManifests(f); err != nil || through == AdditionalManifests {
		return c, err
	}
	if err = checkDependencies(f); err != nil || through == Dependencies {
		return c, err
	}
	if err = checkAPIs(f); err != nil || through == APIs {
		return c, err
	}
	return c, checkOwners(f)
}

// Ahead is the provider's OCIRepository to write ahead of the slower
// checks, and whether those are to be gathered at all: the artifact
// resolved and the quick checks passed. A source only fetches; nothing is
// applied from it until a Kustomization or HelmRelease refers to it,
// written only once every check passed. It is the very object Plan writes
// later, so that write finds it unchanged. nil when there is nothing to
// fetch ahead.
func Ahead(f Facts) (source *sourcev1.OCIRepository, more bool) {
	if f.Provider.GetSpec().Suspend || f.Refusal != nil || f.Artifact.Keep || Check(f, Quick) != nil {
		return nil, false
	}
	if (f.Artifact.Checked == nil && !render.IsChart(f.Provider)) || f.Artifact.Release != nil {
		return nil, true // a release needs no fetching: its files are at hand
	}
	repo, err := render.Source(renderInput(f, nil))
	if err != nil {
		return nil, true // the write after the checks reports it
	}
	return repo, true
}

// CheckArtifact runs the checks of the resolved artifact alone: its tag
// did not move since its digest was checked and installed, and its
// contract is known. The other quick facts are read only once they pass.
func CheckArtifact(f Facts) error {
	if err := checkTag(f); err != nil {
		return err
	}
	_, err := checkContract(f)
	return err
}

// checkSpec refuses a spec Flux would take and then fail on, which the
// API server's validation cannot refuse (render.CheckProviderSpec): before
// anything is written, the source fetched ahead included.
func checkSpec(f Facts) error {
	p := f.Provider
	if err := render.CheckProviderSpec(p.GetSpec()); err != nil {
		return incompatible(v1alpha1.InvalidSpecReason, plan.KindOf(p)+" "+plan.ObjectRef(p)+": "+err.Error(), 0)
	}
	return nil
}

// checkTag keeps the digest checked for this version when it was
// installed pinned: a tag re-pushed with other content is refused.
func checkTag(f Facts) error {
	p, a := f.Provider, f.Artifact
	spec := p.GetSpec()
	pinned := spec.Source != nil && spec.Source.OCI != nil && spec.Source.OCI.Digest != ""
	if a.Release != nil {
		return nil // a release that changed is kept by the facts (ReleaseChanged)
	}
	if prev := p.GetStatus().Artifact; prev != nil && !pinned && prev.URL == a.URL &&
		strings.HasPrefix(prev.Revision, spec.Version+"@") && prev.Digest != a.Digest {
		return Refusal(v1alpha1.ArtifactResolvedCondition, v1alpha1.TagMovedReason, fmt.Sprintf(
			"tag %s of %s now points to %s, but %s was checked and installed for this version; it stays installed. If the new content is intended, pin it with spec.source.oci.digest: %s",
			spec.Version, strings.TrimPrefix(a.URL, "oci://"), a.Digest, prev.Digest, a.Digest), 0)
	}
	return nil
}

// checkContract takes the contract from the version's release series.
func checkContract(f Facts) (string, error) {
	a := f.Artifact
	if a.Checked == nil {
		return "", nil // a chart has no metadata.yaml
	}
	if err := a.Checked.ContractError; err != nil {
		return "", incompatible(v1alpha1.ContractUnknownReason, fmt.Sprintf("metadata.yaml of %s: %v", a.Revision, err), 0)
	}
	return a.Checked.Contract, nil
}

// checkUpgrade refuses a downgrade across minor versions. The installed
// version is status.installedVersion; when that is empty (a first
// install, a provider adopted from clusterctl, a provider restored from a
// backup without its status) and the provider's OCIRepository does not
// already pin what was resolved, it is the version clusterctl's inventory
// records, so a lost status does not switch the guard off.
func checkUpgrade(f Facts) error {
	p := f.Provider
	if f.InstallationsError != "" {
		return waiting(v1alpha1.CompatibleCondition, v1alpha1.ReconcilingReason,
			fmt.Sprintf("cannot read what clusterctl or cluster-api-operator installed of %s before its first install, to check for an installation in another namespace and for a downgrade: %s",
				p.GetName(), f.InstallationsError),
			30*time.Second)
	}
	installed := p.GetStatus().InstalledVersion
	var recorded Installation
	if installed == "" && !f.SourcePins {
		recorded, _ = installedHere(f)
		installed = recorded.Version
	}
	if err := clusterctl.CheckUpgrade(installed, p.GetSpec().Version); err != nil {
		msg := err.Error()
		if recorded.Version != "" {
			msg += fmt.Sprintf(" (%s is what %s records as installed; status.installedVersion is empty)", recorded.Version, recorded.Record)
		}
		return incompatible(v1alpha1.DowngradeReason, msg, 10*time.Minute)
	}
	return nil
}

// InventoryName is clusterctl's name for the provider's inventory
// object, the same as its provider label value (cluster-api,
// bootstrap-kubeadm, …).
func InventoryName(p v1alpha1.Provider) string {
	return clusterctl.ProviderLabelValue(p.ProviderType(), p.GetName())
}

// checkUnique refuses a second provider of the same type and name anywhere
// in the cluster; the oldest one keeps it.
func checkUnique(f Facts) error {
	p := f.Provider
	if f.OthersError != "" {
		return incompatible(v1alpha1.ReconcilingReason, fmt.Sprintf("listing %ss: %s", f.Kind, f.OthersError), 0)
	}
	for _, other := range f.Others {
		if other.GetName() != p.GetName() || other.GetUID() == p.GetUID() {
			continue
		}
		ot, mt := other.GetCreationTimestamp(), p.GetCreationTimestamp()
		if ot.Before(&mt) || (ot.Equal(&mt) && other.GetNamespace() < p.GetNamespace()) {
			return incompatible(v1alpha1.DuplicateProviderReason,
				fmt.Sprintf("%s %s/%s already manages the %s provider %q; a cluster runs each provider once: delete this one or that one",
					f.Kind, other.GetNamespace(), other.GetName(), p.ProviderType(), p.GetName()), 0)
		}
	}
	return nil
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
// (a ClusterClass, say): only those depend on the core's Kustomization
// (the reference returned). A provider's controller that watches the
// core's kinds waits for their CRDs when it starts.
func checkCore(f Facts, contract string) (*meta.NamespacedObjectReference, error) {
	p := f.Provider
	if p.ProviderType() == v1alpha1.CoreProviderType {
		return nil, nil
	}
	wait := func(format string, args ...any) error {
		return waiting(v1alpha1.CompatibleCondition, v1alpha1.WaitingForCoreReason, fmt.Sprintf(format, args...), f.Resync)
	}
	core := f.Core
	switch {
	case core.ListError != "":
		return nil, wait("listing CoreProviders: %s", core.ListError)
	case !core.Found && core.Installed != nil:
		in := core.Installed
		return nil, wait("waiting for the core provider: cluster-api %s is installed in namespace %s by %s (%s), and no CoreProvider manages it, so its contract is unknown here: create CoreProvider cluster-api in namespace %s with spec.version %s to adopt it (%s)",
			versionOr(in.Version), in.Namespace, in.By, in.Record, in.Namespace, versionOr(in.Version), MigrateGuide)
	case !core.Found:
		return nil, wait("waiting for the core provider: create a CoreProvider named cluster-api")
	case !core.Known && core.Refused != "":
		return nil, wait("waiting for CoreProvider %s/%s to pass its preflight, which reads its contract; it refuses %s now: %s", core.Namespace, core.Name, core.Version, core.Refused)
	case !core.Known:
		return nil, wait("waiting for CoreProvider %s/%s to pass its preflight, which reads its contract", core.Namespace, core.Name)
	}
	if contract != "" {
		if err := clusterctl.CheckContractCompatible(core.Contract, contract); err != nil {
			return nil, incompatible(v1alpha1.IncompatibleContractReason,
				fmt.Sprintf("%s %s has contract %s, CoreProvider %s/%s %s has %s: %v",
					p.GetName(), p.GetSpec().Version, contract, core.Namespace, core.Name, core.Version, core.Contract, err), 10*time.Minute)
		}
	}
	checked := f.Artifact.Checked
	if checked == nil {
		return nil, nil
	}
	uses, err := checked.CoreObjects()
	if err != nil {
		return nil, incompatible(v1alpha1.ArtifactInvalidReason, fmt.Sprintf("%s: %v", checked.ComponentsFile, err), 0)
	}
	if len(uses) == 0 {
		return nil, nil
	}
	return &meta.NamespacedObjectReference{Namespace: core.Namespace, Name: render.ObjectName(v1alpha1.CoreProviderType, core.Name)}, nil
}

// checkVariables refuses a provider whose components use variables that
// have neither a value (inline or configSecret) nor a default, naming them.
func checkVariables(f Facts) error {
	p, checked := f.Provider, f.Artifact.Checked
	if checked == nil {
		return nil // chart values are Helm's to check
	}
	spec := p.GetSpec()
	provided := map[string]bool{}
	if spec.ConfigSecret != nil {
		if err := render.CheckConfigSecret(p); err != nil {
			return incompatible(v1alpha1.ConfigSecretNotAllowedReason, err.Error(), 0)
		}
		if f.ConfigSecretError != "" {
			return incompatible(v1alpha1.ConfigSecretMissingReason, f.ConfigSecretError, 30*time.Second)
		}
		for _, k := range f.ConfigSecretKeys {
			provided[k] = true
		}
	}
	for k := range spec.Variables {
		provided[k] = true
	}
	vars, err := checked.Variables()
	if err != nil {
		return incompatible(v1alpha1.ArtifactInvalidReason, fmt.Sprintf("%s: %v", checked.ComponentsFile, err), 0)
	}
	missing := clusterctl.MissingVariables(vars, func(name string) bool { return provided[name] })
	if len(missing) > 0 {
		sort.Strings(missing)
		return incompatible(v1alpha1.MissingVariablesReason,
			fmt.Sprintf("%s of %s %s uses variables with no value and no default: %s; set them in spec.variables or in the spec.configSecret Secret",
				checked.ComponentsFile, p.GetName(), spec.Version, strings.Join(missing, ", ")), 30*time.Second)
	}
	return nil
}

// NoArtifactStorage is the refusal of additional manifests by a manager
// that cannot serve them.
const NoArtifactStorage = "spec.additionalManifests needs the Capwright manager to serve artifacts to Flux, and it runs without --artifact-storage-path; set --artifact-storage-path and --artifact-advertise-url on the manager (the manifests and chart of Capwright do)"

// checkAdditionalManifests refuses the version (nothing new written) when
// the ConfigMap of spec.additionalManifests is missing or holds anything
// Flux could not or should not apply.
func checkAdditionalManifests(f Facts) error {
	p := f.Provider
	if p.GetSpec().AdditionalManifests == nil {
		return nil
	}
	refuse := func(msg string) error {
		return incompatible(v1alpha1.AdditionalManifestsInvalidReason, msg, time.Minute)
	}
	if err := render.CheckAdditionalManifests(p); err != nil {
		return refuse(err.Error())
	}
	if !f.ArtifactStorage {
		return refuse(NoArtifactStorage)
	}
	if f.AdditionalManifestsError != "" {
		return refuse(f.AdditionalManifestsError)
	}
	return nil
}

// checkDependencies waits for the Flux objects in spec.dependsOn; their
// status changes wake the provider up.
func checkDependencies(f Facts) error {
	for _, dep := range f.Dependencies {
		if !dep.Ready {
			return waiting(v1alpha1.CompatibleCondition, v1alpha1.WaitingForDependencyReason,
				fmt.Sprintf("waiting for %s %s/%s (spec.dependsOn): %s", dep.Kind, dep.Namespace, dep.Name, dep.Message), f.Resync)
		}
	}
	return nil
}

// CertManagerGroup is cert-manager's API group, whose Certificates and
// Issuers most provider components hold for their webhooks.
const CertManagerGroup = "cert-manager.io"

// checkAPIs waits, applying nothing, while the cluster does not serve a
// kind the components apply and do not define: Flux would apply the rest
// and fail on those, leaving the provider half installed. cert-manager
// missing is the usual case, which clusterctl init solves by installing
// it first; here it is the user's to install (or order with
// spec.dependsOn), and the provider goes on once the API is served.
func checkAPIs(f Facts) error {
	if len(f.MissingKinds) == 0 {
		return nil
	}
	p := f.Provider
	byGroupVersion := map[string][]string{}
	var groupVersions []string
	certManager := false
	for _, k := range f.MissingKinds {
		gv := k.GroupVersion().String()
		if _, ok := byGroupVersion[gv]; !ok {
			groupVersions = append(groupVersions, gv)
		}
		byGroupVersion[gv] = append(byGroupVersion[gv], k.Kind)
		certManager = certManager || k.Group == CertManagerGroup
	}
	parts := make([]string, 0, len(groupVersions))
	for _, gv := range groupVersions {
		parts = append(parts, strings.Join(byGroupVersion[gv], ", ")+" of "+gv)
	}
	fix := "install what serves them first, and name its Flux object in spec.dependsOn so that the provider waits for it"
	if certManager {
		fix = "install cert-manager first (its CRDs serve cert-manager.io/v1; clusterctl init would install it), and name its HelmRelease or Kustomization in spec.dependsOn so that the provider waits for it"
	}
	return waiting(v1alpha1.CompatibleCondition, v1alpha1.MissingAPIReason,
		fmt.Sprintf("%s %s holds %s, which the cluster does not serve: %s; nothing is applied until the cluster serves them, then the provider goes on by itself",
			p.GetName(), p.GetSpec().Version, strings.Join(parts, "; "), fix), f.Resync)
}

// DependencyReady tells whether a Flux object (of spec.dependsOn, or
// that a Kustomization depends on) is Ready for its current generation,
// with why not, and when it last turned Ready.
func DependencyReady(obs health.Observation) (bool, string, metav1.Time) {
	ready := apimeta.FindStatusCondition(obs.Conditions, meta.ReadyCondition)
	if obs.ObservedGeneration == obs.Generation && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obs.Generation {
		return true, "", ready.LastTransitionTime
	}
	if ready != nil {
		return false, ready.Message, metav1.Time{}
	}
	return false, "not Ready yet", metav1.Time{}
}
