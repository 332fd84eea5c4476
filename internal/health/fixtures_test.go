package health

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"sigs.k8s.io/yaml"
)

// Flux objects as the v2.9 controllers write them (source-controller
// v1.9.5, kustomize-controller v1.9.5, helm-controller v1.6.4): status
// shapes, reasons and messages copied from what they set, with OLD and NEW
// standing for two artifact digests.

const (
	oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	// newRevision is what preflight records for NEW: tag@digest.
	newRevision = "v1.14.2@" + newDigest
)

// decode reads a Flux object written in YAML, with OLD and NEW replaced by
// the digests.
func decode[T any](t *testing.T, manifest string) *T {
	t.Helper()
	manifest = strings.NewReplacer("OLD", oldDigest, "NEW", newDigest).Replace(manifest)
	obj := new(T)
	if err := yaml.UnmarshalStrict([]byte(manifest), obj); err != nil {
		t.Fatalf("decoding %T: %v\n%s", obj, err, manifest)
	}
	return obj
}

func kustomization(t *testing.T, status string) *kustomizev1.Kustomization {
	return decode[kustomizev1.Kustomization](t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: core-cluster-api, namespace: capi-system, generation: 2}
spec:
  interval: 10m
  path: ./
  prune: true
  wait: true
  sourceRef: {kind: OCIRepository, name: core-cluster-api}
`+status)
}

func ociRepository(t *testing.T, status string) *sourcev1.OCIRepository {
	return decode[sourcev1.OCIRepository](t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: core-cluster-api, namespace: capi-system, generation: 3}
spec:
  interval: 10m
  url: oci://registry.example.com/cluster-api/manifests/core-cluster-api
  ref: {digest: NEW}
`+status)
}

func helmRelease(t *testing.T, status string) *helmv2.HelmRelease {
	return decode[helmv2.HelmRelease](t, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: addon-helm, namespace: caaph-system, generation: 1}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: addon-helm, namespace: caaph-system}
`+status)
}

// Kustomization statuses.
const (
	ksInstalled = `
status:
  observedGeneration: 2
  lastAppliedRevision: NEW
  lastAttemptedRevision: NEW
  inventory:
    entries:
    - {id: capi-system_capi-controller-manager_apps_Deployment, v: v1}
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: NEW", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 10.52s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// Every interval: the same revision re-applied and re-checked.
	ksRecheck = `
status:
  observedGeneration: 2
  lastAppliedRevision: NEW
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 2, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Fetching manifests for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 10.52s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// The same run, later: the health checks of NEW run again.
	ksRecheckHealth = `
status:
  observedGeneration: 2
  lastAppliedRevision: NEW
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 2, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:10:14Z"}
`
	// The source moved to NEW; the Kustomization (same generation) applies it.
	ksUpgrading = `
status:
  observedGeneration: 2
  lastAppliedRevision: OLD
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 2, lastTransitionTime: "2026-11-22T11:00:00Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T11:00:00Z"}
  - {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T11:00:03Z"}
`
	// First install whose health checks timed out: observedGeneration stays
	// behind (it advances only on success).
	ksHealthCheckFailed = `
status:
  observedGeneration: -1
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0.03s: timeout waiting for: [Deployment/capi-system/capi-controller-manager status: 'InProgress']", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:05:12Z"}
  - {type: Healthy, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0.03s: timeout waiting for: [Deployment/capi-system/capi-controller-manager status: 'InProgress']", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:05:12Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// A re-check of the installed revision that found it unhealthy.
	ksDegraded = `
status:
  observedGeneration: 2
  lastAppliedRevision: NEW
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0.01s: timeout waiting for: [Deployment/capi-system/capi-controller-manager status: 'InProgress']", observedGeneration: 2, lastTransitionTime: "2026-11-22T12:05:12Z"}
  - {type: Healthy, status: "False", reason: HealthCheckFailed, message: "health check failed", observedGeneration: 2, lastTransitionTime: "2026-11-22T12:05:12Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "Running health checks for revision NEW with a timeout of 5m0s", observedGeneration: 2, lastTransitionTime: "2026-11-22T12:00:12Z"}
`
	ksStalled = `
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: "False", reason: InvalidCELExpression, message: "terminal error: failed to create CEL status reader: undeclared reference to 'statu'", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: Stalled, status: "True", reason: InvalidCELExpression, message: "terminal error: failed to create CEL status reader: undeclared reference to 'statu'", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:01Z"}
`
	// Capwright changed the spec (generation 2); Flux still reports on 1.
	ksLagging = `
status:
  observedGeneration: 1
  lastAppliedRevision: NEW
  lastAttemptedRevision: NEW
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: NEW", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.2s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// Still on OLD: the source has not delivered NEW.
	ksAtOld = `
status:
  observedGeneration: 2
  lastAppliedRevision: OLD
  lastAttemptedRevision: OLD
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: OLD", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 2.1s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	ksArtifactFailed = `
status:
  observedGeneration: -1
  conditions:
  - {type: Ready, status: "False", reason: ArtifactFailed, message: "Source artifact not found, retrying in 30s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:01Z"}
`
)

// OCIRepository statuses.
const (
	repoReady = `
status:
  observedGeneration: 3
  url: http://source-controller.flux-system.svc.cluster.local./ocirepository/capi-system/core-cluster-api/2222.tar.gz
  artifact:
    digest: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    lastUpdateTime: "2026-11-22T10:00:02Z"
    path: ocirepository/capi-system/core-cluster-api/2222.tar.gz
    revision: NEW
    size: 187212
    url: http://source-controller.flux-system.svc.cluster.local./ocirepository/capi-system/core-cluster-api/2222.tar.gz
    metadata:
      org.opencontainers.image.title: core-cluster-api
      org.opencontainers.image.version: v1.14.2
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: "stored artifact for digest 'NEW'", observedGeneration: 3, lastTransitionTime: "2026-11-22T10:00:02Z"}
  - {type: ArtifactInStorage, status: "True", reason: Succeeded, message: "stored artifact for digest 'NEW'", observedGeneration: 3, lastTransitionTime: "2026-11-22T10:00:02Z"}
`
	// NEW cannot be verified; the old artifact is still served.
	repoVerifyFailed = `
status:
  observedGeneration: 2
  artifact:
    digest: sha256:4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce
    lastUpdateTime: "2026-11-20T09:00:00Z"
    path: ocirepository/capi-system/core-cluster-api/1111.tar.gz
    revision: OLD
    url: http://source-controller.flux-system.svc.cluster.local./ocirepository/capi-system/core-cluster-api/1111.tar.gz
  conditions:
  - {type: Ready, status: "False", reason: VerificationError, message: "failed to verify the signature using provider 'cosign': no matching signatures were found for 'registry.example.com/cluster-api/manifests/core-cluster-api@NEW'", observedGeneration: 3, lastTransitionTime: "2026-11-22T11:00:01Z"}
  - {type: SourceVerified, status: "False", reason: VerificationError, message: "failed to verify the signature using provider 'cosign': no matching signatures were found", observedGeneration: 3, lastTransitionTime: "2026-11-22T11:00:01Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "processing object: new generation 2 -> 3", observedGeneration: 3, lastTransitionTime: "2026-11-22T11:00:00Z"}
`
	repoStalled = `
status:
  observedGeneration: 3
  conditions:
  - {type: Ready, status: "False", reason: URLInvalid, message: "URL validation failed for 'oci://registry.example.com/Cluster-API': repository can only contain the characters 'abcdefghijklmnopqrstuvwxyz0123456789_-./'", observedGeneration: 3, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: Stalled, status: "True", reason: URLInvalid, message: "URL validation failed for 'oci://registry.example.com/Cluster-API': repository can only contain the characters 'abcdefghijklmnopqrstuvwxyz0123456789_-./'", observedGeneration: 3, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: FetchFailed, status: "True", reason: URLInvalid, message: "URL validation failed", observedGeneration: 3, lastTransitionTime: "2026-11-22T10:00:01Z"}
`
)

// HelmRelease statuses.
const (
	hrReleased = `
status:
  observedGeneration: 1
  lastAttemptedGeneration: 1
  lastAttemptedRevision: 0.4.1+222222222222
  lastAttemptedRevisionDigest: NEW
  lastAttemptedConfigDigest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
  storageNamespace: caaph-system
  history:
  - {apiVersion: v2, name: addon-helm, namespace: caaph-system, version: 2, status: deployed, action: upgrade, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.1+222222222222, appVersion: v0.4.1, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-22T10:00:00Z", ociDigest: NEW}
  - {apiVersion: v2, name: addon-helm, namespace: caaph-system, version: 1, status: superseded, action: install, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.0+111111111111, appVersion: v0.4.0, configDigest: "sha256:e3b0", digest: "sha256:bbbb", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-20T09:00:00Z", ociDigest: OLD}
  conditions:
  - {type: Ready, status: "True", reason: UpgradeSucceeded, message: "Helm upgrade succeeded for release caaph-system/addon-helm.v2 with chart cluster-api-addon-provider-helm@0.4.1+222222222222", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:30Z"}
  - {type: Released, status: "True", reason: UpgradeSucceeded, message: "Helm upgrade succeeded for release caaph-system/addon-helm.v2 with chart cluster-api-addon-provider-helm@0.4.1+222222222222", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:30Z"}
`
	// helm-controller's periodic check of its prerequisites.
	hrPrerequisites = `
status:
  observedGeneration: 1
  lastAttemptedRevisionDigest: NEW
  history:
  - {name: addon-helm, namespace: caaph-system, version: 2, status: deployed, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.1+222222222222, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-22T10:00:00Z", ociDigest: NEW}
  conditions:
  - {type: Ready, status: "True", reason: UpgradeSucceeded, message: "Helm upgrade succeeded for release caaph-system/addon-helm.v2 with chart cluster-api-addon-provider-helm@0.4.1+222222222222", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:30Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: Fulfilling prerequisites, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:30Z"}
`
	// The upgrade to NEW failed and was rolled back to OLD.
	hrRemediated = `
status:
  observedGeneration: 1
  lastAttemptedRevision: 0.4.1+222222222222
  lastAttemptedRevisionDigest: NEW
  installFailures: 0
  upgradeFailures: 1
  history:
  - {name: addon-helm, namespace: caaph-system, version: 3, status: deployed, action: rollback, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.0+111111111111, configDigest: "sha256:e3b0", digest: "sha256:cccc", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-22T10:06:00Z", ociDigest: OLD}
  - {name: addon-helm, namespace: caaph-system, version: 2, status: failed, action: upgrade, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.1+222222222222, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-22T10:00:00Z", ociDigest: NEW}
  - {name: addon-helm, namespace: caaph-system, version: 1, status: superseded, action: install, chartName: cluster-api-addon-provider-helm, chartVersion: 0.4.0+111111111111, configDigest: "sha256:e3b0", digest: "sha256:bbbb", firstDeployed: "2026-11-20T09:00:00Z", lastDeployed: "2026-11-20T09:00:00Z", ociDigest: OLD}
  conditions:
  - {type: Ready, status: "False", reason: RollbackSucceeded, message: "Helm rollback to previous release caaph-system/addon-helm.v1 with chart cluster-api-addon-provider-helm@0.4.0+111111111111 succeeded", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:06:00Z"}
  - {type: Released, status: "False", reason: UpgradeFailed, message: "Helm upgrade failed for release caaph-system/addon-helm with chart cluster-api-addon-provider-helm@0.4.1+222222222222: context deadline exceeded", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:05:00Z"}
  - {type: Remediated, status: "True", reason: RollbackSucceeded, message: "Helm rollback to previous release caaph-system/addon-helm.v1 with chart cluster-api-addon-provider-helm@0.4.0+111111111111 succeeded", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:06:00Z"}
`
)
