package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
)

// Backend is what Flux installs, on the management cluster in the
// object's namespace, to provide the control plane or the infrastructure:
// exactly one of chart (a HelmRelease) or kustomize (a Kustomization).
//
// Strings in chart values, in kustomize substitute values and in
// statusFrom.name and kubeconfig.secretName may use the variables
// ${CLUSTER_NAME}, ${CLUSTER_NAMESPACE}, ${KUBERNETES_VERSION} (the
// control plane's spec.version, or the Cluster's spec.topology.version)
// and ${TOPOLOGY_<name>} for each of the Cluster's
// spec.topology.variables (JSON for non-string values). Capwright
// substitutes them from the owning Cluster; an undefined variable is
// refused with reason InvalidSpec, naming it.
// +kubebuilder:validation:XValidation:rule="has(self.chart) != has(self.kustomize)",message="backend: set exactly one of chart (an OCI Helm chart, installed by a HelmRelease) or kustomize (an OCI artifact of manifests, applied by a Kustomization)"
type Backend struct {
	// Chart is an OCI Helm chart.
	// +optional
	Chart *ChartBackend `json:"chart,omitempty"`

	// Kustomize is an OCI artifact of Kubernetes manifests.
	// +optional
	Kustomize *KustomizeBackend `json:"kustomize,omitempty"`

	// ServiceAccountName is the ServiceAccount, in the object's namespace,
	// that Flux impersonates to install the backend. Under Flux's
	// multi-tenancy lockdown (--default-service-account) leave it empty to
	// get the default, or name one with the permissions the backend needs.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Interval at which Flux reconciles the backend (and corrects drift).
	// Default 10m; at least 1m, Flux's own guidance. To have Flux
	// reconcile at once, annotate the object with
	// reconcile.fluxcd.io/requestedAt (as `flux reconcile` does);
	// Capwright passes the request on.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1m')",message="backend.interval must be at least 1m: at every interval Flux fetches the backend's artifact and applies it again, and Flux's guidance is 60s or more; to have Flux reconcile now, annotate the object with reconcile.fluxcd.io/requestedAt (as flux reconcile does)"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout for installing or upgrading the backend, health checks
	// included. Default 5m; at least 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('10s')",message="backend.timeout must be at least 10s: it bounds installing the backend and waiting for it to be healthy, which a shorter one fails every time; leave it out for the default (5m)"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// OCIRepositoryAccess is how to reach the backend's OCI repository; the
// manager's --registry-mirror rules apply to its URL.
type OCIRepositoryAccess struct {
	// URL of the repository, oci://host[:port]/path, without a tag or
	// digest.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^oci://[^/:@]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$')",message="url must be oci://host[:port]/repository in lower case, without a tag or digest (set version or tag instead)"
	URL string `json:"url"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson, in
	// the object's namespace, with credentials for the registry.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the object's namespace with ca.crt
	// (and optionally tls.crt and tls.key) for the registry's TLS.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Insecure allows plain HTTP. TLS verification is never turned off.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Verify makes Flux verify the artifact's cosign signature before
	// anything of it is installed.
	// +optional
	Verify *providersv1alpha1.OCIVerification `json:"verify,omitempty"`

	// Digest pins the artifact (sha256:…): Flux fetches it by digest, so
	// a tag moved in the registry (or its mirror) changes nothing.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[a-f0-9]{64}$')",message="digest must be sha256: followed by 64 lower-case hex digits"
	Digest string `json:"digest,omitempty"`
}

// ChartBackend is an OCI Helm chart at one version.
type ChartBackend struct {
	OCIRepositoryAccess `json:",inline"`

	// Version of the chart, e.g. 0.15.2 (Helm stores a version's + as _ in
	// the OCI tag; Capwright does the same).
	// +required
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?$')",message="chart.version must be a semantic version, e.g. 0.15.2"
	Version string `json:"version"`

	// Values for the chart. String values may use the backend variables
	// (see backend).
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// KustomizeBackend is an OCI artifact of Kubernetes manifests at one tag.
// +kubebuilder:validation:XValidation:rule="!has(self.substitute) || self.substitute.all(k, k.matches('^[_a-zA-Z][_a-zA-Z0-9]*$'))",message="kustomize.substitute: variable names are letters, digits and _, not starting with a digit"
type KustomizeBackend struct {
	OCIRepositoryAccess `json:",inline"`

	// Tag of the artifact, e.g. v1.2.0.
	// +required
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]*$')",message="kustomize.tag must be an OCI tag: letters, digits, _, . and -, not starting with . or -"
	Tag string `json:"tag"`

	// Path of the directory inside the artifact to apply, relative to its
	// root. Default ./ (the root).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="kustomize.path must be relative to the artifact's root and must not contain .."
	Path string `json:"path,omitempty"`

	// Substitute holds further variables Flux substitutes (${VAR}) in the
	// manifests, besides the backend variables (see backend), which win.
	// Their values may use the backend variables.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Substitute map[string]string `json:"substitute,omitempty"`
}

// StatusFrom is where the backend's normalized status is read: one object
// in the object's namespace, and CEL expressions over it in the dialect of
// Flux's health check expressions (the object's top-level fields are the
// variables: status.ready, metadata.name). The defaults read the
// normalized status of kany8s: status.ready, status.endpoint,
// status.version, status.reason and status.message. An object whose
// status.observedGeneration is behind its generation is not ready.
type StatusFrom struct {
	// APIVersion of the object, e.g. kamaji.clastix.io/v1alpha1.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z]([-a-z0-9]*[a-z0-9])?$')",message="statusFrom.apiVersion must be group/version, e.g. kamaji.clastix.io/v1alpha1 (or v1 for the core group), as the object's own apiVersion reads"
	APIVersion string `json:"apiVersion"`

	// Kind of the object, e.g. TenantControlPlane.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Z][A-Za-z0-9]*$')",message="statusFrom.kind must be a kind as the object's own kind reads, CamelCase, e.g. TenantControlPlane"
	Kind string `json:"kind"`

	// Name of the object; it may use the backend variables, e.g.
	// ${CLUSTER_NAME}.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Ready is a boolean expression: the backend is ready. Default
	// `has(status.ready) && status.ready == true`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Ready string `json:"ready,omitempty"`

	// Endpoint is a string expression: the control plane's endpoint, as
	// host[:port] or an https:// URL (port 443 when none is given); empty
	// while there is none. Default `has(status.endpoint) ? status.endpoint
	// : ""`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Endpoint string `json:"endpoint,omitempty"`

	// Version is a string expression: the Kubernetes version the backend
	// runs; empty when it does not say, then the desired version counts
	// once the backend is ready at it. Default `has(status.version) ?
	// status.version : ""`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Version string `json:"version,omitempty"`

	// Reason is a string expression: why the backend is not ready, passed
	// through as the reason of the Available condition (it must be a
	// condition reason, CamelCase). Default `has(status.reason) ?
	// status.reason : ""`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// Message is a string expression: the backend's own message. Default
	// `has(status.message) ? status.message : ""`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// APIEndpoint is a reachable Kubernetes API endpoint (Cluster API's
// shape).
// +kubebuilder:validation:MinProperties=1
type APIEndpoint struct {
	// Host is the hostname on which the API server is serving.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Host string `json:"host,omitempty"`

	// Port is the port on which the API server is serving.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// IsZero tells whether the endpoint is unset.
func (e APIEndpoint) IsZero() bool { return e.Host == "" && e.Port == 0 }

// BackendStatus is the state of one Flux object of the backend.
type BackendStatus struct {
	// Kind of the Flux object (OCIRepository, HelmRelease, Kustomization).
	// +required
	Kind string `json:"kind"`
	// Name of the Flux object, in the object's namespace.
	// +required
	Name string `json:"name"`
	// Ready mirrors the Flux object's Ready condition for its current
	// generation (Unknown while Flux works on it).
	// +optional
	Ready metav1.ConditionStatus `json:"ready,omitempty"`
	// Revision is the revision Flux last applied (or fetched).
	// +optional
	Revision string `json:"revision,omitempty"`
}

// ObjectMeta is the metadata a Template gives the objects made from it
// (Cluster API's clusterv1.ObjectMeta).
type ObjectMeta struct {
	// Labels to add to the object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations to add to the object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
