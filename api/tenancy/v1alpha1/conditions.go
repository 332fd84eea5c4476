package v1alpha1

// Condition types of a tenant, in Cluster API v1beta2 style. Each starts
// Unknown and carries the generation it describes.
const (
	// ReadyCondition summarises the others: True only when the management
	// namespace and its RBAC are in place, the stack is Ready on every
	// selected cluster, and the tenant is neither suspended nor being
	// deleted.
	ReadyCondition = "Ready"
	// ManagementReadyCondition is True when the tenant's namespace,
	// ServiceAccount, RoleBinding and quota are written.
	ManagementReadyCondition = "ManagementReady"
	// ClustersReadyCondition is True when Flux installed the current
	// artifact on every selected cluster and it is healthy (vacuously True
	// when no cluster is selected, with reason NoClustersSelected). Its
	// message counts the clusters per phase and names those not Ready.
	ClustersReadyCondition = "ClustersReady"
	// RolledOutCondition is True when the target revision of the stack
	// went through every wave (spec.rollout); False with the rollout's
	// phase as reason (Progressing, Baking, Paused, RolledBack) or
	// InvalidRollout. Absent without spec.rollout.
	RolledOutCondition = "RolledOut"
	// PausedCondition is True while spec.suspend is set.
	PausedCondition = "Paused"
	// DeletingCondition is True while the tenant is being deleted; its
	// message says what is still being uninstalled.
	DeletingCondition = "Deleting"

	// ReconcilingCondition is True, with the step as reason and message,
	// while Capwright or Flux is working towards the current generation
	// (kstatus: the object is in progress). It is absent otherwise.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the tenant cannot make progress until
	// its spec (or what it references) changes, such as an invalid
	// selector or stack (kstatus: the object failed). It carries the
	// refusal's reason and message, and is absent otherwise.
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
	DeletingReason    = "Deleting"

	// ManagementReady.
	ProvisionedReason = "Provisioned"
	// ObjectConflictReason: an object Capwright would write exists and was
	// not created by Capwright for this tenant; nothing is changed.
	ObjectConflictReason = "ObjectConflict"
	ApplyFailedReason    = "ApplyFailed"

	// ClustersReady.
	AllClustersReadyReason   = "AllClustersReady"
	NoClustersSelectedReason = "NoClustersSelected"
	ClustersFailedReason     = "ClustersFailed"
	ClustersInstallingReason = "ClustersInstalling"
	ClustersPendingReason    = "ClustersPending"
	// ClustersNotFoundReason: spec.clusters.names names a Cluster that
	// exists in none of the tenant's namespaces.
	ClustersNotFoundReason = "ClustersNotFound"
	InvalidSelectorReason  = "InvalidSelector"
	InvalidStackReason     = "InvalidStack"
	// NamespaceNotAllowedReason: spec.clusters.namespaces lists a
	// namespace no tenant may select Clusters in (another Tenant's
	// management namespace, or one the manager forbids); nothing is read
	// there and nothing is written for the tenant's clusters.
	NamespaceNotAllowedReason = "NamespaceNotAllowed"
	FluxAPIMissingReason      = "FluxAPIMissing"
	// ClusterAPIMissingReason: the management cluster does not serve
	// Cluster API's Cluster kind (cluster.x-k8s.io/v1beta2), so no cluster
	// can be selected; the namespace and RBAC are still written.
	ClusterAPIMissingReason = "ClusterAPIMissing"

	// RolledOut: the phases of status.rollout, and a spec.rollout that
	// cannot be followed (a bake time below the minimum, a failure budget
	// not below its wave's size, a cluster in two waves); while it is
	// invalid no cluster changes revision.
	RolloutCompleteReason    = "Complete"
	RolloutProgressingReason = "Progressing"
	RolloutBakingReason      = "Baking"
	RolloutPausedReason      = "Paused"
	RolledBackReason         = "RolledBack"
	RolloutResolvingReason   = "Resolving"
	InvalidRolloutReason     = "InvalidRollout"
)

// TenantKind is the kind of a Tenant, for owner references.
const TenantKind = "Tenant"

// MaxClusterMessageLength bounds TenantClusterStatus.Message, so that the
// status of a tenant with many clusters stays far below the size limit of
// an object.
const MaxClusterMessageLength = 1024

// Phases of the stack on one cluster (TenantClusterStatus.Phase).
const (
	ClusterPhasePending    ClusterPhase = "Pending"
	ClusterPhaseInstalling ClusterPhase = "Installing"
	ClusterPhaseReady      ClusterPhase = "Ready"
	ClusterPhaseFailed     ClusterPhase = "Failed"
)

// Reasons of a cluster's phase. Failed clusters carry Flux's reason
// (HealthCheckFailed, InstallFailed, ArtifactFailed, …) unless Capwright
// refused to write the cluster's Flux object (NameConflict).
const (
	// Pending.
	ClusterPausedReason              = "ClusterPaused"
	ClusterDeletingReason            = "ClusterDeleting"
	ControlPlaneNotInitializedReason = "ControlPlaneNotInitialized"
	KubeconfigMissingReason          = "KubeconfigMissing"
	SuspendedReason                  = "Suspended"

	// Installing and Ready.
	InstallingReason = "Installing"
	InstalledReason  = "Installed"

	// Failed.
	NameConflictReason = "NameConflict"
)

// Names, labels and annotations Capwright puts on what it generates for a
// tenant.
const (
	// TenantLabel names the tenant on everything Capwright writes for it:
	// the management namespace and RBAC, the Flux objects, and (through
	// Flux's commonMetadata) what Flux installs on the workload clusters.
	TenantLabel = "tenancy.capwright.io/tenant"
	// ClusterNamespaceLabel and ClusterNameLabel point a cluster's
	// HelmRelease or Kustomization back at its Cluster API Cluster.
	ClusterNamespaceLabel = "tenancy.capwright.io/cluster-namespace"
	ClusterNameLabel      = "tenancy.capwright.io/cluster-name"

	// RevisionLabel names, on a cluster's Flux object and on the sources
	// and ControllerRevisions of a tenant with spec.rollout, the stack
	// revision it holds (StackRevision.ID).
	RevisionLabel = "tenancy.capwright.io/revision"
	// RetryRolloutAnnotation, set on a Tenant to a new value, tries a
	// revision that failed once more (status.rollout.lastHandledRetry).
	RetryRolloutAnnotation = "tenancy.capwright.io/retry-rollout"

	// Finalizer holds a tenant until the Flux objects of all its clusters
	// are gone (Flux uninstalls the stack as they go).
	Finalizer = "tenancy.capwright.io/finalizer"

	// DefaultNamespacePrefix + the tenant's name is the default management
	// namespace.
	DefaultNamespacePrefix = "tenant-"

	// TenantClusterRole is the ClusterRole the tenant's ServiceAccount is
	// bound to, in the tenant's namespace only. Capwright's manifests
	// ship it as an aggregation of the built-in admin role (which cannot
	// change ResourceQuotas) and of every ClusterRole labelled
	// AggregateToTenantLabel=true, e.g. the Cluster API kinds.
	TenantClusterRole = "capwright-tenant"
	// AggregateToTenantLabel marks a ClusterRole whose rules the tenant
	// role aggregates; infrastructure providers' kinds are added this way.
	AggregateToTenantLabel = "tenancy.capwright.io/aggregate-to-tenant"
)
