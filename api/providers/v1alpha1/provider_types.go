package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProviderSpec is the desired state of a Cluster API provider, shared by
// every provider kind. Field names follow cluster-api-operator where the
// meaning is the same.
// +kubebuilder:validation:XValidation:rule="!has(self.variables) || self.variables.all(k, k.matches('^[A-Za-z_][A-Za-z0-9_]*$'))",message="variables: names must be clusterctl variable names (letters, digits and _, not starting with a digit)"
// +kubebuilder:validation:XValidation:rule="!has(self.upgrade) || !has(self.upgrade.onFailure) || self.upgrade.onFailure != 'Rollback' || !has(self.source) || !has(self.source.chart)",message="upgrade.onFailure: Rollback is not supported for a provider installed from source.chart; leave onFailure out (Hold)"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalManifests) || !has(self.source) || !has(self.source.chart)",message="additionalManifests: not supported with source.chart; add the objects to the chart (or a chart that depends on it) or publish the provider as a provider-artifact (source.oci)"
type ProviderSpec struct {
	// Version is the provider release to install: a semantic version with a
	// leading v, e.g. v1.14.2. It is also the tag of the OCI artifact.
	// Changing it upgrades the provider; downgrades across minor versions
	// are refused.
	// +required
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^v(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?$')",message="version must be a semantic version with a leading v, e.g. v1.14.2"
	Version string `json:"version"`

	// Source tells where the release manifests come from. When omitted, the
	// controller's catalog of well-known providers (clusterctl's list) gives
	// the release URL clusterctl installs the provider from, or, for the
	// providers Cluster API publishes as OCI artifacts, their OCI
	// repository once the manager is told to use it (--catalog-oci-artifacts,
	// or a registry mirror rule for it); the manager's mirror rules apply.
	// +optional
	Source *ProviderSource `json:"source,omitempty"`

	// ConfigSecret holds clusterctl variables (`${VAR}` in the components)
	// as Secret data keys. Flux substitutes them after the build.
	// +optional
	ConfigSecret *SecretReference `json:"configSecret,omitempty"`

	// Variables are clusterctl variables given inline; they win over
	// ConfigSecret.
	// +optional
	Variables map[string]string `json:"variables,omitempty"`

	// Manager configures the provider's controller manager; it becomes
	// arguments of its manager container.
	// +optional
	Manager *ManagerSpec `json:"manager,omitempty"`

	// Deployment customises the provider's controller Deployment.
	// +optional
	Deployment *DeploymentSpec `json:"deployment,omitempty"`

	// Images overrides container images of the provider, as Flux
	// Kustomization images do.
	// +optional
	Images []kustomize.Image `json:"images,omitempty"`

	// Patches are strategic-merge or JSON6902 patches applied to the
	// provider's components, as Flux Kustomization patches are.
	// +optional
	Patches []kustomize.Patch `json:"patches,omitempty"`

	// AdditionalManifests names a ConfigMap whose data key "manifests"
	// holds more objects to install with the provider (multi-document
	// YAML), e.g. extra RBAC for its controller, as cluster-api-operator's
	// additionalManifests does. Flux applies them with a second
	// Kustomization once the components are Ready, substitutes the same
	// variables, labels them as the provider's, corrects their drift and
	// prunes what leaves the ConfigMap. Namespaced objects without a
	// namespace go to the provider's. Secrets are refused (keep them out of
	// ConfigMaps). Needs kustomize-controller's ExternalArtifact feature
	// gate; not supported with source.chart.
	// +optional
	AdditionalManifests *ConfigMapReference `json:"additionalManifests,omitempty"`

	// DependsOn lists Flux objects that must be Ready before the provider is
	// installed, e.g. the HelmRelease of cert-manager.
	// +optional
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// Interval at which Flux reconciles the provider's objects: it
	// fetches the artifact again and applies every component, putting
	// back what drifted. Default 10m; at least 1m, Flux's own guidance for
	// a Kustomization's interval. To have Flux reconcile at once, annotate
	// the provider with reconcile.fluxcd.io/requestedAt (as `flux
	// reconcile` does); Capwright passes the request on.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1m')",message="interval must be at least 1m: at every interval Flux fetches the provider's artifact and applies all of its components again, and Flux's guidance is 60s or more; to have Flux reconcile now, annotate the provider with reconcile.fluxcd.io/requestedAt (as flux reconcile does)"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout for applying the components and waiting for them to be
	// healthy. Default 5m; at least 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('10s')",message="timeout must be at least 10s: it bounds applying the components and waiting for them to be healthy, which a shorter one fails every time; leave it out for the default (5m)"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops reconciling the provider and its Flux objects; what is
	// installed stays as it is.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Upgrade says what happens when an upgrade (a new spec.version)
	// fails. Every upgrade is first dry-run on the API server; what it
	// refuses stops the upgrade before anything changes.
	// +optional
	Upgrade *UpgradePolicy `json:"upgrade,omitempty"`
}

// UpgradeFailureAction is what happens to a provider whose upgrade failed.
// +kubebuilder:validation:Enum=Hold;Rollback
type UpgradeFailureAction string

const (
	// UpgradeHold leaves the new version in place, Flux retrying it, until
	// the spec changes.
	UpgradeHold UpgradeFailureAction = "Hold"
	// UpgradeRollback applies the last version found healthy again.
	UpgradeRollback UpgradeFailureAction = "Rollback"
)

// UpgradePolicy says what happens when a new version fails: Flux reports
// its Kustomization failed on the new revision (an apply error, health
// checks timed out), or the new version is not installed and available
// within the timeout.
type UpgradePolicy struct {
	// OnFailure is Hold (the default: the new version stays, Flux retries
	// it) or Rollback: the last version found installed and available is
	// applied again, pinned by the digest it was installed from — its
	// Deployments, Services, RBAC, webhook configurations and
	// Certificates — while the new version's CustomResourceDefinitions
	// stay (they are never downgraded). The failed version is recorded in
	// status.upgrade.failed, the provider is Ready False and Stalled, and
	// the version is not tried again until spec.version changes or the
	// provider is annotated reconcile.fluxcd.io/resetAt (as `flux
	// reconcile --reset` does). An upgrade whose CRDs change their storage
	// version or stop serving a version cannot be rolled back: it is held
	// instead, and status.upgrade.rollbackBlocked says why.
	// +optional
	// +kubebuilder:default:=Hold
	OnFailure UpgradeFailureAction `json:"onFailure,omitempty"`

	// Timeout is how long a new version has to be installed and available,
	// counted from when its Flux objects were written. Default
	// spec.timeout (5m) plus a minute, so that Flux's own verdict (its
	// health checks give up after spec.timeout, naming what is not
	// healthy) usually comes first; at least 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('10s')",message="upgrade.timeout must be at least 10s: a new version needs that long at least to be applied and become available, and a shorter timeout fails every upgrade; leave it out for spec.timeout plus a minute"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// ProviderSource is where the provider's release manifests come from:
// exactly one of OCI, Chart or Release.
// +kubebuilder:validation:XValidation:rule="(has(self.oci) ? 1 : 0) + (has(self.chart) ? 1 : 0) + (has(self.release) ? 1 : 0) == 1",message="source: set exactly one of oci, chart or release"
type ProviderSource struct {
	// OCI is an artifact in the Cluster API provider-artifact layout: one
	// tar+gzip layer holding metadata.yaml and <type>-components.yaml.
	// +optional
	OCI *OCISource `json:"oci,omitempty"`

	// Chart is an OCI Helm chart of the provider, installed by a HelmRelease.
	// +optional
	Chart *ChartSource `json:"chart,omitempty"`

	// Release is a provider release published as files (metadata.yaml and
	// the components file), where clusterctl and cluster-api-operator read
	// it: a GitHub or GitLab release, or an HTTPS server holding the same
	// files. The controller fetches exactly spec.version, checks it and
	// serves Flux the checked components as an ExternalArtifact pinned by
	// digest.
	// +optional
	Release *ReleaseSource `json:"release,omitempty"`
}

// ReleaseSource is a provider release published as files.
type ReleaseSource struct {
	// URL of the release in one of clusterctl's forms:
	// https://github.com/{owner}/{repo}/releases/{latest|TAG}/{type}-components.yaml,
	// https://{host}/api/v4/projects/{project}/packages/generic/{package}/{latest|TAG}/{type}-components.yaml
	// (a GitLab generic package), or an HTTPS base URL under which
	// {TAG}/metadata.yaml and {TAG}/{type}-components.yaml are served. The
	// version fetched is always spec.version: "latest" is never resolved.
	// The manager's mirror rules apply to the file URLs.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@]+(/[^?#]*)?$')",message="url must be an https:// URL without credentials, query or fragment, e.g. https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"
	URL string `json:"url"`

	// SecretRef names a Secret in the provider's namespace with
	// credentials for the release host: data key "token" (sent as a bearer
	// token, e.g. a GitHub or GitLab token) or "username" and "password"
	// (basic auth). They are sent to the URL's host only, never to a host
	// it redirects to.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the provider's namespace with ca.crt,
	// the certificate authority of the release host's TLS certificate.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows a plain http:// URL. TLS verification is never
	// turned off.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Digest pins the release (sha256:…, as status.artifact.digest shows
	// it: the digest of the provider-artifact layer holding metadata.yaml
	// and the components file). A release whose files give another digest
	// is refused; set it to accept files re-uploaded under the same
	// version.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[a-f0-9]{64}$')",message="digest must be sha256: followed by 64 lower-case hex digits"
	Digest string `json:"digest,omitempty"`
}

// OCIRegistryAccess is how to reach and trust an OCI repository; it maps
// onto Flux OCIRepository fields.
type OCIRegistryAccess struct {
	// URL of the repository, oci://host[:port]/path, without a tag (the tag
	// is the version).
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^oci://[^/:@]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$')",message="url must be oci://host[:port]/repository in lower case, without a tag or digest (the tag is spec.version)"
	URL string `json:"url"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson, in the
	// provider's namespace, with credentials for the registry.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with ca.crt (and optionally tls.crt and
	// tls.key) for the registry's TLS.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows plain HTTP. TLS verification is never turned off.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Verify checks the artifact's cosign signature before Flux uses it.
	// +optional
	Verify *OCIVerification `json:"verify,omitempty"`
}

// OCISource is a provider artifact in an OCI repository.
type OCISource struct {
	OCIRegistryAccess `json:",inline"`

	// Digest pins the artifact (sha256:…); the tag must still resolve to it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[a-f0-9]{64}$')",message="digest must be sha256: followed by 64 lower-case hex digits"
	Digest string `json:"digest,omitempty"`
}

// ChartSource is a provider packaged as an OCI Helm chart; the chart's
// version (and OCI tag) is spec.version.
type ChartSource struct {
	OCIRegistryAccess `json:",inline"`

	// Values for the chart.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom merges values from ConfigMaps and Secrets in the provider's
	// namespace, as HelmRelease valuesFrom does.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
}

// ValuesReference is a ConfigMap or Secret key holding chart values.
type ValuesReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`
	// +required
	Name string `json:"name"`
	// ValuesKey is the data key holding the values; default values.yaml.
	// +optional
	ValuesKey string `json:"valuesKey,omitempty"`
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// OCIVerification configures signature verification, as on a Flux
// OCIRepository.
type OCIVerification struct {
	// Provider is the signing tool: cosign, the only one offered. Flux
	// can also verify notation signatures, but Capwright does not offer
	// them until its end-to-end suite proves them (docs/security.md).
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self == 'cosign'",message="verify.provider: only cosign is supported; notation is not offered until Capwright's end-to-end suite proves it (docs/security.md): sign the artifact with cosign, or leave verify out"
	// +kubebuilder:default:=cosign
	// +optional
	Provider string `json:"provider,omitempty"`
	// SecretRef names a Secret with the cosign public keys (data keys
	// ending in .pub).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
	// MatchOIDCIdentity lists keyless signing identities to accept.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is a keyless signing identity (regular expressions).
type OIDCIdentityMatch struct {
	// +required
	Issuer string `json:"issuer"`
	// +required
	Subject string `json:"subject"`
}

// SecretReference names a Secret in the provider's namespace.
type SecretReference struct {
	// +required
	Name string `json:"name"`
	// Namespace of the Secret; when set it must be the provider's (Flux
	// reads substitution Secrets from its Kustomization's namespace only).
	// Another namespace is refused, before anything reads the Secret, with
	// reason ConfigSecretNotAllowed.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ConfigMapReference names a ConfigMap in the provider's namespace.
type ConfigMapReference struct {
	// Name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the ConfigMap; when set it must be the provider's (the
	// field exists for cluster-api-operator manifests that spell it out).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// DependencyReference is a Flux object that must be Ready first.
type DependencyReference struct {
	// Kind of the Flux object.
	// +kubebuilder:validation:Enum=Kustomization;HelmRelease
	// +kubebuilder:default:=Kustomization
	// +optional
	Kind string `json:"kind,omitempty"`
	// +required
	Name string `json:"name"`
	// Namespace; default the provider's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ManagerSpec configures a provider's controller manager. Each field becomes
// the matching command-line argument of the manager container.
type ManagerSpec struct {
	// FeatureGates become --feature-gates=Name=true,…
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// Verbosity becomes --v.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Verbosity *int32 `json:"verbosity,omitempty"`
	// SyncPeriod becomes --sync-period, e.g. 10m; at least 1m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1m')",message="manager.syncPeriod must be at least 1m: the provider's manager reconciles every object it watches again at that period, and Cluster API's default is 10m"
	SyncPeriod *metav1.Duration `json:"syncPeriod,omitempty"`
	// MetricsBindAddress becomes --diagnostics-address: host:port or
	// :port, e.g. :8443, or 0 to serve no diagnostics.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == '0' || self.matches('^([A-Za-z0-9.-]*|\\\\[[0-9A-Fa-f:.]+\\\\]):[0-9]{1,5}$')",message="manager.metricsBindAddress must be host:port or :port, e.g. :8443 (or 0 to serve no diagnostics): the provider's manager does not start with another address"
	MetricsBindAddress string `json:"metricsBindAddress,omitempty"`
	// HealthProbeBindAddress becomes --health-addr: host:port or :port,
	// e.g. :9440.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == '0' || self.matches('^([A-Za-z0-9.-]*|\\\\[[0-9A-Fa-f:.]+\\\\]):[0-9]{1,5}$')",message="manager.healthProbeBindAddress must be host:port or :port, e.g. :9440: the provider's manager does not start with another address, and its Deployment's probes use this port"
	HealthProbeBindAddress string `json:"healthProbeBindAddress,omitempty"`
	// AdditionalArgs are further --key=value arguments, keys without
	// dashes. Cluster API managers take one concurrency flag per
	// controller, so set those here, e.g. cluster-concurrency: "10"
	// (cluster-api-operator's maxConcurrentReconciles has no equivalent
	// flag in Cluster API's managers).
	// +optional
	AdditionalArgs map[string]string `json:"additionalArgs,omitempty"`
}

// DeploymentSpec customises a provider's controller Deployment.
type DeploymentSpec struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Containers customise containers by name (default: the manager).
	// +optional
	Containers []ContainerSpec `json:"containers,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// ContainerSpec customises one container of the provider's Deployment.
type ContainerSpec struct {
	// Name of the container to change.
	// +required
	Name string `json:"name"`
	// ImageURL replaces the container image.
	// +optional
	ImageURL string `json:"imageUrl,omitempty"`
	// Args are set as --key=value, replacing an argument with the same key.
	// +optional
	Args map[string]string `json:"args,omitempty"`
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Command []string `json:"command,omitempty"`
}

// ProviderStatus is the observed state of a provider.
type ProviderStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the value of the
	// reconcile.fluxcd.io/requestedAt annotation the controller last
	// handled (`flux reconcile`-style requests); the request is passed on
	// to the provider's Flux objects.
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions in Cluster API v1beta2 style: Ready summarises
	// ArtifactResolved, Compatible, Installed, Available, Paused and
	// Deleting.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// InstalledVersion is the version Flux applied and found healthy.
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty"`

	// Contract is the Cluster API contract of the desired version (from its
	// metadata.yaml release series), e.g. v1beta2.
	// +optional
	Contract string `json:"contract,omitempty"`

	// Artifact is the artifact preflight checked and Flux is pinned to.
	// +optional
	Artifact *ResolvedArtifact `json:"artifact,omitempty"`

	// LastAttemptedRevision is the revision (tag@sha256:digest) preflight
	// last resolved spec.version to, whether or not it passed; events
	// about a refusal carry it, as Flux's events carry the revision they
	// attempted.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// FluxObjects are the Flux objects generated for the provider and their
	// readiness.
	// +optional
	FluxObjects []FluxObjectStatus `json:"fluxObjects,omitempty"`

	// Upgrades are the newer versions the provider's source offers, the
	// newest of each newer release series, oldest first (for a release
	// URL, its latest release only), as the manager last checked them
	// (every --upgrade-check-interval, and on a reconcile request), with
	// what blocks those that cannot be installed now. Empty when the
	// provider is up to date or was not checked.
	// +optional
	// +listType=atomic
	Upgrades []AvailableUpgrade `json:"upgrades,omitempty"`

	// LastUpgradeCheck is when the manager last checked the source for
	// newer versions.
	// +optional
	LastUpgradeCheck *metav1.Time `json:"lastUpgradeCheck,omitempty"`

	// LastDriftCorrection is what Flux last put back of the installed
	// revision after someone changed or deleted it (drift), as
	// kustomize-controller reported it in its event on the provider's
	// Kustomization. Not set for a provider from a Helm chart.
	// +optional
	LastDriftCorrection *DriftCorrection `json:"lastDriftCorrection,omitempty"`

	// Upgrade is where the provider's upgrades stand: the version a
	// rollback returns to, the upgrade under way and the last one that
	// failed (spec.upgrade).
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`
}

// UpgradeStatus is where a provider's upgrades stand.
type UpgradeStatus struct {
	// LastGood is the last version found installed and available, and the
	// artifact it was installed from: what a rollback applies again.
	// +optional
	LastGood *InstalledArtifact `json:"lastGood,omitempty"`

	// Version is the version an upgrade under way installs, and StartedAt
	// when its Flux objects were first written (spec.upgrade.timeout
	// counts from then). Cleared once it is installed.
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// DryRun says what the server-side dry run of the upgrade's objects
	// found: how many objects the API server accepted, and how many were
	// skipped (kinds or namespaces the new version creates).
	// +optional
	DryRun string `json:"dryRun,omitempty"`

	// RollbackBlocked says why the upgrade under way cannot be rolled
	// back (a CRD whose storage version it changes, or a version it stops
	// serving): a failure is held.
	// +optional
	RollbackBlocked string `json:"rollbackBlocked,omitempty"`

	// Failed is the last version whose upgrade failed and was rolled back.
	// It is not tried again until spec.version changes or the provider is
	// annotated reconcile.fluxcd.io/resetAt.
	// +optional
	Failed *FailedUpgrade `json:"failed,omitempty"`

	// LastHandledResetAt is the reconcile.fluxcd.io/resetAt value last
	// handled.
	// +optional
	LastHandledResetAt string `json:"lastHandledResetAt,omitempty"`
}

// InstalledArtifact is a version and the artifact it was installed from.
type InstalledArtifact struct {
	// Version installed, e.g. v1.14.2.
	Version string `json:"version"`

	ResolvedArtifact `json:",inline"`
}

// FailedUpgrade is an upgrade that failed and was rolled back.
type FailedUpgrade struct {
	// Version that failed, and the revision of it Flux applied.
	Version  string `json:"version"`
	Revision string `json:"revision"`
	// Time the failure was found.
	Time metav1.Time `json:"time"`
	// Message says why it failed, as Flux reported it.
	Message string `json:"message"`
	// RolledBack is true once the last good version is installed and
	// available again.
	// +optional
	RolledBack bool `json:"rolledBack,omitempty"`
}

// DriftCorrection is one run of Flux that applied the installed revision
// again and changed objects it had applied before.
type DriftCorrection struct {
	// Time Flux reported the correction.
	Time metav1.Time `json:"time"`

	// Revision Flux applied again, as its event names it: the
	// installed artifact's revision (sha256:… for the OCIRepository
	// pinned to the checked digest).
	Revision string `json:"revision"`

	// Objects Flux created or configured again, as it names them, e.g.
	// "Deployment/capi-system/capi-controller-manager configured" (at
	// most 20; a last entry tells how many more).
	// +listType=atomic
	Objects []string `json:"objects"`
}

// AvailableUpgrade is a newer version of a provider, by Cluster API's
// clusterctl upgrade plan rules: the core provider's contract decides.
type AvailableUpgrade struct {
	// Version is the newest version of its release series, e.g. v1.14.3.
	Version string `json:"version"`

	// Series is the release series, vMAJOR.MINOR.
	Series string `json:"series"`

	// Contract is the series' Cluster API contract, from the metadata.yaml
	// of the newest version offered.
	// +optional
	Contract string `json:"contract,omitempty"`

	// Blocked is empty when the version can be installed now (a change of
	// spec.version); otherwise why not: ContractMismatch (no core version
	// works with its contract), CoreUpgradeRequired (upgrade the core
	// provider first), ProvidersBehind (a core version with a new contract
	// some providers have no release for), SeriesUnknown (its contract is
	// unknown) or NoCoreProvider.
	// +optional
	Blocked string `json:"blocked,omitempty"`

	// Message says what blocks the version and what to do.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResolvedArtifact identifies the checked artifact.
type ResolvedArtifact struct {
	// URL of the repository (after mirror rules), or of a release
	// (spec.source.release.url or the catalog's, before mirror rules).
	URL string `json:"url"`
	// Revision is tag@sha256:digest, as Flux reports it.
	Revision string `json:"revision"`
	// Digest of the OCI manifest; for a release, of the provider-artifact
	// layer holding its files.
	Digest string `json:"digest"`
	// Files are the files of a release as fetched, with their sha256: the
	// same version answering with other bytes later is refused.
	// +optional
	// +listType=map
	// +listMapKey=name
	Files []ReleaseFile `json:"files,omitempty"`
}

// ReleaseFile is one fetched file of a release.
type ReleaseFile struct {
	// Name of the file: metadata.yaml or the components file.
	Name string `json:"name"`
	// URL the file was fetched from (after mirror rules and redirects,
	// without a query).
	URL string `json:"url"`
	// SHA256 of the file, sha256:<hex>.
	SHA256 string `json:"sha256"`
}

// FluxObjectStatus is a generated Flux object and its readiness.
type FluxObjectStatus struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Ready mirrors the object's Ready condition for its current
	// generation (Unknown until it has one). While Flux only re-checks what
	// the object already holds or applied (its routine run every
	// interval), the entry stays as it was.
	Ready metav1.ConditionStatus `json:"ready"`
	// Reason of the object's Ready condition.
	// +optional
	Reason string `json:"reason,omitempty"`
}
