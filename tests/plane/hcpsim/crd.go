package hcpsim

import "k8s.io/apimachinery/pkg/runtime/schema"

// The SimulatedControlPlane kind: its API group, version, names and the
// resource the operator watches.
const (
	Group    = "hcpsim.plane.capwright.io"
	Version  = "v1alpha1"
	Kind     = "SimulatedControlPlane"
	Resource = "simulatedcontrolplanes"
	// CRDName is the name of the CustomResourceDefinition in CRDManifest.
	CRDName = Resource + "." + Group
	// APIVersion is the apiVersion of SimulatedControlPlane objects.
	APIVersion = Group + "/" + Version
)

var (
	// GVR is the resource of SimulatedControlPlanes, for dynamic clients.
	GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}
	// GVK is the kind of SimulatedControlPlanes.
	GVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: Kind}
)

const (
	// Finalizer holds a SimulatedControlPlane until the operator has stopped
	// its etcd and kube-apiserver.
	Finalizer = Group + "/control-plane"
	// KubeconfigSecretKey is the key of the admin kubeconfig in the Secret
	// named by spec.kubeconfigSecretName. It is deliberately not Cluster
	// API's "value": consumers map the key, as they must for real hosted
	// control plane backends.
	KubeconfigSecretKey = "admin.conf"
	// ControlPlaneLabel is set on the kubeconfig Secret to the name of the
	// SimulatedControlPlane it belongs to.
	ControlPlaneLabel = Group + "/control-plane"
	// DefaultUpgradeDelay is how long a simulated upgrade takes when
	// spec.upgradeDelay is unset.
	DefaultUpgradeDelay = "2s"
)

// Reasons in status.reason. A spec.failure reports its own reason
// (FailureReason when it names none).
const (
	ReasonReady              = "Ready"
	ReasonProvisioning       = "Provisioning"
	ReasonProvisioningFailed = "ProvisioningFailed"
	ReasonUpgrading          = "Upgrading"
	ReasonInvalidSpec        = "InvalidSpec"
	FailureReason            = "BackendFailed"
)

// CRDManifest is the CustomResourceDefinition of SimulatedControlPlane.
// Its status is the normalized shape kany8s reads from hosted control
// plane backends (ready, endpoint, version, reason, message,
// observedGeneration), so a consumer needs no per-backend mapping.
const CRDManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: simulatedcontrolplanes.hcpsim.plane.capwright.io
spec:
  group: hcpsim.plane.capwright.io
  names:
    kind: SimulatedControlPlane
    listKind: SimulatedControlPlaneList
    plural: simulatedcontrolplanes
    singular: simulatedcontrolplane
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Ready
      type: boolean
      jsonPath: .status.ready
    - name: Version
      type: string
      jsonPath: .status.version
    - name: Endpoint
      type: string
      jsonPath: .status.endpoint
    - name: Reason
      type: string
      jsonPath: .status.reason
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        description: >-
          A SIMULATED hosted control plane of the Capwright test plane (hcpsim):
          a real etcd and kube-apiserver run as local processes, whatever
          version the spec names.
        type: object
        required: [spec]
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            type: object
            required: [version, kubeconfigSecretName]
            properties:
              version:
                description: >-
                  Kubernetes version to report (simulated: the API server is
                  the plane's own build whatever this says).
                type: string
                pattern: '^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$'
              kubeconfigSecretName:
                description: >-
                  Secret in this namespace that receives the admin kubeconfig
                  under key admin.conf.
                type: string
                minLength: 1
                maxLength: 253
              failure:
                description: >-
                  Makes the simulated backend fail: the object reports
                  ready=false with this reason and message, and nothing is
                  started. A control plane already running keeps running.
                type: object
                properties:
                  reason:
                    type: string
                    maxLength: 1024
                  message:
                    type: string
                    maxLength: 32768
              upgradeDelay:
                description: How long a simulated version upgrade takes (a Go duration).
                type: string
                default: 2s
                pattern: '^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'
          status:
            type: object
            properties:
              ready:
                type: boolean
              endpoint:
                type: string
              version:
                type: string
              reason:
                type: string
              message:
                type: string
              observedGeneration:
                type: integer
                format: int64
`
