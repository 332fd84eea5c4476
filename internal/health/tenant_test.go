package health

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

var (
	tenantNow     = metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	tenantEarlier = metav1.NewTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	prodEU1       = types.NamespacedName{Namespace: "tenant-team-a", Name: "prod-eu-1"}
)

const hrName = "team-a-prod-eu-1-5c0ffee5"

func TestFoldTenantCluster(t *testing.T) {
	const hrRef = "HelmRelease tenant-team-a/" + hrName
	repo := func(generation, status string) Observation {
		return ObserveOCIRepository(tenantRepo(t, generation, status))
	}
	hr := func(generation, status string) Observation {
		return ObserveHelmRelease(tenantHelmRelease(t, hrName, generation, status))
	}
	tests := []struct {
		name      string
		in        TenantClusterInput
		suspended bool
		phase     tenancyv1alpha1.ClusterPhase
		reason    string
		message   []string
		revision  string
	}{{
		name:     "ready: installed the source's revision and healthy",
		in:       TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRInstalled)},
		phase:    tenancyv1alpha1.ClusterPhaseReady,
		reason:   tenancyv1alpha1.InstalledReason,
		message:  []string{"Flux installed " + tenantRevisionNew, hrRef},
		revision: tenantRevisionNew,
	}, {
		name:     "ready while helm-controller checks its prerequisites",
		in:       TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRPrerequisites)},
		phase:    tenancyv1alpha1.ClusterPhaseReady,
		reason:   tenancyv1alpha1.InstalledReason,
		revision: tenantRevisionNew,
	}, {
		name:     "ready while a Kustomization re-checks what it applied",
		in:       TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: ObserveKustomization(tenantKustomization(t, tenantKSRecheck))},
		phase:    tenancyv1alpha1.ClusterPhaseReady,
		reason:   tenancyv1alpha1.InstalledReason,
		revision: tenantRevisionNew,
	}, {
		name:     "installing: the new chart has not reached the cluster yet",
		in:       TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRAtOld)},
		phase:    tenancyv1alpha1.ClusterPhaseInstalling,
		reason:   tenancyv1alpha1.InstallingReason,
		message:  []string{hrRef + " has applied " + oldDigest + ", not yet " + tenantRevisionNew},
		revision: oldDigest,
	}, {
		// The old artifact, applied everywhere, is not the new spec's: the
		// source has not finished its new generation.
		name:     "installing: the source works on a new version and still serves the old one",
		in:       TenantClusterInput{Source: repo("2", tenantRepoNewGeneration), Apply: hr("1", tenantHRAtOld)},
		phase:    tenancyv1alpha1.ClusterPhaseInstalling,
		reason:   tenancyv1alpha1.InstallingReason,
		message:  []string{"OCIRepository tenant-team-a/team-a-stack: processing object: new generation 1 -> 2"},
		revision: tenantRevisionOld,
	}, {
		name:    "installing: Flux has not reported on the new generation",
		in:      TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("2", tenantHRInstalled)},
		phase:   tenancyv1alpha1.ClusterPhaseInstalling,
		reason:  tenancyv1alpha1.InstallingReason,
		message: []string{hrRef + " has not reported on generation 2"},
	}, {
		name:    "installing: the HelmRelease is not written yet",
		in:      TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: Observation{Kind: "HelmRelease", Namespace: "tenant-team-a", Name: hrName, Missing: true}},
		phase:   tenancyv1alpha1.ClusterPhaseInstalling,
		reason:  tenancyv1alpha1.InstallingReason,
		message: []string{hrRef + " is not written yet"},
	}, {
		name:    "installing: no source in the namespace yet",
		in:      TenantClusterInput{Apply: hr("1", tenantHRInstalled)},
		phase:   tenancyv1alpha1.ClusterPhaseInstalling,
		reason:  tenancyv1alpha1.InstallingReason,
		message: []string{"OCIRepository in this namespace is not written yet"},
	}, {
		name:     "failed: the install timed out",
		in:       TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRInstallFailed)},
		phase:    tenancyv1alpha1.ClusterPhaseFailed,
		reason:   "InstallFailed",
		message:  []string{"Flux failed to install the stack: " + hrRef + ": Helm install failed for release team-a/team-a with chart platform-stack@1.4.2: context deadline exceeded"},
		revision: "",
	}, {
		name:    "failed: the source cannot pull the chart",
		in:      TenantClusterInput{Source: repo("1", tenantRepoPullFailed), Apply: hr("1", tenantHRAtOld)},
		phase:   tenancyv1alpha1.ClusterPhaseFailed,
		reason:  "OCIArtifactPullFailed",
		message: []string{"Flux cannot fetch the stack: OCIRepository tenant-team-a/team-a-stack: failed to determine artifact digest", "UNAUTHORIZED"},
	}, {
		name:  "failed: a Kustomization's target namespace does not exist",
		in:    TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: ObserveKustomization(tenantKustomization(t, tenantKSNamespaceMissing))},
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed",
		message: []string{`namespaces "platform" not found`, "add a Namespace manifest to the artifact"},
	}, {
		name:  "failed: the workload cluster does not grant the identity Flux impersonates",
		in:    TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: ObserveKustomization(tenantKustomization(t, tenantKSForbidden))},
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed",
		message: []string{`User "system:serviceaccount:team-b-clusters:default" cannot patch`, "grant that ServiceAccount what the stack installs on the workload cluster"},
	}, {
		name:  "failed: stalled",
		in:    TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: ObserveKustomization(kustomization(t, ksStalled))},
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "InvalidCELExpression",
		message: []string{"terminal error"},
	}, {
		name:  "failed: the name is taken by someone else's object",
		in:    TenantClusterInput{Conflict: "HelmRelease tenant-team-a/x exists and was not created by Capwright for Tenant team-a", Source: repo("1", tenantRepoReady)},
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: tenancyv1alpha1.NameConflictReason,
		message: []string{"was not created by Capwright"},
	}, {
		name: "pending: a paused cluster is Pending whatever Flux reported before",
		in: TenantClusterInput{PendingReason: tenancyv1alpha1.ClusterPausedReason, PendingMessage: "Cluster tenant-team-a/prod-eu-1 is paused",
			Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRInstallFailed)},
		phase: tenancyv1alpha1.ClusterPhasePending, reason: tenancyv1alpha1.ClusterPausedReason,
		message: []string{"is paused"},
	}, {
		name:      "suspended: what would be installing waits for the user",
		in:        TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("2", tenantHRInstalled)},
		suspended: true,
		phase:     tenancyv1alpha1.ClusterPhasePending, reason: tenancyv1alpha1.SuspendedReason,
		message: []string{"spec.suspend is true", "has not reported on generation 2"},
	}, {
		name:      "suspended: a failure stays a failure",
		in:        TenantClusterInput{Source: repo("1", tenantRepoReady), Apply: hr("1", tenantHRInstallFailed)},
		suspended: true,
		phase:     tenancyv1alpha1.ClusterPhaseFailed, reason: "InstallFailed",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Cluster = prodEU1
			res := FoldTenant(TenantInput{Generation: 4, Suspended: tt.suspended, Clusters: []TenantClusterInput{tt.in}, Now: tenantNow})
			if len(res.Clusters) != 1 {
				t.Fatalf("%d status lines", len(res.Clusters))
			}
			c := res.Clusters[0]
			if c.Namespace != "tenant-team-a" || c.Name != "prod-eu-1" || c.Phase != tt.phase || c.Reason != tt.reason {
				t.Errorf("line = %s/%s %s/%s (%q), want %s/%s", c.Namespace, c.Name, c.Phase, c.Reason, c.Message, tt.phase, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q lacks %q", c.Message, m)
				}
			}
			if tt.revision != "" && c.AppliedRevision != tt.revision {
				t.Errorf("applied revision = %q, want %q", c.AppliedRevision, tt.revision)
			}
			if !c.LastTransitionTime.Equal(&tenantNow) {
				t.Errorf("a new line's transition time = %v, want now", c.LastTransitionTime)
			}
			if tt.in.Apply.Kind != "" && (c.FluxObject == nil || c.FluxObject.Kind != tt.in.Apply.Kind || c.FluxObject.Name != tt.in.Apply.Name) {
				t.Errorf("fluxObject = %+v", c.FluxObject)
			}
			var n int32
			switch tt.phase {
			case tenancyv1alpha1.ClusterPhaseReady:
				n = res.Ready
			case tenancyv1alpha1.ClusterPhaseInstalling:
				n = res.Installing
			case tenancyv1alpha1.ClusterPhasePending:
				n = res.Pending
			case tenancyv1alpha1.ClusterPhaseFailed:
				n = res.Failed
			}
			if res.Total != 1 || n != 1 {
				t.Errorf("counts = %+v", res)
			}
		})
	}
}

// clusterInput is a cluster whose HelmRelease reports status.
func clusterInput(t *testing.T, name, status string) TenantClusterInput {
	ref := types.NamespacedName{Namespace: "tenant-team-a", Name: name}
	return TenantClusterInput{Cluster: ref,
		Source: ObserveOCIRepository(tenantRepo(t, "1", tenantRepoReady)),
		Apply:  ObserveHelmRelease(tenantHelmRelease(t, "team-a-"+name+"-5c0ffee5", "1", status))}
}

func TestFoldTenantOneBrokenCluster(t *testing.T) {
	previous := []tenancyv1alpha1.TenantClusterStatus{
		{Namespace: "tenant-team-a", Name: "a", Phase: tenancyv1alpha1.ClusterPhaseReady, LastTransitionTime: tenantEarlier},
		{Namespace: "tenant-team-a", Name: "b", Phase: tenancyv1alpha1.ClusterPhaseReady, LastTransitionTime: tenantEarlier},
		{Namespace: "tenant-team-a", Name: "c", Phase: tenancyv1alpha1.ClusterPhaseInstalling, LastTransitionTime: tenantEarlier},
		{Namespace: "tenant-team-a", Name: "gone", Phase: tenancyv1alpha1.ClusterPhaseReady, LastTransitionTime: tenantEarlier},
	}
	in := TenantInput{Generation: 4, Previous: previous, Now: tenantNow, Clusters: []TenantClusterInput{
		clusterInput(t, "c", tenantHRInstalled),
		clusterInput(t, "b", tenantHRInstallFailed),
		clusterInput(t, "a", tenantHRInstalled),
		{Cluster: types.NamespacedName{Namespace: "tenant-team-a", Name: "new"}, PendingReason: tenancyv1alpha1.ControlPlaneNotInitializedReason, PendingMessage: "not initialized"},
	}}
	res := FoldTenant(in)

	type line struct {
		name  string
		phase tenancyv1alpha1.ClusterPhase
		since metav1.Time
	}
	var got []line
	for _, c := range res.Clusters {
		got = append(got, line{c.Name, c.Phase, c.LastTransitionTime})
	}
	want := []line{
		{"a", tenancyv1alpha1.ClusterPhaseReady, tenantEarlier}, // unchanged: keeps its time
		{"b", tenancyv1alpha1.ClusterPhaseFailed, tenantNow},    // broke now, on its own line
		{"c", tenancyv1alpha1.ClusterPhaseReady, tenantNow},     // finished installing now
		{"new", tenancyv1alpha1.ClusterPhasePending, tenantNow}, // new line
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %+v, want %+v (sorted, gone dropped)", got, want)
	}
	if res.Total != 4 || res.Ready != 2 || res.Failed != 1 || res.Pending != 1 || res.Installing != 0 {
		t.Errorf("counts = %d total, %d ready, %d installing, %d pending, %d failed", res.Total, res.Ready, res.Installing, res.Pending, res.Failed)
	}
	c := res.ClustersReady
	if c.Type != "ClustersReady" || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ClustersFailedReason ||
		c.ObservedGeneration != 4 || !c.LastTransitionTime.Equal(&tenantNow) {
		t.Errorf("ClustersReady = %+v", c)
	}
	wantMsg := "2 of 4 clusters Ready, 1 Pending, 1 Failed. tenant-team-a/b Failed (InstallFailed): Flux failed to install the stack: " +
		"HelmRelease tenant-team-a/team-a-b-5c0ffee5: Helm install failed for release team-a/team-a with chart platform-stack@1.4.2: context deadline exceeded; " +
		"tenant-team-a/new Pending (ControlPlaneNotInitialized): not initialized"
	if c.Message != wantMsg {
		t.Errorf("ClustersReady message =\n%s\nwant\n%s", c.Message, wantMsg)
	}
}

func TestClustersReady(t *testing.T) {
	ready := clusterInput(t, "ready", tenantHRInstalled)
	installing := clusterInput(t, "installing", tenantHRAtOld)
	pending := TenantClusterInput{Cluster: types.NamespacedName{Namespace: "ns", Name: "pending"}, PendingReason: tenancyv1alpha1.ClusterPausedReason, PendingMessage: "paused"}
	many := []TenantClusterInput{ready}
	for i := range 7 {
		c := clusterInput(t, fmt.Sprintf("failed-%d", i), tenantHRInstallFailed)
		many = append(many, c)
	}
	tests := []struct {
		name     string
		clusters []TenantClusterInput
		missing  []string
		status   metav1.ConditionStatus
		reason   string
		message  []string
	}{
		{"no cluster selected", nil, nil, metav1.ConditionTrue, tenancyv1alpha1.NoClustersSelectedReason, []string{"no Cluster in the tenant's namespaces matches spec.clusters"}},
		{"only missing names", nil, []string{"prod-x"}, metav1.ConditionFalse, tenancyv1alpha1.ClustersNotFoundReason, []string{"spec.clusters.names lists prod-x, which exist in none"}},
		{"all ready", []TenantClusterInput{ready}, nil, metav1.ConditionTrue, tenancyv1alpha1.AllClustersReadyReason, []string{"the stack is Ready on all 1 clusters"}},
		{"ready but a named cluster is missing", []TenantClusterInput{ready}, []string{"prod-x", "prod-y"}, metav1.ConditionFalse, tenancyv1alpha1.ClustersNotFoundReason, []string{"1 of 1 clusters Ready; spec.clusters.names lists prod-x, prod-y"}},
		{"installing wins over pending", []TenantClusterInput{ready, pending, installing}, nil, metav1.ConditionFalse, tenancyv1alpha1.ClustersInstallingReason,
			[]string{"1 of 3 clusters Ready, 1 Installing, 1 Pending. tenant-team-a/installing Installing (Installing): ", "; ns/pending Pending (ClusterPaused): paused"}},
		{"pending only", []TenantClusterInput{ready, pending}, nil, metav1.ConditionFalse, tenancyv1alpha1.ClustersPendingReason, []string{"1 of 2 clusters Ready, 1 Pending. ns/pending"}},
		{"lists five, counts the rest", many, nil, metav1.ConditionFalse, tenancyv1alpha1.ClustersFailedReason, []string{"1 of 8 clusters Ready, 7 Failed", "failed-4 Failed", "; and 2 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := FoldTenant(TenantInput{Generation: 2, Clusters: tt.clusters, MissingNames: tt.missing, Now: tenantNow})
			c := res.ClustersReady
			if c.Status != tt.status || c.Reason != tt.reason || c.ObservedGeneration != 2 {
				t.Errorf("ClustersReady = %s/%s (%q), want %s/%s", c.Status, c.Reason, c.Message, tt.status, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q lacks %q", c.Message, m)
				}
			}
		})
	}
}

func TestFoldTenantBoundsMessages(t *testing.T) {
	long := strings.Repeat("é", 2000) // two bytes each: a cut may fall inside one
	res := FoldTenant(TenantInput{Now: tenantNow, Clusters: []TenantClusterInput{{Cluster: prodEU1, Conflict: long}}})
	m := res.Clusters[0].Message
	if len(m) > tenancyv1alpha1.MaxClusterMessageLength || !strings.HasSuffix(m, "…") || !utf8.ValidString(m) {
		t.Errorf("message of %d bytes (valid UTF-8: %v), want at most %d ending in …", len(m), utf8.ValidString(m), tenancyv1alpha1.MaxClusterMessageLength)
	}
}

// A resync that finds what the last one found writes nothing, also after
// the status went through the API server (times lose their sub-seconds and
// monotonic clock).
func TestSetTenantClustersNoOpResync(t *testing.T) {
	clusters := []TenantClusterInput{clusterInput(t, "a", tenantHRInstalled), clusterInput(t, "b", tenantHRInstallFailed)}
	now := metav1.NewTime(time.Now()) // with a monotonic clock and nanoseconds
	var status tenancyv1alpha1.TenantStatus
	if !SetTenantClusters(&status, FoldTenant(TenantInput{Generation: 1, Clusters: clusters, Now: now})) {
		t.Fatal("the first fold changed nothing")
	}
	if status.TotalClusters != 2 || status.ReadyClusters != 1 || status.FailedClusters != 1 || len(status.Conditions) != 1 {
		t.Errorf("status = %+v", status)
	}

	data, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	var stored tenancyv1alpha1.TenantStatus
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	later := metav1.NewTime(now.Add(10 * time.Minute))
	res := FoldTenant(TenantInput{Generation: 1, Clusters: clusters, Previous: stored.Clusters, Now: later})
	if SetTenantClusters(&stored, res) {
		t.Errorf("a resync that found nothing new changed the status: %+v", stored)
	}

	// A cluster that recovers is a change, and only its line moves.
	clusters[1] = clusterInput(t, "b", tenantHRInstalled)
	res = FoldTenant(TenantInput{Generation: 1, Clusters: clusters, Previous: stored.Clusters, Now: later})
	if !SetTenantClusters(&stored, res) {
		t.Fatal("a recovered cluster changed nothing")
	}
	if a, b := stored.Clusters[0], stored.Clusters[1]; a.LastTransitionTime.Equal(&later) || !b.LastTransitionTime.Equal(&later) ||
		stored.ReadyClusters != 2 || stored.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("after recovery: %+v", stored)
	}
}

func TestTenantSummary(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: typ + " says " + reason, ObservedGeneration: gen}
	}
	healthy := func() []metav1.Condition {
		return []metav1.Condition{
			cond(tenancyv1alpha1.ManagementReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, 5),
			cond(tenancyv1alpha1.ClustersReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.AllClustersReadyReason, 5),
			cond(tenancyv1alpha1.PausedCondition, metav1.ConditionFalse, tenancyv1alpha1.NotPausedReason, 5),
			cond(tenancyv1alpha1.DeletingCondition, metav1.ConditionFalse, tenancyv1alpha1.NotDeletingReason, 2),
		}
	}
	tests := []struct {
		name    string
		mutate  func([]metav1.Condition) []metav1.Condition
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"all good", func(c []metav1.Condition) []metav1.Condition { return c }, metav1.ConditionTrue, tenancyv1alpha1.SucceededReason, "the stack is Ready on every selected cluster"},
		{"a cluster failed", func(c []metav1.Condition) []metav1.Condition {
			c[1] = cond(tenancyv1alpha1.ClustersReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ClustersFailedReason, 5)
			return c
		}, metav1.ConditionFalse, tenancyv1alpha1.ClustersFailedReason, "ClustersReady: ClustersReady says ClustersFailed"},
		{"the namespace is taken", func(c []metav1.Condition) []metav1.Condition {
			c[0] = cond(tenancyv1alpha1.ManagementReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ObjectConflictReason, 5)
			c[1] = cond(tenancyv1alpha1.ClustersReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ClustersFailedReason, 5)
			return c
		}, metav1.ConditionFalse, tenancyv1alpha1.ObjectConflictReason, "ManagementReady:"},
		{"suspended", func(c []metav1.Condition) []metav1.Condition {
			c[2] = cond(tenancyv1alpha1.PausedCondition, metav1.ConditionTrue, tenancyv1alpha1.PausedReason, 5)
			return c
		}, metav1.ConditionFalse, tenancyv1alpha1.PausedReason, "Paused:"},
		{"clusters not folded for this generation", func(c []metav1.Condition) []metav1.Condition {
			c[1].ObservedGeneration = 4
			return c
		}, metav1.ConditionUnknown, tenancyv1alpha1.ReconcilingReason, "ClustersReady describes generation 4, not 5 yet"},
		{"nothing reported yet", func([]metav1.Condition) []metav1.Condition { return nil }, metav1.ConditionUnknown, tenancyv1alpha1.ReconcilingReason, "ManagementReady is not reported yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := TenantSummary(5, tt.mutate(healthy()), false, tenantNow)
			if c.Type != "Ready" || c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) ||
				c.ObservedGeneration != 5 || !c.LastTransitionTime.Equal(&tenantNow) {
				t.Errorf("Ready = %+v, want %s/%s with %q", c, tt.status, tt.reason, tt.message)
			}
		})
	}
}
