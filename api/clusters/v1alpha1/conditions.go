package v1alpha1

// Condition types, in Cluster API v1beta2 style. Each starts Unknown and
// carries the generation it describes.
const (
	// ReadyCondition summarises the others.
	ReadyCondition = "Ready"
	// AvailableCondition (control plane) is the Cluster API contract's:
	// True while the control plane is initialized and the backend reports
	// ready; when it does not, the backend's own reason and message.
	AvailableCondition = "Available"
	// BackendReadyCondition is True when Flux fetched the backend's
	// artifact, installed it at the current generation and its health
	// checks passed.
	BackendReadyCondition = "BackendReady"
	// KubeconfigReadyCondition (control plane) is True when the
	// `<cluster>-kubeconfig` Secret holds the backend's kubeconfig.
	KubeconfigReadyCondition = "KubeconfigReady"
	// PausedCondition is True while the Cluster is paused
	// (spec.paused) or the object carries cluster.x-k8s.io/paused.
	PausedCondition = "Paused"
	// DeletingCondition is True while the object is being deleted; its
	// message says what is still being uninstalled.
	DeletingCondition = "Deleting"
)

// Condition reasons.
const (
	ReconcilingReason = "Reconciling"
	SucceededReason   = "Succeeded"
	NotPausedReason   = "NotPaused"
	PausedReason      = "Paused"
	NotDeletingReason = "NotDeleting"
	DeletingReason    = "Deleting"

	// WaitingForClusterReason: no Cluster owns the object yet (Cluster
	// API sets the owner reference once a Cluster refers to it).
	WaitingForClusterReason = "WaitingForCluster"
	// InvalidSpecReason: the spec cannot be rendered (an undefined
	// variable, a CEL expression that does not parse); the message names
	// the field.
	InvalidSpecReason = "InvalidSpec"
	// ObjectConflictReason: a Flux object or the kubeconfig Secret
	// Capwright would write exists and is not Capwright's for this object;
	// nothing is changed.
	ObjectConflictReason = "ObjectConflict"
	// InstallingReason: Flux is fetching or installing the backend and
	// gives no reason of its own. Otherwise BackendReady (and Available,
	// when Flux failed) carries Flux's own reason and message, e.g.
	// InstallFailed, ArtifactFailed or Progressing.
	InstallingReason = "Installing"
	// StatusObjectNotFoundReason: the statusFrom object does not exist
	// (yet).
	StatusObjectNotFoundReason = "StatusObjectNotFound"
	// StatusObjectForbiddenReason: the manager may not read the
	// statusFrom object's kind; the message says how to grant it.
	StatusObjectForbiddenReason = "StatusObjectForbidden"
	// StatusInvalidReason: the status view cannot be read: an expression
	// fails or returns the wrong type, or the endpoint is not host[:port]
	// or a URL.
	StatusInvalidReason = "StatusInvalid"
	// BackendNotReadyReason: the backend says it is not ready and gives no
	// reason of its own.
	BackendNotReadyReason = "BackendNotReady"
	// UpgradingReason: the backend is being moved to the desired version.
	UpgradingReason = "Upgrading"
	// AvailableReason: the control plane is available.
	AvailableReason = "Available"
	// KubeconfigSecretNotFoundReason / KubeconfigKeyMissingReason: the
	// backend's kubeconfig Secret is missing, or lacks the key.
	KubeconfigSecretNotFoundReason = "KubeconfigSecretNotFound"
	KubeconfigKeyMissingReason     = "KubeconfigKeyMissing"
	// WaitingForBackendReason: nothing to read before the backend is
	// ready.
	WaitingForBackendReason = "WaitingForBackend"
)
