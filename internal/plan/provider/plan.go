// Package provider plans a provider: from what the controller (or a CLI)
// gathered about it — the custom resource, its checked artifact, mirror
// rules, the core provider's contract, its dependencies — to the Flux
// objects it wants written, or why it refuses. Plan is pure: no client,
// no clock, no network, so the manager and an offline build cannot
// disagree about a provider.
package provider

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Facts are what was gathered about a provider before it is planned. A
// fact not gathered is its zero value; the controller gathers the slower
// ones (Core, ConfigSecret…, Additional…, Dependencies) only once the
// quick checks passed (Ahead), and each only once the checks before it
// passed (Check), so a refused provider reads no more than it needs.
type Facts struct {
	// Provider is the custom resource, as read.
	Provider v1alpha1.Provider
	// Kind is its kind (CoreProvider, …).
	Kind string
	// Resync is how often the provider is looked at again (the shorter of
	// spec.interval and the manager's resync interval).
	Resync time.Duration
	// Mirrors are the registry mirror rules; InsecureRegistries the hosts
	// reached over plain HTTP although the provider does not say so.
	Mirrors            catalog.Mirrors
	InsecureRegistries []string
	// Release tells a provider installed from release files (its
	// location, whatever the artifact resolved to).
	Release bool
	// ArtifactStorage: the manager stores and serves artifacts, which
	// spec.additionalManifests needs.
	ArtifactStorage bool

	// Refusal is why the artifact could not be resolved, fetched or
	// checked (the registry refused, a layout error…); the rest is then
	// not gathered.
	Refusal *plan.Refusal
	// Artifact is the artifact the desired version resolved to.
	Artifact Artifact

	// SourcePins: the provider's OCIRepository already pins
	// Artifact.Digest (read only while status.installedVersion is empty).
	SourcePins bool
	// Installations are the provider's installations tools recorded, in
	// any namespace: clusterctl's inventory entries of its type and name
	// (clusterctl's, or Capwright's for an installed provider) and
	// cluster-api-operator's provider CRs of its kind and name.
	// InstallationsError is why they could not be read. Read only while
	// status.installedVersion is empty.
	Installations      []Installation
	InstallationsError string
	// Others are the providers of the same kind; OthersError why they
	// could not be listed.
	Others      []v1alpha1.Provider
	OthersError string

	// Core is the core provider, for a provider of another type.
	Core Core
	// ConfigSecretKeys are the data keys (never the values) of the
	// spec.configSecret Secret; ConfigSecretError why it could not be
	// read, said for the user.
	ConfigSecretKeys  []string
	ConfigSecretError string
	// AdditionalManifests are spec.additionalManifests packed as the
	// artifact Flux applies; AdditionalManifestsError why they could not
	// be, said for the user.
	AdditionalManifests      []byte
	AdditionalManifestsError string
	// SourceLeft is the components source of the other kind (an
	// OCIRepository, or the ExternalArtifact of a release) the provider
	// controls and no longer uses, as read.
	SourceLeft []AdditionalObject
	// AdditionalLeft are the Flux objects of additional manifests the
	// provider controls and no longer asks for (its ExternalArtifact and
	// Kustomization, as read), to be deleted.
	AdditionalLeft []AdditionalObject
	// Dependencies are spec.dependsOn, in order, with their readiness.
	Dependencies []Dependency
	// MissingKinds are the kinds of Artifact.Checked.NeededKinds the
	// cluster does not serve (discovery), sorted.
	MissingKinds []schema.GroupVersionKind
	// Existing are the live objects the components would apply
	// (ComponentObjects), as found before the first install: read only
	// while status.installedVersion is empty and the provider has no
	// Kustomization yet. ExistingError is why they could not be read.
	Existing      []ExistingObject
	ExistingError string
	// FirstInstall: Existing was read, as nothing of the provider has
	// been applied yet.
	FirstInstall bool
}

// AdditionalObject is an object of additional manifests: a
// *kustomizev1.Kustomization or a *sourcev1.ExternalArtifact.
type AdditionalObject interface {
	metav1.Object
	runtime.Object
}

// Artifact is what the desired version resolved to.
type Artifact struct {
	// URL is oci://…, after mirror rules; Tag the version; Revision
	// tag@digest.
	URL, Tag, Digest, Revision string
	// Checked is the checked provider artifact; nil for a chart, and when
	// Keep.
	Checked *CheckedArtifact
	// Unreachable, when set, says why the registry could not be asked
	// again: the artifact is the revision checked and installed before,
	// which stays.
	Unreachable string
	// Keep is set when, besides, the artifact checked then is not at
	// hand (a restarted manager): the Flux objects, which pin Digest, are
	// left as they are, and nothing is checked or rendered again.
	Keep bool
	// Contract is, with Keep, the contract checked then.
	Contract string
	// KeptReason is ArtifactResolved's reason while Unreachable keeps the
	// installed revision; "" is RegistryUnreachable.
	KeptReason string
	// Release is set for a provider installed from release files; URL is
	// then the release URL and Digest that of Release.Packed.
	Release *Release
}

// Release is a release fetched as files and checked.
type Release struct {
	// Files as fetched, with their sha256.
	Files []v1alpha1.ReleaseFile
	// Packed is the artifact Flux applies (render.ReleaseArtifact); nil
	// with Keep.
	Packed []byte
}

// Core is what a provider of another type knows of the core provider.
type Core struct {
	// ListError is why the CoreProviders could not be listed.
	ListError string
	// Found: there is one (the oldest, which uniqueness keeps).
	Found                    bool
	Namespace, Name, Version string
	// Contract is its contract, Known whether it is that of the version
	// it runs or installs: its preflight passed (in this manager or for
	// its current generation), or it is installed.
	Contract string
	Known    bool
	// Refused is, while the contract is not Known, why the core's
	// preflight refuses it (its Compatible condition's reason and
	// message), "" when it does not.
	Refused string
	// Installed is, when no CoreProvider exists, the core provider
	// clusterctl or cluster-api-operator installed, if any.
	Installed *Installation
}

// Dependency is an entry of spec.dependsOn and whether it is Ready.
type Dependency struct {
	Kind, Namespace, Name string
	Ready                 bool
	// Message says why it is not Ready.
	Message string
}

// Desired is what the plan wants done.
type Desired struct {
	// Status are the provider's status values the checks set, refused or
	// not.
	Status Status
	// Suspend: spec.suspend is set; the existing Flux objects are
	// suspended and nothing is written.
	Suspend bool
	// Keep: nothing is written; the Flux objects stay pinned to what was
	// checked (Artifact.Keep).
	Keep bool
	// Passed: every check passed (Keep aside).
	Passed bool
	// Adopting, on the reconcile that writes a first install over an
	// installation another tool made, says what is taken over (an
	// event's message).
	Adopting string
	// Resync is when to look again when nothing else asks sooner.
	Resync time.Duration
	// Additional: the additional manifests are served; false removes
	// their stored artifact.
	Additional bool
	// Release: the provider's components come from a release's
	// ExternalArtifact rather than an OCIRepository.
	Release bool
	// Sync is what is written, in order: the installer's ServiceAccount
	// and ClusterRoleBinding (Uncached, side by side: InstallerBatch), the OCIRepository, the
	// Kustomization or HelmRelease, then the additional manifests'
	// ExternalArtifact (with its Artifact) and Kustomization — or the
	// objects of additional manifests no longer wanted, pruned. Observe
	// holds the Flux objects the fold reads, whatever the path.
	Sync plan.Desired
}

// InstallerBatch is the Batch of the installer's ServiceAccount and
// ClusterRoleBinding: written side by side (a binding names its subject,
// which need not exist yet), before the Flux objects that name them, so
// Flux's first attempt already has its permissions.
const InstallerBatch = "installer"

// Status are the status values of the checks.
type Status struct {
	// LastAttemptedRevision is the revision resolved ("" leaves it).
	LastAttemptedRevision string
	// ArtifactResolved and Compatible are the conditions the checks
	// passed with (nil leaves them; a refusal sets its own).
	ArtifactResolved, Compatible *metav1.Condition
	// Artifact and Contract are what passed: set only then.
	Artifact *v1alpha1.ResolvedArtifact
	Contract string
}

// Group is the group of every write of a provider (plan.Write.Group):
// the first object that is someone else's stops the rest, as it stops the
// pruning and the nudges.
const Group = "provider"

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
		v1alpha1.ReleaseChangedReason, v1alpha1.InstalledElsewhereReason, v1alpha1.OwnedByAnotherToolReason:
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

// Plan checks the desired version — the tag did not move, the contract is
// known and compatible with the core's, no downgrade across minors, the
// provider is unique and not installed in another namespace, every
// variable has a value or a default, the additional manifests pack, the
// dependencies are Ready, and on a first install no object it would
// apply is another tool's — in that order,
// and renders the Flux objects that install it. A refusal (a
// *plan.Refusal) comes with the status values set before it and the
// objects to observe; nothing is then written.
func Plan(f Facts) (Desired, error) {
	p := f.Provider
	d := Desired{Sync: observe(p, f.Release), Resync: f.Resync, Release: f.Release}
	if p.GetSpec().Suspend {
		d.Suspend = true
		return d, nil
	}
	if f.Refusal != nil {
		return d, f.Refusal
	}
	if err := checkTag(f); err != nil {
		return d, err
	}
	if f.Release && !f.ArtifactStorage {
		return d, Refusal(v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolveFailedReason, fmt.Sprintf(
			"%s %s installs from the release at %s, which the manager serves Flux from its artifact storage, and the manager runs without it: start it with --artifact-storage-path (the chart and the release manifests set it), or give the provider an OCI source (spec.source.oci)",
			p.GetName(), p.GetSpec().Version, f.Artifact.URL), 0)
	}
	a := f.Artifact
	d.Status.LastAttemptedRevision = a.Revision
	switch {
	case a.Unreachable != "":
		reason := a.KeptReason
		if reason == "" {
			reason = v1alpha1.RegistryUnreachableReason
		}
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, reason, a.Unreachable)
	case a.Release != nil:
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("release %s of %s fetched (%s) and checked; Flux applies it as %s", a.Tag, a.URL, DescribeFiles(a.Release.Files), a.Digest))
	case render.IsChart(p):
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("%s:%s resolved to %s, a Helm chart", strings.TrimPrefix(a.URL, "oci://"), a.Tag, a.Digest))
	default:
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("%s:%s resolved to %s and follows the provider-artifact layout", strings.TrimPrefix(a.URL, "oci://"), a.Tag, a.Digest))
	}
	if a.Keep {
		// Nothing to check again: Compatible stays as the check of this
		// version left it.
		d.Keep = true
		return d, nil
	}
	c, err := check(f, Owners)
	if err != nil {
		return d, err
	}
	contract := c.contract
	in := renderInput(f, c.coreDependency)
	if a.Checked == nil {
		d.Status.Compatible = condition(v1alpha1.CompatibleCondition, metav1.ConditionTrue, v1alpha1.CompatibleReason,
			fmt.Sprintf("%s %s can be installed (a chart declares no clusterctl contract)", p.GetName(), p.GetSpec().Version))
	} else {
		patches, err := a.Checked.NamespacePatches(p.GetNamespace())
		if err != nil {
			return d, incompatible(v1alpha1.ArtifactInvalidReason,
				fmt.Sprintf("cannot install %s into namespace %s: %v", a.Checked.ComponentsFile, p.GetNamespace(), err), 0)
		}
		in.NamespacePatches = patches
		in.ManagerDeployment, in.ManagerArgs = a.Checked.ManagerDeployment()
		in.SkipCRDSubstitution = a.Checked.CRDsSubstitutionFree()
		msg := fmt.Sprintf("%s %s (contract %s) can be installed", p.GetName(), p.GetSpec().Version, contract)
		if adopting := Adopting(f); adopting != "" {
			msg += "; " + adopting
			if f.FirstInstall {
				d.Adopting = fmt.Sprintf("%s %s: %s", p.GetName(), p.GetSpec().Version, adopting)
			}
		}
		d.Status.Compatible = condition(v1alpha1.CompatibleCondition, metav1.ConditionTrue, v1alpha1.CompatibleReason, msg)
	}
	d.Passed = true
	d.Status.Contract = contract
	d.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: a.URL, Revision: a.Revision, Digest: a.Digest}
	if a.Release != nil {
		d.Status.Artifact.Files = slices.Clone(a.Release.Files)
	}
	return d, writes(f, in, &d)
}

// DescribeFiles names each file of a release with its sha256.
func DescribeFiles(files []v1alpha1.ReleaseFile) string {
	parts := make([]string, 0, len(files))
	for _, f := range files {
		parts = append(parts, f.Name+" "+f.SHA256)
	}
	return strings.Join(parts, ", ")
}

// Stage names the checks in their order; each reads facts the ones
// before it do not: a controller gathers a stage's facts only once the
// checks before it passed (Check), as a refused provider reads nothing
// more.
type Stage int

const (
	// Quick: the tag did not move, the contract from the artifact's
	// metadata, no downgrade, unique, not installed in another
	// namespace. Reads SourcePins, Installations… and Others.
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

func condition(typ string, status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
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
	md, err := clusterctl.ParseMetadata(a.Checked.Metadata)
	contract := ""
	if err == nil {
		contract, err = md.ContractFor(f.Provider.GetSpec().Version)
	}
	if err != nil {
		return "", incompatible(v1alpha1.ContractUnknownReason, fmt.Sprintf("metadata.yaml of %s: %v", a.Revision, err), 0)
	}
	return contract, nil
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

// renderInput is what render is given for the provider and what the
// checks established about it.
func renderInput(f Facts, coreDependency *meta.NamespacedObjectReference) render.Input {
	p, a := f.Provider, f.Artifact
	componentsFile := ""
	if a.Checked != nil {
		componentsFile = a.Checked.ComponentsFile
	}
	return render.Input{
		Provider:       p,
		Kind:           f.Kind,
		Insecure:       slices.Contains(f.InsecureRegistries, RegistryHost(a.URL)),
		ArtifactURL:    a.URL,
		Tag:            a.Tag,
		Digest:         a.Digest,
		ComponentsFile: componentsFile,
		Release:        a.Release != nil,
		ProviderLabel:  clusterctl.ProviderLabelValue(p.ProviderType(), p.GetName()),
		MirrorImages:   mirrorImages(f),
		CoreDependency: coreDependency,
	}
}

// RegistryHost is the host[:port] of an oci:// URL.
func RegistryHost(url string) string {
	return strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
}

// mirrorImages rewrites every container image of the components through
// the registry mirror rules, so a mirrored site pulls nothing from the
// original registries.
func mirrorImages(f Facts) []kustomize.Image {
	checked := f.Artifact.Checked
	if len(f.Mirrors) == 0 || checked == nil {
		return nil
	}
	images, err := checked.Images()
	if err != nil {
		return nil
	}
	var out []kustomize.Image
	seen := map[string]bool{}
	for _, image := range images {
		name := imageName(image)
		if seen[name] {
			continue
		}
		seen[name] = true
		if to, ok := f.Mirrors.Rewrite(name); ok {
			out = append(out, kustomize.Image{Name: name, NewName: to})
		}
	}
	return out
}

// imageName strips the tag and digest of an image reference.
func imageName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// writes renders the installer and the Flux objects into d.Sync, in the
// order they are written: the installer's identity before the Flux
// objects that name it, so Flux's first attempt already has its
// permissions; an ExternalArtifact before the Kustomization that applies
// it. A spec the objects cannot be rendered from stalls Installed until
// it changes.
func writes(f Facts, in render.Input, d *Desired) error {
	p := f.Provider
	rendered, err := render.Provider(in)
	if err != nil {
		return plan.Stalling(v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason,
			fmt.Sprintf("rendering the Flux objects of %s %s/%s: %v", f.Kind, p.GetNamespace(), p.GetName(), err), f.Resync)
	}
	inst, err := render.ProviderInstaller(in)
	if err != nil {
		return plan.Stalling(v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason,
			fmt.Sprintf("rendering the installer of %s %s/%s: %v", f.Kind, p.GetNamespace(), p.GetName(), err), f.Resync)
	}
	// The installer's objects are read uncached: the manager keeps no
	// informer of ServiceAccounts or ClusterRoleBindings.
	w := []plan.Write{
		{Object: inst.ServiceAccount, Uncached: true, Group: Group, Batch: InstallerBatch},
		{Object: inst.ClusterRoleBinding, Uncached: true, Group: Group, Batch: InstallerBatch},
		// The reconcile request reaches source-, kustomize- and
		// helm-controller through these; the additional manifests'
		// Kustomization is left to its interval: it depends on the
		// provider's, and asked at the same time it would report
		// DependencyNotReady while that one re-runs.
	}
	if rendered.OCIRepository != nil {
		w = append(w, plan.Write{Object: rendered.OCIRepository, Group: Group, Request: true})
	}
	if ea := rendered.ComponentsArtifact; ea != nil {
		if f.Artifact.Release == nil || f.Artifact.Release.Packed == nil {
			return fmt.Errorf("the release of %s %s/%s was not packed; preflight must fetch it first", f.Kind, p.GetNamespace(), p.GetName())
		}
		w = append(w, plan.Write{Object: ea, Group: Group, Artifact: &plan.Artifact{Data: f.Artifact.Release.Packed,
			Of: fmt.Sprintf("release %s of %s", f.Artifact.Tag, f.Artifact.URL)}})
	}
	if rendered.Kustomization != nil {
		w = append(w, plan.Write{Object: rendered.Kustomization, Group: Group, Request: true})
	}
	if rendered.HelmRelease != nil {
		w = append(w, plan.Write{Object: rendered.HelmRelease, Group: Group, Request: true})
	}
	// The source of the other kind (an OCIRepository for a provider now
	// installed from a release, or the other way round) goes once the
	// Kustomization reads from the new one.
	for _, o := range f.SourceLeft {
		d.Sync.Prune = append(d.Sync.Prune, o)
	}
	// An object in the way stops the sync before anything is pruned.
	d.Sync.PruneNeeds = []string{Group}
	if rendered.AdditionalArtifact == nil {
		// What an earlier spec asked for goes; Flux prunes what its
		// Kustomization applied.
		for _, o := range f.AdditionalLeft {
			d.Sync.Prune = append(d.Sync.Prune, o)
		}
	} else {
		if f.AdditionalManifests == nil {
			return fmt.Errorf("the additional manifests of %s %s/%s were not packed; preflight must read them first", f.Kind, p.GetNamespace(), p.GetName())
		}
		d.Additional = true
		ref := p.GetSpec().AdditionalManifests
		w = append(w,
			plan.Write{Object: rendered.AdditionalArtifact, Group: Group, Artifact: &plan.Artifact{Data: f.AdditionalManifests,
				Of: fmt.Sprintf("ConfigMap %s/%s", p.GetNamespace(), ref.Name)}},
			plan.Write{Object: rendered.AdditionalKustomization, Group: Group})
	}
	d.Sync.Writes = w
	// The Kustomizations the provider's depend on are observed too, so
	// Flux is nudged as soon as they are Ready (Nudges).
	for _, ks := range []*kustomizev1.Kustomization{rendered.Kustomization, rendered.AdditionalKustomization} {
		if ks == nil {
			continue
		}
		for _, dep := range ks.Spec.DependsOn {
			addObserved(&d.Sync, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOr(dep.Namespace, ks.Namespace), Name: dep.Name}})
		}
	}
	d.Sync.Nudges = nudges(p)
	return nil
}

// observe is what the fold reads of the provider's Flux objects: its
// OCIRepository, its Kustomization or HelmRelease, and the ExternalArtifact
// and Kustomization of its additional manifests.
func observe(p v1alpha1.Provider, release bool) plan.Desired {
	var d plan.Desired
	m := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: render.ObjectName(p.ProviderType(), p.GetName())}
	if release {
		d.Observe = append(d.Observe, &sourcev1.ExternalArtifact{ObjectMeta: m})
	} else {
		d.Observe = append(d.Observe, &sourcev1.OCIRepository{ObjectMeta: m})
	}
	if render.IsChart(p) {
		d.Observe = append(d.Observe, &helmv2.HelmRelease{ObjectMeta: m})
		return d
	}
	d.Observe = append(d.Observe, &kustomizev1.Kustomization{ObjectMeta: m})
	if p.GetSpec().AdditionalManifests != nil {
		a := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: render.AdditionalObjectName(p.ProviderType(), p.GetName())}
		d.Observe = append(d.Observe, &sourcev1.ExternalArtifact{ObjectMeta: a}, &kustomizev1.Kustomization{ObjectMeta: a})
	}
	return d
}

// addObserved observes a Kustomization unless it is observed already.
func addObserved(d *plan.Desired, ks *kustomizev1.Kustomization) {
	for _, o := range d.Observe {
		if _, ok := o.(*kustomizev1.Kustomization); ok && o.GetNamespace() == ks.Namespace && o.GetName() == ks.Name {
			return
		}
	}
	d.Observe = append(d.Observe, ks)
}

// nudges asks kustomize-controller to retry one of the provider's
// Kustomizations at once when it waits for dependencies that are all
// Ready now. kustomize-controller does not watch dependencies; it looks
// again every --requeue-dependency (30s by default), which would add up to
// that much to the install of every non-core provider and of additional
// manifests. The request names the dependencies' latest Ready transition,
// so it is written once per transition and a resync writes nothing.
func nudges(p v1alpha1.Provider) func(plan.Observed) []plan.Nudge {
	names := []string{render.ObjectName(p.ProviderType(), p.GetName()), render.AdditionalObjectName(p.ProviderType(), p.GetName())}
	return func(observed plan.Observed) []plan.Nudge {
		var out []plan.Nudge
		for _, name := range names {
			if n, ok := nudge(p, observed, name); ok {
				out = append(out, n)
			}
		}
		return out
	}
}

func nudge(p v1alpha1.Provider, observed plan.Observed, name string) (plan.Nudge, bool) {
	ks, ok := observed.Get(kustomizev1.KustomizationKind, p.GetNamespace(), name).(*kustomizev1.Kustomization)
	if !ok || !render.ControlledBy(ks, p.GetUID()) {
		return plan.Nudge{}, false
	}
	waiting := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ks.Spec.Suspend || len(ks.Spec.DependsOn) == 0 || waiting == nil ||
		waiting.Reason != meta.DependencyNotReadyReason || waiting.ObservedGeneration != ks.Generation {
		return plan.Nudge{}, false
	}
	var latest metav1.Time
	var versions []string
	for _, d := range ks.Spec.DependsOn {
		dep, ok := observed.Get(kustomizev1.KustomizationKind, namespaceOr(d.Namespace, ks.Namespace), d.Name).(*kustomizev1.Kustomization)
		if !ok {
			return plan.Nudge{}, false
		}
		ready, _, since := DependencyReady(health.ObserveKustomization(dep))
		if !ready {
			return plan.Nudge{}, false
		}
		if latest.Before(&since) {
			latest = since
		}
		versions = append(versions, dep.ResourceVersion)
	}
	token := latest.UTC().Format(time.RFC3339Nano)
	if handled := ks.Status.LastHandledReconcileAt; handled == token || strings.HasPrefix(handled, token+"/") {
		// Flux handled the request and still found a dependency not
		// Ready: it ran once more right after turning Ready (a
		// transition within the same second, so the same token). Ask
		// again for the dependencies as they are now.
		token += "/" + strings.Join(versions, ",")
	}
	return plan.Nudge{Object: ks.DeepCopy(), Token: token, Needs: []string{Group}}, true
}

func namespaceOr(namespace, fallback string) string {
	if namespace == "" {
		return fallback
	}
	return namespace
}
