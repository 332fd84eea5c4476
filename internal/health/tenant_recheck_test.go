package health

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// One routine reconcile of a tenant's Kustomization (wait: true) that
// applied 1.4.2@NEW, as kustomize-controller v1.9 patches its status step
// by step (kustomization_controller.go reconcile and checkHealth).
const (
	tenantKSApplied = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: 1.4.2@NEW", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.52s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	tenantKSBuilding = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Building manifests for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.52s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	tenantKSDetectingDrift = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Detecting drift for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 3.52s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:00:12Z"}
`
	// checkHealth resets Healthy to Unknown while the checks run: nothing
	// on the object says any more that the last ones passed.
	tenantKSHealthCheck = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:13Z"}
`
	tenantKSHealthPassed = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 5.01s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:18Z"}
`
	// The re-check found the Deployment broken.
	tenantKSHealthFailed = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0s: timeout waiting for: [Deployment/platform/stack-app status: 'InProgress']", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:15:13Z"}
  - {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0s: timeout waiting for: [Deployment/platform/stack-app status: 'InProgress']", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:15:13Z"}
`
	// The next interval after a failed check, before the checks run again.
	tenantKSRecheckAfterFailure = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.2@NEW
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:20:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Detecting drift for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:20:12Z"}
  - {type: Healthy, status: "False", reason: HealthCheckFailed, message: "health check failed after 5m0s: timeout waiting for: [Deployment/platform/stack-app status: 'InProgress']", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:15:13Z"}
`
	// A new revision, applied and being health-checked for the first time.
	tenantKSNewRevisionHealthCheck = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.1@OLD
  lastAttemptedRevision: 1.4.2@NEW
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision 1.4.2@NEW with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:13Z"}
`
	// Re-checking the old revision: the Kustomization has not seen that
	// the source moved on.
	tenantKSOldHealthCheck = `
status:
  observedGeneration: 1
  lastAppliedRevision: 1.4.1@OLD
  lastAttemptedRevision: 1.4.1@OLD
  conditions:
  - {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress, observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision 1.4.1@OLD with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:12Z"}
  - {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision 1.4.1@OLD with a timeout of 5m0s", observedGeneration: 1, lastTransitionTime: "2026-11-22T10:10:13Z"}
`
)

const tenantKSName = "team-b-edge-7-0d1e2f3a"

// readyLine is the cluster's line after Flux installed revision with
// the tenant's Kustomization.
func readyLine(revision string) tenancyv1alpha1.TenantClusterStatus {
	return tenancyv1alpha1.TenantClusterStatus{
		Namespace: prodEU1.Namespace, Name: prodEU1.Name, Phase: tenancyv1alpha1.ClusterPhaseReady, Reason: tenancyv1alpha1.InstalledReason,
		AppliedRevision: revision, LastTransitionTime: tenantEarlier,
		FluxObject: &tenancyv1alpha1.FluxObjectReference{Kind: kustomizev1.KustomizationKind, Name: tenantKSName},
	}
}

// A Ready cluster stays Ready while Flux re-checks the health of what it
// installed, and only then; a failure or a new revision shows at once.
func TestFoldTenantHoldsReadyThroughHealthRecheck(t *testing.T) {
	ks := func(status string) Observation { return ObserveKustomization(tenantKustomization(t, status)) }
	source := ObserveOCIRepository(tenantRepo(t, "1", tenantRepoReady))
	installing := readyLine(tenantRevisionNew)
	installing.Phase, installing.Reason = tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason
	failed := readyLine(tenantRevisionNew)
	failed.Phase, failed.Reason = tenancyv1alpha1.ClusterPhaseFailed, "HealthCheckFailed"
	otherObject := readyLine(tenantRevisionNew)
	otherObject.FluxObject = &tenancyv1alpha1.FluxObjectReference{Kind: kustomizev1.KustomizationKind, Name: "team-b-edge-7-ffffffff"}
	newGeneration := ks(tenantKSHealthCheck)
	newGeneration.Generation = 2

	tests := []struct {
		name     string
		apply    Observation
		previous *tenancyv1alpha1.TenantClusterStatus
		phase    tenancyv1alpha1.ClusterPhase
		reason   string
	}{
		{"ready: health re-check of the installed revision", ks(tenantKSHealthCheck), ptr(readyLine(tenantRevisionNew)), tenancyv1alpha1.ClusterPhaseReady, tenancyv1alpha1.InstalledReason},
		{"ready: the line was Ready under the digest alone", ks(tenantKSHealthCheck), ptr(readyLine(newDigest)), tenancyv1alpha1.ClusterPhaseReady, tenancyv1alpha1.InstalledReason},
		{"installing: no line yet, so no passed check to remember", ks(tenantKSHealthCheck), nil, tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: the line was not Ready", ks(tenantKSHealthCheck), &installing, tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: a failed line is not turned Ready", ks(tenantKSHealthCheck), &failed, tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: Ready at another revision", ks(tenantKSHealthCheck), ptr(readyLine(tenantRevisionOld)), tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: Ready under another Flux object", ks(tenantKSHealthCheck), &otherObject, tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: a new revision's first health check", ks(tenantKSNewRevisionHealthCheck), ptr(readyLine(tenantRevisionOld)), tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: the old revision re-checked while the source holds a new one", ks(tenantKSOldHealthCheck), ptr(readyLine(tenantRevisionOld)), tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: a new generation of the Kustomization", newGeneration, ptr(readyLine(tenantRevisionNew)), tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"installing: the last check failed", ks(tenantKSRecheckAfterFailure), ptr(readyLine(tenantRevisionNew)), tenancyv1alpha1.ClusterPhaseInstalling, tenancyv1alpha1.InstallingReason},
		{"failed: the re-check found a failure", ks(tenantKSHealthFailed), ptr(readyLine(tenantRevisionNew)), tenancyv1alpha1.ClusterPhaseFailed, "HealthCheckFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := TenantInput{Generation: 1, Now: tenantNow, Clusters: []TenantClusterInput{{Cluster: prodEU1, Source: source, Apply: tt.apply}}}
			if tt.previous != nil {
				in.Previous = []tenancyv1alpha1.TenantClusterStatus{*tt.previous}
			}
			c := FoldTenant(in).Clusters[0]
			if c.Phase != tt.phase || c.Reason != tt.reason {
				t.Errorf("line = %s/%s (%q), want %s/%s", c.Phase, c.Reason, c.Message, tt.phase, tt.reason)
			}
		})
	}
}

// Every step of a routine reconcile of a Ready cluster's Kustomization
// leaves the tenant's status as it was: nothing to write.
func TestRoutineKustomizationReconcileChangesNoTenantStatus(t *testing.T) {
	source := ObserveOCIRepository(tenantRepo(t, "1", tenantRepoReady))
	fold := func(status string, previous []tenancyv1alpha1.TenantClusterStatus, now metav1.Time) TenantResult {
		apply := ObserveKustomization(tenantKustomization(t, status))
		return FoldTenant(TenantInput{Generation: 1, Now: now, Previous: previous,
			Clusters: []TenantClusterInput{{Cluster: prodEU1, Source: source, Apply: apply}}})
	}
	var status tenancyv1alpha1.TenantStatus
	SetTenantClusters(&status, fold(tenantKSApplied, nil, tenantEarlier))
	if status.ReadyClusters != 1 {
		t.Fatalf("installed: %+v", status.Clusters)
	}
	for _, step := range []struct{ name, status string }{
		{"fetching manifests", tenantKSRecheck},
		{"building", tenantKSBuilding},
		{"detecting drift", tenantKSDetectingDrift},
		{"running health checks", tenantKSHealthCheck},
		{"health checks passed", tenantKSHealthPassed},
		{"applied", tenantKSApplied},
	} {
		if SetTenantClusters(&status, fold(step.status, status.Clusters, tenantNow)) {
			t.Errorf("%s: the tenant's status changed: %+v", step.name, status.Clusters)
		}
	}
}

func ptr[T any](v T) *T { return &v }
