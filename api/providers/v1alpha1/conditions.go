package v1alpha1

// Condition types of a provider, in Cluster API v1beta2 style. Each starts
// Unknown and carries the generation it describes.
const (
	// ReadyCondition summarises the others: True only when the artifact is
	// resolved and compatible, Flux installed the desired version and it is
	// available, the provider is not paused and not being deleted.
	ReadyCondition = "Ready"
	// ArtifactResolvedCondition is True when the version's artifact was
	// resolved to a digest, read and found in the provider-artifact layout.
	ArtifactResolvedCondition = "ArtifactResolved"
	// CompatibleCondition is True when preflight found the version
	// installable: its contract works with the core provider's, it is not a
	// downgrade across minor versions, no other provider has the same type
	// and name, it is not installed in another namespace, every variable
	// has a value or a default, (non-core) the core provider is Ready, the
	// cluster serves the kinds its components apply and do not define
	// (cert-manager's), and (first install) no object it would apply is
	// another tool's.
	CompatibleCondition = "Compatible"
	// InstalledCondition is True when Flux applied the desired version's
	// artifact and its health checks passed.
	InstalledCondition = "Installed"
	// AvailableCondition is True while everything Flux applied for the
	// provider is healthy.
	AvailableCondition = "Available"
	// PausedCondition is True while spec.suspend is set.
	PausedCondition = "Paused"
	// DeletingCondition is True while the provider is being deleted; its
	// message names what blocks the deletion.
	DeletingCondition = "Deleting"

	// UpgradeAvailableCondition is True when the provider's source offers
	// a newer version that can be installed now (its contract works with
	// the core provider's), checked at a low rate
	// (--upgrade-check-interval) and on a reconcile request; False when
	// none can (up to date, or every newer version blocked: see
	// status.upgrades); Unknown when the source could not be checked. It
	// is informational: Ready does not summarise it.
	UpgradeAvailableCondition = "UpgradeAvailable"

	// ReconcilingCondition is True, with the step as reason and message,
	// while Capwright or Flux is working towards the current generation
	// (kstatus: the object is in progress). It is absent otherwise.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the provider cannot make progress
	// until its spec (or what it references) changes: an incompatible
	// contract, a missing variable, a refused downgrade, a moved tag
	// (kstatus: the object failed). It carries the refusal's reason and
	// message, and is absent otherwise.
	StalledCondition = "Stalled"
)

// Condition reasons.
const (
	// Generic.
	ReconcilingReason = "Reconciling"
	SucceededReason   = "Succeeded"
	NotPausedReason   = "NotPaused"
	PausedReason      = "Paused"
	NotDeletingReason = "NotDeleting"

	// ArtifactResolved.
	ResolvedReason             = "Resolved"
	ResolveFailedReason        = "ResolveFailed"
	ArtifactInvalidReason      = "ArtifactInvalid"
	ArtifactTooLargeReason     = "ArtifactTooLarge"
	DigestMismatchReason       = "DigestMismatch"
	TagMovedReason             = "TagMoved"
	AuthenticationFailedReason = "AuthenticationFailed"
	// RegistryUnreachableReason keeps ArtifactResolved True: the registry
	// cannot be reached to check the tag again, and the revision checked
	// and installed for this version stays.
	RegistryUnreachableReason = "RegistryUnreachable"
	// ReleaseChangedReason keeps ArtifactResolved True: a file of the
	// installed release answers with other bytes than were checked and
	// installed for this version (a re-uploaded asset); the installed
	// revision stays.
	ReleaseChangedReason = "ReleaseChanged"
	// ReleaseUnreachableReason keeps ArtifactResolved True: the release
	// host cannot be reached to check the release again, and the revision
	// checked and installed for this version stays.
	ReleaseUnreachableReason = "ReleaseUnreachable"
	// ReleaseNotFoundReason: the version was never released at the URL.
	ReleaseNotFoundReason = "ReleaseNotFound"
	// ReleaseInvalidReason: the release host answered with something that
	// is not the release's files (an HTML page, an error document), or the
	// files do not form a provider release.
	ReleaseInvalidReason = "ReleaseInvalid"

	// Compatible.
	CompatibleReason = "Compatible"
	// InvalidSpecReason: a field of the spec Flux would take and then
	// fail on, which the API server's validation cannot refuse (a
	// keyless signing identity that is not a regular expression, an
	// image override no Pod can pull); the message names the field, and
	// nothing is written until it is fixed.
	InvalidSpecReason          = "InvalidSpec"
	ContractUnknownReason      = "ContractUnknown"
	IncompatibleContractReason = "IncompatibleContract"
	DowngradeReason            = "DowngradeRefused"
	DuplicateProviderReason    = "DuplicateProvider"
	MissingVariablesReason     = "MissingVariables"
	WaitingForCoreReason       = "WaitingForCoreProvider"
	WaitingForDependencyReason = "WaitingForDependency"
	// MissingAPIReason: the components hold objects of kinds the cluster
	// does not serve and they do not define themselves (a CRD of theirs),
	// typically cert-manager's Certificate and Issuer with cert-manager
	// not installed; the provider waits, nothing applied, and goes on
	// once the API is served.
	MissingAPIReason          = "MissingAPI"
	ConfigSecretMissingReason = "ConfigSecretMissing"
	// ConfigSecretNotAllowedReason: spec.configSecret names a Secret in
	// another namespace; it is refused before anything reads it.
	ConfigSecretNotAllowedReason = "ConfigSecretNotAllowed"
	// AdditionalManifestsInvalidReason: the ConfigMap of
	// spec.additionalManifests is missing or does not hold installable
	// objects.
	AdditionalManifestsInvalidReason = "AdditionalManifestsInvalid"
	// InstalledElsewhereReason: on a first install, the provider is
	// found installed in another namespace than the CR's (clusterctl's
	// inventory or a cluster-api-operator provider CR says so); it is
	// refused before anything is written.
	InstalledElsewhereReason = "InstalledElsewhere"
	// OwnedByAnotherToolReason: on a first install, an object the
	// components would apply exists and another tool manages it (a
	// controller owner reference, cluster-api-operator's owner
	// reference, another Flux Kustomization, a Helm release); it is
	// refused before anything is applied.
	OwnedByAnotherToolReason = "OwnedByAnotherTool"
	// DryRunFailedReason: the API server (or a webhook) refused an
	// object of the new version in the server-side dry run before the
	// upgrade; nothing was changed, and the dry run is tried again at
	// the provider's interval.
	DryRunFailedReason = "DryRunFailed"

	// Installed and Available.
	InstallingReason    = "Installing"
	UpgradingReason     = "Upgrading"
	InstalledReason     = "Installed"
	InstallFailedReason = "InstallFailed"
	// RollingBackReason: the new version failed (spec.upgrade.onFailure:
	// Rollback) and Flux is applying the last good version again.
	RollingBackReason = "RollingBack"
	// RolledBackReason: the new version failed and the last good version
	// is installed and available again; the provider is Stalled until
	// spec.version changes or reconcile.fluxcd.io/resetAt asks for
	// another try.
	RolledBackReason = "RolledBack"
	// UpgradeHeldReason: the new version failed under onFailure Rollback
	// but stays in place, Flux retrying it, because it cannot be rolled
	// back (status.upgrade.rollbackBlocked). Under Hold a failure shows
	// as InstallFailed, as it always did.
	UpgradeHeldReason  = "UpgradeHeld"
	AvailableReason    = "Available"
	NotAvailableReason = "NotAvailable"

	// UpgradeAvailable.
	UpgradeAvailableReason = "UpgradeAvailable"
	// UpToDateReason: the source offers no newer version.
	UpToDateReason = "UpToDate"
	// UpgradeBlockedReason: the source offers newer versions, none of
	// which can be installed now (status.upgrades says why).
	UpgradeBlockedReason = "UpgradeBlocked"
	// UpgradeCheckFailedReason: the source could not be read (registry or
	// release host unreachable, credentials refused, no version tags or
	// latest release).
	UpgradeCheckFailedReason = "UpgradeCheckFailed"
	// UpgradeNotCheckedReason: the provider is installed from a Helm
	// chart, whose versions carry no metadata.yaml.
	UpgradeNotCheckedReason = "UpgradeNotChecked"

	// Deleting.
	DeletionBlockedReason = "DeletionBlocked"
	DeletingReason        = "Deleting"
)

// Labels and annotations Capwright puts on what it generates.
const (
	// ProviderKindLabel and ProviderNameLabel point a generated Flux object
	// back at its provider (namespace = the object's namespace).
	ProviderKindLabel = "providers.capwright.io/kind"
	ProviderNameLabel = "providers.capwright.io/name"
	// ProviderNamespaceLabel names the provider's namespace on what
	// Capwright generates outside it: the ClusterRoleBinding of its
	// installer.
	ProviderNamespaceLabel = "providers.capwright.io/namespace"
	// Finalizer holds a provider until its Flux objects are gone.
	Finalizer = "providers.capwright.io/finalizer"

	// InstallerClusterRole is what Flux applies a provider with: each
	// provider gets a ServiceAccount of its own in its namespace, which its
	// Kustomization or HelmRelease names (spec.serviceAccountName), bound
	// to this ClusterRole. Capwright's manifests ship it as an aggregation
	// of the kinds provider components hold and of every ClusterRole
	// labelled AggregateToInstallerLabel=true.
	InstallerClusterRole = "capwright-provider-installer"
	// AggregateToInstallerLabel marks a ClusterRole whose rules the
	// installer role aggregates: kinds a provider's components or
	// additional manifests hold beyond those Capwright lists.
	AggregateToInstallerLabel = "providers.capwright.io/aggregate-to-installer"
)
