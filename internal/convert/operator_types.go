package convert

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// OperatorVersion is the cluster-api-operator release whose v1alpha2 API
// the types below mirror (api/v1alpha2 of sigs.k8s.io/cluster-api-operator).
const OperatorVersion = "v0.29.0"

// OperatorGroup and OperatorAPIVersion name the operator's API.
const (
	OperatorGroup      = "operator.cluster.x-k8s.io"
	OperatorAPIVersion = OperatorGroup + "/v1alpha2"
)

// OperatorProvider is any of the operator's seven provider kinds: they share
// one spec and status.
type OperatorProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OperatorSpec   `json:"spec,omitempty"`
	Status OperatorStatus `json:"status,omitempty"`
}

// OperatorSpec mirrors the operator's ProviderSpec.
type OperatorSpec struct {
	Version                string                                   `json:"version,omitempty"`
	Manager                *OperatorManager                         `json:"manager,omitempty"`
	Deployment             *OperatorDeployment                      `json:"deployment,omitempty"`
	ConfigSecret           *OperatorObjectReference                 `json:"configSecret,omitempty"`
	FetchConfig            *OperatorFetchConfig                     `json:"fetchConfig,omitempty"`
	AdditionalManifestsRef *OperatorObjectReference                 `json:"additionalManifests,omitempty"`
	ManifestPatches        []string                                 `json:"manifestPatches,omitempty"`
	Patches                []*OperatorPatch                         `json:"patches,omitempty"`
	AdditionalDeployments  map[string]OperatorAdditionalDeployments `json:"additionalDeployments,omitempty"`
}

// OperatorPatch mirrors the operator's Patch: a strategic merge (applied by
// the operator as a JSON merge patch) or RFC 6902 patch, and its target.
type OperatorPatch struct {
	Patch  string                 `json:"patch,omitempty"`
	Target *OperatorPatchSelector `json:"target,omitempty"`
}

// OperatorPatchSelector mirrors the operator's PatchSelector.
type OperatorPatchSelector struct {
	Group         string `json:"group,omitempty"`
	Version       string `json:"version,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Name          string `json:"name,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
}

// OperatorAdditionalDeployments mirrors the operator's
// AdditionalDeployments: settings of a Deployment other than the manager's.
type OperatorAdditionalDeployments struct {
	Manager    *OperatorManager    `json:"manager,omitempty"`
	Deployment *OperatorDeployment `json:"deployment,omitempty"`
}

// OperatorObjectReference mirrors the operator's SecretReference and
// ConfigmapReference.
type OperatorObjectReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// OperatorManager mirrors the operator's ManagerSpec with its inlined
// ControllerManagerConfiguration.
type OperatorManager struct {
	SyncPeriod              *metav1.Duration        `json:"syncPeriod,omitempty"`
	LeaderElection          *OperatorLeaderElection `json:"leaderElection,omitempty"`
	CacheNamespace          string                  `json:"cacheNamespace,omitempty"`
	GracefulShutdownTimeout *metav1.Duration        `json:"gracefulShutDown,omitempty"`
	Controller              *OperatorController     `json:"controller,omitempty"`
	Metrics                 OperatorMetrics         `json:"metrics,omitempty"`
	Health                  OperatorHealth          `json:"health,omitempty"`
	Webhook                 OperatorWebhook         `json:"webhook,omitempty"`

	ProfilerAddress         string `json:"profilerAddress,omitempty"`
	MaxConcurrentReconciles int    `json:"maxConcurrentReconciles,omitempty"`
	// Verbosity is a pointer to tell an explicit value from none: the
	// operator's CRD defaults it to 1, which passes no --v.
	Verbosity      *int              `json:"verbosity,omitempty"`
	FeatureGates   map[string]bool   `json:"featureGates,omitempty"`
	AdditionalArgs map[string]string `json:"additionalArgs,omitempty"`
}

// OperatorLeaderElection mirrors k8s.io/component-base's
// LeaderElectionConfiguration as the operator's CRD lists it.
type OperatorLeaderElection struct {
	LeaderElect       *bool           `json:"leaderElect,omitempty"`
	LeaseDuration     metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline     metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod       metav1.Duration `json:"retryPeriod,omitempty"`
	ResourceLock      string          `json:"resourceLock,omitempty"`
	ResourceName      string          `json:"resourceName,omitempty"`
	ResourceNamespace string          `json:"resourceNamespace,omitempty"`
}

// OperatorController mirrors the operator's ControllerConfigurationSpec.
type OperatorController struct {
	GroupKindConcurrency map[string]int `json:"groupKindConcurrency,omitempty"`
	// CacheSyncTimeout is a time.Duration in the operator's Go type: a
	// number of nanoseconds.
	CacheSyncTimeout *int64 `json:"cacheSyncTimeout,omitempty"`
	RecoverPanic     *bool  `json:"recoverPanic,omitempty"`
}

// OperatorMetrics mirrors the operator's ControllerMetrics.
type OperatorMetrics struct {
	BindAddress         string `json:"bindAddress,omitempty"`
	DiagnosticsAddress  string `json:"diagnosticsAddress,omitempty"`
	InsecureDiagnostics bool   `json:"insecureDiagnostics,omitempty"`
}

// OperatorHealth mirrors the operator's ControllerHealth.
type OperatorHealth struct {
	HealthProbeBindAddress string `json:"healthProbeBindAddress,omitempty"`
	ReadinessEndpointName  string `json:"readinessEndpointName,omitempty"`
	LivenessEndpointName   string `json:"livenessEndpointName,omitempty"`
}

// OperatorWebhook mirrors the operator's ControllerWebhook.
type OperatorWebhook struct {
	Port    *int   `json:"port,omitempty"`
	Host    string `json:"host,omitempty"`
	CertDir string `json:"certDir,omitempty"`
}

// OperatorDeployment mirrors the operator's DeploymentSpec.
type OperatorDeployment struct {
	Replicas     *int              `json:"replicas,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations is a pointer: an empty list clears the components'
	// tolerations.
	Tolerations        *[]corev1.Toleration          `json:"tolerations,omitempty"`
	Affinity           *corev1.Affinity              `json:"affinity,omitempty"`
	Containers         []OperatorContainer           `json:"containers,omitempty"`
	ServiceAccountName string                        `json:"serviceAccountName,omitempty"`
	ImagePullSecrets   []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// OperatorContainer mirrors the operator's ContainerSpec.
type OperatorContainer struct {
	Name      string                       `json:"name"`
	ImageURL  *string                      `json:"imageUrl,omitempty"`
	Args      map[string]string            `json:"args,omitempty"`
	Env       []corev1.EnvVar              `json:"env,omitempty"`
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	Command   []string                     `json:"command,omitempty"`
}

// OperatorFetchConfig mirrors the operator's FetchConfiguration: exactly
// one of OCI, URL and Selector.
type OperatorFetchConfig struct {
	OCI      string                `json:"oci,omitempty"`
	URL      string                `json:"url,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// OperatorStatus mirrors the operator's ProviderStatus.
type OperatorStatus struct {
	Contract           *string            `json:"contract,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	InstalledVersion   *string            `json:"installedVersion,omitempty"`
}

// operatorKinds maps the operator's kinds to clusterctl provider types,
// which are also Capwright's kinds' types.
var operatorKinds = map[string]string{
	"CoreProvider":             v1alpha1.CoreProviderType,
	"BootstrapProvider":        v1alpha1.BootstrapProviderType,
	"ControlPlaneProvider":     v1alpha1.ControlPlaneProviderType,
	"InfrastructureProvider":   v1alpha1.InfrastructureProviderType,
	"AddonProvider":            v1alpha1.AddonProviderType,
	"IPAMProvider":             v1alpha1.IPAMProviderType,
	"RuntimeExtensionProvider": v1alpha1.RuntimeExtensionProviderType,
}

// ProviderTypeOfKind is the clusterctl provider type of a provider kind
// (CoreProvider → core, …), shared by the operator's API, clusterctl's
// inventory and Capwright's; "" for another kind.
func ProviderTypeOfKind(kind string) string { return operatorKinds[kind] }

// OperatorKinds lists the operator's provider kinds.
func OperatorKinds() []string {
	return []string{"CoreProvider", "BootstrapProvider", "ControlPlaneProvider", "InfrastructureProvider", "AddonProvider", "IPAMProvider", "RuntimeExtensionProvider"}
}
