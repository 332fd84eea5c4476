package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Tenant is one team or customer of the management cluster. Capwright
// gives it a namespace for its Cluster API clusters (with a ServiceAccount
// its own Flux Kustomizations impersonate, and an optional quota), and has
// Flux install a standard stack — an OCI Helm chart or an OCI kustomize
// artifact — into each of its workload clusters once they are reachable.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tnt,categories=capwright
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`,priority=1
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.totalClusters`
// +kubebuilder:printcolumn:name="Clusters Ready",type=integer,JSONPath=`.status.readyClusters`
// +kubebuilder:printcolumn:name="Clusters Failed",type=integer,JSONPath=`.status.failedClusters`,priority=1
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.rollout.target.artifact`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: a Tenant's name must be a DNS label (lower-case letters, digits and -) of at most 56 characters, so that its default namespace tenant-<name> and the names of its Flux objects stay valid"
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TenantSpec `json:"spec,omitempty"`
	// The default makes a new tenant "in progress" to kstatus until
	// Capwright has seen it (as Flux's own kinds do).
	// +kubebuilder:default={"observedGeneration":-1}
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of Tenants.
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

// TenantSpec is the desired state of a tenant.
// +kubebuilder:validation:XValidation:rule="(has(self.management) && has(self.management.namespace)) == (has(oldSelf.management) && has(oldSelf.management.namespace))",message="spec.management.namespace cannot be set or removed after the Tenant is created: the tenant's Cluster API clusters live in its namespace; create another Tenant to use another namespace"
type TenantSpec struct {
	// Management configures what the tenant gets on the management
	// cluster: its namespace, its Pod Security level and an optional quota.
	// +optional
	Management *ManagementSpec `json:"management,omitempty"`

	// Clusters selects the tenant's Cluster API clusters, by label and/or
	// by name. Only Clusters in the tenant's management namespace and in
	// spec.clusters.namespaces are ever considered.
	// +required
	Clusters ClusterSelector `json:"clusters"`

	// Stack is what Flux installs into every selected workload cluster.
	// +required
	Stack StackSpec `json:"stack"`

	// Rollout moves each new revision of the stack to the clusters wave
	// by wave, with a bake time and a failure budget per wave and an
	// automatic rollback (docs/tenants.md, Rolling out a new revision).
	// Without it every cluster follows the stack at once.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`

	// Suspend stops Flux from reconciling the tenant's stack on every
	// cluster; what is installed stays as it is. Clusters selected while
	// suspended get nothing until it is unset, and a rollout stands still.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ManagementSpec is what the tenant gets on the management cluster.
type ManagementSpec struct {
	// Namespace for the tenant's Cluster API objects. Capwright creates it
	// with a ServiceAccount named after the tenant, bound (in that
	// namespace only) to the ClusterRole capwright-tenant, for the tenant's
	// own Flux Kustomizations to impersonate (spec.serviceAccountName).
	// Default tenant-<name>. It cannot change once set; Capwright refuses a
	// namespace it did not create, Kubernetes' own, and those of the
	// manager's --tenant-forbidden-namespaces (NamespaceNotAllowed).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="management.namespace must be a namespace name: a DNS label of lower-case letters, digits and -"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.management.namespace cannot change: the tenant's Cluster API clusters live in that namespace; create another Tenant to use another namespace"
	// +kubebuilder:validation:XValidation:rule="!(self in ['kube-system', 'kube-public', 'kube-node-lease'])",message="management.namespace must not be kube-system, kube-public or kube-node-lease: Kubernetes' own namespaces cannot be a tenant's; choose a namespace of the tenant's own"
	Namespace string `json:"namespace,omitempty"`

	// Quota becomes a ResourceQuota named capwright-tenant in the tenant's
	// namespace, e.g. hard: {count/clusters.cluster.x-k8s.io: "5"}. The
	// tenant's ServiceAccount can read it but not change it.
	// +optional
	Quota *corev1.ResourceQuotaSpec `json:"quota,omitempty"`

	// PodSecurity is the Pod Security Standard the namespace enforces
	// (and audits and warns about), through the pod-security.kubernetes.io
	// labels Capwright sets on it: restricted (the default), baseline, or
	// privileged. Lower it only when a provider runs Pods for the tenant's
	// clusters in this namespace (a hosted control plane, say) that need
	// more; the tenant's own Kustomizations can create Pods here too.
	// +optional
	// +kubebuilder:validation:Enum=restricted;baseline;privileged
	// +kubebuilder:default:=restricted
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`
}

// PodSecurityLevel is a Pod Security Standard
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/).
type PodSecurityLevel string

// The Pod Security Standards.
const (
	PodSecurityRestricted PodSecurityLevel = "restricted"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityPrivileged PodSecurityLevel = "privileged"
)

// ClusterSelector selects Cluster API Clusters (cluster.x-k8s.io) by label
// and/or by name. A Cluster is selected when it matches the selector or is
// named in names, and lives in the tenant's management namespace or in one
// of namespaces; Clusters in any other namespace are never selected.
// +kubebuilder:validation:XValidation:rule="has(self.selector) || has(self.names)",message="clusters: set a selector, names, or both (an empty selector {} selects every Cluster in the tenant's namespaces)"
type ClusterSelector struct {
	// Selector matches the labels of Clusters. An empty selector ({})
	// selects every Cluster in the tenant's namespaces.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="clusters.selector.matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="clusters.selector.matchExpressions: In and NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="clusters.selector.matchExpressions: Exists and DoesNotExist take no values"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Names selects Clusters by name, in every namespace the tenant may
	// use.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Names []string `json:"names,omitempty"`

	// Namespaces are further namespaces of the management cluster, besides
	// the tenant's own, whose Clusters the tenant may select (e.g. a
	// namespace shared by several tenants). The tenant's pull Secrets and
	// values Secrets must exist in each namespace it has clusters in: the
	// Flux objects of a cluster live in the Cluster's namespace.
	//
	// A management cluster holds every workload cluster's credentials, so
	// some namespaces are closed to tenants: Kubernetes' own (kube-system,
	// kube-public, kube-node-lease) are refused by the API server; another
	// Tenant's management namespace and the namespaces the manager forbids
	// (--tenant-forbidden-namespaces, by default flux-system and
	// cert-manager, and always the manager's own) are refused with reason
	// NamespaceNotAllowed, and nothing is written for the tenant's
	// clusters until they are removed from this list.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!self.exists(ns, ns in ['kube-system', 'kube-public', 'kube-node-lease'])",message="clusters.namespaces must not list kube-system, kube-public or kube-node-lease: Kubernetes' own namespaces hold no tenant's Clusters, and a tenant's stack must not reach what they hold; remove them and list only namespaces that hold the tenant's Clusters"
	Namespaces []string `json:"namespaces,omitempty"`
}

// StackSpec is the stack Flux installs into each selected workload
// cluster: exactly one of chart or kustomize.
// +kubebuilder:validation:XValidation:rule="has(self.chart) != has(self.kustomize)",message="stack: set exactly one of chart (an OCI Helm chart) or kustomize (an OCI artifact of Kubernetes manifests)"
type StackSpec struct {
	// Chart is an OCI Helm chart; each cluster gets a HelmRelease.
	// +optional
	Chart *ChartStack `json:"chart,omitempty"`

	// Kustomize is an OCI artifact of Kubernetes manifests (with or
	// without a kustomization.yaml); each cluster gets a Flux
	// Kustomization.
	// +optional
	Kustomize *KustomizeStack `json:"kustomize,omitempty"`

	// TargetNamespace is the namespace on each workload cluster the stack
	// is installed into. Default: the tenant's name. Flux creates it when
	// it is missing, and Capwright never deletes it: Helm creates a
	// chart's; for a kustomize artifact, a Kustomization of its own applies
	// a Namespace manifest the Capwright manager serves, before the stack.
	// A Namespace manifest in the artifact (kustomize renames it to this
	// namespace) is the stack's own object, pruned with the stack.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="stack.targetNamespace must be a namespace name: a DNS label of lower-case letters, digits and -"
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// Interval at which Flux reconciles the stack on each cluster (and
	// corrects drift) and looks for a new artifact. Default 10m; at least
	// 1m, Flux's own guidance. To have Flux reconcile at once, annotate
	// the Tenant with reconcile.fluxcd.io/requestedAt (as `flux reconcile`
	// does); Capwright passes the request on.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1m')",message="stack.interval must be at least 1m: at every interval Flux looks for a new artifact and applies the stack again on every selected cluster, and Flux's guidance is 60s or more; to have Flux reconcile now, annotate the Tenant with reconcile.fluxcd.io/requestedAt (as flux reconcile does)"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout for installing or upgrading the stack on one cluster,
	// health checks included. Default 5m; at least 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('10s')",message="stack.timeout must be at least 10s: it bounds installing the stack on a cluster and waiting for it to be healthy, which a shorter one fails every time; leave it out for the default (5m)"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// OCIRepositoryAccess is how to reach an OCI repository; it maps onto
// Flux OCIRepository fields.
type OCIRepositoryAccess struct {
	// URL of the repository, oci://host[:port]/path, without a tag or
	// digest.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^oci://[^/:@]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$')",message="url must be oci://host[:port]/repository in lower case, without a tag or digest (set version, tag or semver instead)"
	URL string `json:"url"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson with
	// credentials for the registry. It must exist in every namespace the
	// tenant has selected clusters in.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with ca.crt (and optionally tls.crt and
	// tls.key) for the registry's TLS, in the same namespaces.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows plain HTTP.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Verify makes Flux verify the artifact's signature before anything
	// of it is installed, as an OCIRepository's spec.verify does; an
	// unsigned or wrongly signed artifact fails every cluster's line. The
	// Secret it names must exist in every namespace the tenant has
	// selected clusters in.
	// +optional
	Verify *OCIVerification `json:"verify,omitempty"`
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
	// MatchOIDCIdentity lists the keyless signing identities to accept.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is a keyless signing identity (regular expressions).
type OIDCIdentityMatch struct {
	// Issuer matches the OIDC issuer.
	// +required
	Issuer string `json:"issuer"`
	// Subject matches the identity's subject.
	// +required
	Subject string `json:"subject"`
}

// ChartStack is an OCI Helm chart: exactly one of version or semver.
// +kubebuilder:validation:XValidation:rule="has(self.version) != has(self.semver)",message="chart: set exactly one of version (one chart version) or semver (a range, e.g. >=1.4.0 <2.0.0)"
type ChartStack struct {
	OCIRepositoryAccess `json:",inline"`

	// Version of the chart, e.g. 1.4.2. Helm stores a version's + as _ in
	// the OCI tag; Capwright does the same.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?$')",message="chart.version must be a semantic version, e.g. 1.4.2 (use semver for a range)"
	Version string `json:"version,omitempty"`

	// SemVer is a version range; Flux installs the newest chart version in
	// it and upgrades when a newer one is published.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SemVer string `json:"semver,omitempty"`

	// Values for the chart.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom merges values from ConfigMaps and Secrets, as HelmRelease
	// valuesFrom does; they must exist in every namespace the tenant has
	// selected clusters in. Values win over valuesFrom.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ValuesFrom []meta.ValuesReference `json:"valuesFrom,omitempty"`
}

// KustomizeStack is an OCI artifact of Kubernetes manifests: exactly one
// of tag or semver.
// +kubebuilder:validation:XValidation:rule="has(self.tag) != has(self.semver)",message="kustomize: set exactly one of tag or semver"
// +kubebuilder:validation:XValidation:rule="!has(self.substitute) || self.substitute.all(k, k.matches('^[_a-zA-Z][_a-zA-Z0-9]*$'))",message="kustomize.substitute: variable names are letters, digits and _, not starting with a digit"
type KustomizeStack struct {
	OCIRepositoryAccess `json:",inline"`

	// Tag of the artifact, e.g. v1.2.0.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]*$')",message="kustomize.tag must be an OCI tag: letters, digits, _, . and -, not starting with . or -"
	Tag string `json:"tag,omitempty"`

	// SemVer is a range over the repository's tags; Flux applies the
	// newest tag in it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SemVer string `json:"semver,omitempty"`

	// Path of the directory inside the artifact to apply, relative to its
	// root. Default ./ (the root).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="kustomize.path must be relative to the artifact's root and must not contain .."
	Path string `json:"path,omitempty"`

	// Substitute holds variables Flux substitutes (${VAR}) in the
	// manifests after the build. They win over substituteFrom.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Substitute map[string]string `json:"substitute,omitempty"`

	// SubstituteFrom reads further variables from ConfigMaps and Secrets;
	// they must exist in every namespace the tenant has selected clusters
	// in.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// SubstituteReference is a ConfigMap or Secret whose data keys are
// substitution variables.
type SubstituteReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Optional lets the stack install while the object does not exist.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// TenantStatus is the observed state of a tenant.
type TenantStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the value of the
	// reconcile.fluxcd.io/requestedAt annotation the controller last
	// handled; the request is passed on to the tenant's Flux objects.
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions in Cluster API v1beta2 style: Ready summarises
	// ManagementReady, ClustersReady, Paused and Deleting.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespace is the tenant's management namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// TotalClusters is the number of selected clusters, and the others
	// how many of them are in each phase.
	// +optional
	TotalClusters int32 `json:"totalClusters"`
	// +optional
	ReadyClusters int32 `json:"readyClusters"`
	// +optional
	InstallingClusters int32 `json:"installingClusters"`
	// +optional
	PendingClusters int32 `json:"pendingClusters"`
	// +optional
	FailedClusters int32 `json:"failedClusters"`

	// Rollout is where the rollout of the stack's revisions is; only with
	// spec.rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// Clusters is the state of the stack on each selected cluster, sorted
	// by namespace and name.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	Clusters []TenantClusterStatus `json:"clusters,omitempty"`
}

// TenantClusterStatus is the state of the tenant's stack on one cluster.
type TenantClusterStatus struct {
	// Namespace and Name of the Cluster API Cluster.
	// +required
	Namespace string `json:"namespace"`
	// +required
	Name string `json:"name"`

	// Phase is Pending (the cluster cannot take the stack yet: paused,
	// control plane not initialized, no kubeconfig), Installing (Flux is
	// installing or upgrading it), Ready (Flux applied the current
	// artifact and it is healthy) or Failed (Flux reported a failure, or
	// Capwright refused to write the cluster's Flux object).
	// +required
	Phase ClusterPhase `json:"phase"`

	// Reason is a CamelCase word for the phase: Capwright's for Pending,
	// Installing and Ready, Flux's (e.g. HealthCheckFailed,
	// UpgradeFailed) for Failed.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`

	// Message says what happens and, for Pending and Failed, what to do.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// AppliedRevision is the artifact Flux last installed on the cluster
	// (tag@sha256:digest, or the digest).
	// +optional
	AppliedRevision string `json:"appliedRevision,omitempty"`

	// Revision is the ID of the stack revision the cluster's Flux object
	// is pinned to (status.rollout); only with spec.rollout.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`

	// Wave is the rollout wave the cluster belongs to; only with
	// spec.rollout.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Wave string `json:"wave,omitempty"`

	// LastTransitionTime is when the phase last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// FluxObject is the HelmRelease or Kustomization of the cluster, in the
	// Cluster's namespace.
	// +optional
	FluxObject *FluxObjectReference `json:"fluxObject,omitempty"`
}

// FluxObjectReference names a Flux object in a known namespace.
type FluxObjectReference struct {
	// +required
	Kind string `json:"kind"`
	// +required
	Name string `json:"name"`
}

// ClusterPhase is the state of the stack on one cluster.
// +kubebuilder:validation:Enum=Pending;Installing;Ready;Failed
type ClusterPhase string

// GetConditions returns the status conditions.
func (t *Tenant) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions sets the status conditions.
func (t *Tenant) SetConditions(c []metav1.Condition) { t.Status.Conditions = c }

// PodSecurityLevel is the Pod Security Standard of the tenant's namespace:
// spec.management.podSecurity, or restricted.
func (t *Tenant) PodSecurityLevel() PodSecurityLevel {
	if m := t.Spec.Management; m != nil && m.PodSecurity != "" {
		return m.PodSecurity
	}
	return PodSecurityRestricted
}

// ManagementNamespace is the tenant's namespace on the management cluster:
// spec.management.namespace, or tenant-<name>.
func (t *Tenant) ManagementNamespace() string {
	if m := t.Spec.Management; m != nil && m.Namespace != "" {
		return m.Namespace
	}
	return DefaultNamespacePrefix + t.Name
}

// TargetNamespace is the namespace on the workload clusters the stack goes
// into: spec.stack.targetNamespace, or the tenant's name.
func (t *Tenant) TargetNamespace() string {
	if ns := t.Spec.Stack.TargetNamespace; ns != "" {
		return ns
	}
	return t.Name
}
