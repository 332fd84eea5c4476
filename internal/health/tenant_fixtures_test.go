package health

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// A tenant's Flux objects on one cluster as the v2.9 controllers report
// them: the shared OCIRepository follows a tag (revision <tag>@<digest>),
// the HelmRelease or Kustomization installs through the Cluster's
// kubeconfig. OLD and NEW stand for two artifact digests (see decode).

const (
	tenantRevisionOld = "1.4.1@" + oldDigest
	tenantRevisionNew = "1.4.2@" + newDigest
)

func tenantRepo(t *testing.T, generation, status string) *sourcev1.OCIRepository {
	return decode[sourcev1.OCIRepository](t, tenantRepoManifest(generation, status))
}

func tenantRepoManifest(generation, status string) string {
	return `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: team-a-stack, namespace: tenant-team-a, generation: ` + generation + `}
spec:
  interval: 10m
  url: oci://ghcr.io/example/charts/platform-stack
  ref: {tag: 1.4.2}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
` + status
}

func tenantHelmRelease(t *testing.T, name, generation, status string) *helmv2.HelmRelease {
	return decode[helmv2.HelmRelease](t, tenantHelmReleaseManifest(name, generation, status))
}

func tenantHelmReleaseManifest(name, generation, status string) string {
	return `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: tenant-team-a, generation: ` + generation + `}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: team-a-stack, namespace: tenant-team-a}
  kubeConfig: {secretRef: {name: prod-eu-1-kubeconfig, key: value}}
  releaseName: team-a
  targetNamespace: team-a
  storageNamespace: team-a
  install: {createNamespace: true, remediation: {retries: -1}}
` + status
}

func tenantKustomization(t *testing.T, status string) *kustomizev1.Kustomization {
	return decode[kustomizev1.Kustomization](t, tenantKustomizationManifest(status))
}

func tenantKustomizationManifest(status string) string {
	return `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: team-b-edge-7-0d1e2f3a, namespace: team-b-clusters, generation: 1}
spec:
  interval: 10m
  path: ./
  prune: true
  wait: true
  targetNamespace: platform
  kubeConfig: {secretRef: {name: edge-7-kubeconfig, key: value}}
  sourceRef: {kind: OCIRepository, name: team-b-stack}
` + status
}

// OCIRepository statuses.
const (
	tenantRepoReady = `
status:
  observedGeneration: 1
  artifact:
    digest: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    lastUpdateTime: "2026-11-22T10:00:02Z"
    path: ocirepository/tenant-team-a/team-a-stack/2222.tar.gz
    revision: 1.4.2@NEW
    size: 18722
    url: http://source-controller.flux-system.svc.cluster.local./ocirepository/tenant-team-a/team-a-stack/2222.tar.gz
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: "stored artifact for digest '1.4.2@NEW'", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:02Z"}
  - {type: ArtifactInStorage, status: "True", reason: Succeeded, message: "stored artifact for digest '1.4.2@NEW'", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:02Z"}
`
	// Capwright changed the tag (generation 2); source-controller is
	// working on it and still serves the old version's artifact.
	tenantRepoNewGeneration = `
status:
  observedGeneration: 1
  artifact:
    digest: sha256:4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce
    lastUpdateTime: "2026-11-20T09:00:00Z"
    path: ocirepository/tenant-team-a/team-a-stack/1111.tar.gz
    revision: 1.4.1@OLD
    url: http://source-controller.flux-system.svc.cluster.local./ocirepository/tenant-team-a/team-a-stack/1111.tar.gz
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: "processing object: new generation 1 -> 2", observedGeneration: 2, lastTransitionTime: "2026-11-22T11:00:00Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "processing object: new generation 1 -> 2", observedGeneration: 2, lastTransitionTime: "2026-11-22T11:00:00Z"}
  - {type: ArtifactInStorage, status: "True", reason: Succeeded, message: "stored artifact for digest '1.4.1@OLD'", observedGeneration: 1, lastTransitionTime: "2026-11-20T09:00:00Z"}
`
	// The registry refused the credentials.
	tenantRepoPullFailed = `
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: OCIArtifactPullFailed, message: "failed to determine artifact digest: GET https://ghcr.io/v2/example/charts/platform-stack/manifests/1.4.2: UNAUTHORIZED: authentication required", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: FetchFailed, status: "True", reason: OCIArtifactPullFailed, message: "failed to determine artifact digest: UNAUTHORIZED: authentication required", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "reconciliation in progress", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:00Z"}
`
)

// HelmRelease statuses.
const (
	tenantHRInstalled = `
status:
  observedGeneration: 1
  lastAttemptedGeneration: 1
  lastAttemptedRevision: 1.4.2
  lastAttemptedRevisionDigest: NEW
  lastAttemptedConfigDigest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
  storageNamespace: team-a
  history:
  - {apiVersion: v2, name: team-a, namespace: team-a, version: 1, status: deployed, action: install, chartName: platform-stack, chartVersion: 1.4.2, appVersion: 1.4.2, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-22T10:00:05Z", lastDeployed: "2026-11-22T10:00:05Z", ociDigest: NEW}
  conditions:
  - {type: Ready, status: "True", reason: InstallSucceeded, message: "Helm install succeeded for release team-a/team-a.v1 with chart platform-stack@1.4.2", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:40Z"}
  - {type: Released, status: "True", reason: InstallSucceeded, message: "Helm install succeeded for release team-a/team-a.v1 with chart platform-stack@1.4.2", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:40Z"}
`
	// Still on the old chart; the source already serves the new one.
	tenantHRAtOld = `
status:
  observedGeneration: 1
  lastAttemptedRevisionDigest: OLD
  history:
  - {apiVersion: v2, name: team-a, namespace: team-a, version: 1, status: deployed, action: install, chartName: platform-stack, chartVersion: 1.4.1, configDigest: "sha256:e3b0", digest: "sha256:bbbb", firstDeployed: "2026-11-20T09:00:05Z", lastDeployed: "2026-11-20T09:00:05Z", ociDigest: OLD}
  conditions:
  - {type: Ready, status: "True", reason: InstallSucceeded, message: "Helm install succeeded for release team-a/team-a.v1 with chart platform-stack@1.4.1", observedGeneration: 1, lastTransitionTime: "2026-11-20T09:00:40Z"}
  - {type: Released, status: "True", reason: InstallSucceeded, message: "Helm install succeeded for release team-a/team-a.v1 with chart platform-stack@1.4.1", observedGeneration: 1, lastTransitionTime: "2026-11-20T09:00:40Z"}
`
	// The first install timed out: no CNI on the new cluster yet.
	tenantHRInstallFailed = `
status:
  observedGeneration: 1
  lastAttemptedGeneration: 1
  lastAttemptedRevision: 1.4.2
  lastAttemptedRevisionDigest: NEW
  installFailures: 1
  history:
  - {apiVersion: v2, name: team-a, namespace: team-a, version: 1, status: failed, action: install, chartName: platform-stack, chartVersion: 1.4.2, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-22T10:00:05Z", lastDeployed: "2026-11-22T10:00:05Z", ociDigest: NEW}
  conditions:
  - {type: Ready, status: "False", reason: InstallFailed, message: "Helm install failed for release team-a/team-a with chart platform-stack@1.4.2: context deadline exceeded", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:05:05Z"}
  - {type: Released, status: "False", reason: InstallFailed, message: "Helm install failed for release team-a/team-a with chart platform-stack@1.4.2: context deadline exceeded", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:05:05Z"}
`
	// helm-controller's periodic check of its prerequisites.
	tenantHRPrerequisites = `
status:
  observedGeneration: 1
  lastAttemptedRevisionDigest: NEW
  history:
  - {name: team-a, namespace: team-a, version: 1, status: deployed, chartName: platform-stack, chartVersion: 1.4.2, configDigest: "sha256:e3b0", digest: "sha256:aaaa", firstDeployed: "2026-11-22T10:00:05Z", lastDeployed: "2026-11-22T10:00:05Z", ociDigest: NEW}
  conditions:
  - {type: Ready, status: "True", reason: InstallSucceeded, message: "Helm install succeeded for release team-a/team-a.v1 with chart platform-stack@1.4.2", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:40Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: Fulfilling prerequisites, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:40Z"}
`
)

// Kustomization statuses.
const (
	// The artifact has no Namespace manifest and kustomize-controller does
	// not create the target namespace. kustomize-controller ends the
	// message of a failed apply with a newline (before the list of what
	// it did apply, empty here).
	tenantKSNamespaceMissing = `
status:
  observedGeneration: -1
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: "False", reason: ReconciliationFailed, message: "ConfigMap/platform/stack-config not found: namespaces \"platform\" not found\n", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "Detecting drift for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:10Z"}
`
	// Under Flux's lockdown: the workload cluster does not grant the
	// ServiceAccount kustomize-controller impersonates there (the message
	// Flux wrote on the plane's lockdown suite).
	tenantKSForbidden = `
status:
  observedGeneration: 1
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: "False", reason: ReconciliationFailed, message: "Namespace/platform dry-run failed (Forbidden): namespaces \"platform\" is forbidden: User \"system:serviceaccount:team-b-clusters:default\" cannot patch resource \"namespaces\" in API group \"\" in the namespace \"platform\"\n", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// Every interval: the applied revision re-applied and re-checked.
	tenantKSRecheck = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Fetching manifests for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.52s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
)

// The Kustomization creating a kustomize stack's target namespace
// (render.TenantNamespaceObjectName), as kustomize-controller v1.9.5
// reports on it, and the stack's Kustomization waiting for it.

// namespaceDigest is the digest of the namespace's artifact.
const namespaceDigest = "sha256:4444444444444444444444444444444444444444444444444444444444444444"

func namespaceKustomization(t *testing.T, status string) *kustomizev1.Kustomization {
	return decode[kustomizev1.Kustomization](t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: team-b-edge-7-0d1e2f3a-namespace, namespace: team-b-clusters, generation: 1}
spec:
  interval: 1h
  path: ./
  prune: false
  wait: true
  deletionPolicy: Orphan
  kubeConfig: {secretRef: {name: edge-7-kubeconfig, key: value}}
  sourceRef: {kind: ExternalArtifact, name: team-b-namespace}
`+strings.ReplaceAll(status, "NSDIGEST", namespaceDigest))
}

const (
	// Created the namespace and found it healthy.
	nsKSReady = `
status:
  observedGeneration: 1
  lastAppliedRevision: NSDIGEST
  lastAttemptedRevision: NSDIGEST
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: NSDIGEST", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:04Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 12ms", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:04Z"}
`
	// The hourly re-check: the namespace exists, so kustomize-controller
	// skips it (IfNotPresent) and has nothing to health-check.
	nsKSRecheck = `
status:
  observedGeneration: 1
  lastAppliedRevision: NSDIGEST
  lastAttemptedRevision: NSDIGEST
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T11:00:04Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Fetching manifests for revision NSDIGEST with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T11:00:04Z"}
`
	// Its first reconcile, before it applied anything.
	nsKSProgressing = `
status:
  observedGeneration: -1
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:02Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision NSDIGEST with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:02Z"}
`
	// kustomize-controller's cache does not hold the ExternalArtifact's
	// status yet.
	nsKSArtifactNotFound = `
status:
  observedGeneration: -1
  conditions:
  - {type: Ready, status: "False", reason: ArtifactFailed, message: "Source artifact not found, retrying in 30s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:01Z"}
`
	// Under Flux's lockdown, on a workload cluster that grants the
	// impersonated ServiceAccount nothing.
	nsKSForbidden = `
status:
  observedGeneration: -1
  lastAttemptedRevision: NSDIGEST
  conditions:
  - {type: Ready, status: "False", reason: ReconciliationFailed, message: "Namespace/platform dry-run failed (Forbidden): namespaces \"platform\" is forbidden: User \"system:serviceaccount:team-b-clusters:default\" cannot patch resource \"namespaces\" in API group \"\" in the namespace \"platform\"\n", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:03Z"}
`
	// kustomize-controller started without --feature-gates=ExternalArtifact=true.
	nsKSGateDisabled = `
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: AccessDenied, message: "can't access 'ExternalArtifact/team-b-clusters/team-b-namespace', ExternalArtifact feature gate is disabled", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:01Z"}
  - {type: Stalled, status: "True", reason: AccessDenied, message: "can't access 'ExternalArtifact/team-b-clusters/team-b-namespace', ExternalArtifact feature gate is disabled", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:01Z"}
`
)

// Stack Kustomization statuses beside the namespace's.
const (
	// Installed and healthy.
	tenantKSInstalled = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: 1.4.2@NEW", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.52s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
)
