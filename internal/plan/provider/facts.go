// Package provider plans a provider: from what the controller (or a CLI)
// gathered about it — the custom resource, its checked artifact, mirror
// rules, the core provider's contract, its dependencies — to the Flux
// objects it wants written, or why it refuses. Plan is pure: no client,
// no clock, no network, so the manager and an offline build cannot
// disagree about a provider.
package provider

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/plan"
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
	// RollingBack: the provider is planned at its last good version after
	// an upgrade failed (Upgrade.Target); the CRDs are left out of the
	// build, as the newer ones stay.
	RollingBack bool
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
