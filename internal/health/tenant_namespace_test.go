package health

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

const (
	stackRef     = "Kustomization team-b-clusters/team-b-edge-7-0d1e2f3a"
	namespaceRef = stackRef + "-namespace"
)

// The namespace Kustomization is part of the cluster's phase: until it is
// Ready the stack's Kustomization is not written and the cluster is
// Installing, its failure fails the cluster, and its routine re-checks
// change nothing.
func TestFoldTenantClusterWithItsNamespace(t *testing.T) {
	repo := ObserveOCIRepository(tenantRepo(t, "1", tenantRepoReady))
	stack := func(status string) Observation { return ObserveKustomization(tenantKustomization(t, status)) }
	ns := func(status string) Observation { return ObserveKustomization(namespaceKustomization(t, status)) }
	notWritten := Observation{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a", Missing: true}
	wasReady := &tenancyv1alpha1.TenantClusterStatus{Namespace: prodEU1.Namespace, Name: prodEU1.Name, Phase: tenancyv1alpha1.ClusterPhaseReady,
		Reason: tenancyv1alpha1.InstalledReason, AppliedRevision: tenantRevisionNew,
		FluxObject: &tenancyv1alpha1.FluxObjectReference{Kind: "Kustomization", Name: "team-b-edge-7-0d1e2f3a"}}
	tests := []struct {
		name     string
		apply    Observation
		ns       Observation
		previous *tenancyv1alpha1.TenantClusterStatus
		phase    tenancyv1alpha1.ClusterPhase
		reason   string
		message  []string
	}{{
		name: "ready: the namespace exists and the stack is installed", apply: stack(tenantKSInstalled), ns: ns(nsKSReady),
		phase: tenancyv1alpha1.ClusterPhaseReady, reason: tenancyv1alpha1.InstalledReason, message: []string{"Flux installed " + tenantRevisionNew},
	}, {
		name: "ready while the namespace Kustomization re-checks the namespace", apply: stack(tenantKSInstalled), ns: ns(nsKSRecheck), previous: wasReady,
		phase: tenancyv1alpha1.ClusterPhaseReady, reason: tenancyv1alpha1.InstalledReason,
	}, {
		name: "installing: the stack waits for the namespace to be created", apply: notWritten, ns: ns(nsKSProgressing),
		phase: tenancyv1alpha1.ClusterPhaseInstalling, reason: tenancyv1alpha1.InstallingReason,
		message: []string{stackRef + " is written once the target namespace exists: " + namespaceRef + ": Running health checks"},
	}, {
		name: "installing: the namespace exists, the stack is not written yet", apply: notWritten, ns: ns(nsKSReady),
		phase: tenancyv1alpha1.ClusterPhaseInstalling, reason: tenancyv1alpha1.InstallingReason, message: []string{stackRef + " is not written yet"},
	}, {
		// A first install is not held as Ready, whatever the line said.
		name: "installing: waiting on a first install", apply: notWritten, ns: ns(nsKSProgressing), previous: wasReady,
		phase: tenancyv1alpha1.ClusterPhaseInstalling, reason: tenancyv1alpha1.InstallingReason,
	}, {
		name: "installing: the namespace Kustomization is not written yet", apply: notWritten,
		ns:    Observation{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a-namespace", Missing: true},
		phase: tenancyv1alpha1.ClusterPhaseInstalling, reason: tenancyv1alpha1.InstallingReason, message: []string{namespaceRef + " does not exist"},
	}, {
		name: "installing: kustomize-controller has not seen the stored artifact yet", apply: notWritten, ns: ns(nsKSArtifactNotFound),
		phase: tenancyv1alpha1.ClusterPhaseInstalling, reason: tenancyv1alpha1.InstallingReason, message: []string{"Source artifact not found"},
	}, {
		name: "failed: the identity Flux impersonates may not create the namespace", apply: notWritten, ns: ns(nsKSForbidden),
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed",
		message: []string{"Flux failed to create the target namespace: " + namespaceRef, `in the namespace "platform"; Flux applies the stack on the workload cluster as that ServiceAccount`,
			"grant that ServiceAccount what the stack installs on the workload cluster"},
	}, {
		name: "failed: the namespace's re-check fails while the stack is still Ready", apply: stack(tenantKSInstalled), ns: ns(nsKSForbidden), previous: wasReady,
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed", message: []string{"Flux failed to create the target namespace"},
	}, {
		name: "failed: kustomize-controller does not read ExternalArtifacts", apply: notWritten, ns: ns(nsKSGateDisabled),
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "AccessDenied", message: []string{"feature gate is disabled; start kustomize-controller with --feature-gates=ExternalArtifact=true"},
	}, {
		name: "failed: the namespace is missing (moved, or deleted after it was created)", apply: stack(tenantKSNamespaceMissing), ns: ns(nsKSReady),
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed",
		message: []string{`namespaces "platform" not found; spec.stack.targetNamespace changed and the stack reached the cluster before ` + namespaceRef + " created the new namespace, or the namespace was deleted after it was created", "Capwright asks Flux to create it, then to retry the stack"},
	}, {
		name: "failed: without a namespace Kustomization the artifact must carry the namespace", apply: stack(tenantKSNamespaceMissing),
		phase: tenancyv1alpha1.ClusterPhaseFailed, reason: "ReconciliationFailed",
		message: []string{"add a Namespace manifest to the artifact", "--artifact-storage-path"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var previous []tenancyv1alpha1.TenantClusterStatus
			if tt.previous != nil {
				previous = append(previous, *tt.previous)
			}
			res := FoldTenant(TenantInput{Generation: 1, Now: tenantNow, Previous: previous,
				Clusters: []TenantClusterInput{{Cluster: prodEU1, Source: repo, Apply: tt.apply, Namespace: tt.ns}}})
			c := res.Clusters[0]
			if c.Phase != tt.phase || c.Reason != tt.reason {
				t.Errorf("line = %s/%s (%q), want %s/%s", c.Phase, c.Reason, c.Message, tt.phase, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q lacks %q", c.Message, m)
				}
			}
			if c.FluxObject == nil || c.FluxObject.Name != "team-b-edge-7-0d1e2f3a" {
				t.Errorf("fluxObject = %+v, want the stack's Kustomization", c.FluxObject)
			}
		})
	}
}

func TestTenantClusterNudge(t *testing.T) {
	stack := func(status string) Observation { return ObserveKustomization(tenantKustomization(t, status)) }
	ns := func(status string) Observation { return ObserveKustomization(namespaceKustomization(t, status)) }
	ranAt := func(at metav1.Time) Observation {
		o := ns(nsKSReady)
		o.Conditions[0].LastTransitionTime = at
		return o
	}
	stackFailedAt := stack(tenantKSNamespaceMissing).Conditions[0].LastTransitionTime
	notWritten := Observation{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a", Missing: true}
	nudgeStack := Nudge{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a", Token: "2026-11-22T12:00:00Z"}
	tests := []struct {
		name  string
		in    TenantClusterInput
		want  Nudge
		nudge bool
	}{{
		// Written once the namespace Kustomization is Ready: no request.
		name: "the stack is not written yet", in: TenantClusterInput{Apply: notWritten, Namespace: ns(nsKSReady)},
	}, {
		name: "the namespace failed", in: TenantClusterInput{Apply: stack(tenantKSForbidden), Namespace: ns(nsKSForbidden)},
	}, {
		name: "the stack found the namespace gone after it was created", in: TenantClusterInput{Apply: stack(tenantKSNamespaceMissing), Namespace: ns(nsKSReady)},
		want:  Nudge{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a-namespace", Token: "2026-11-22T10:00:12Z"},
		nudge: true,
	}, {
		// After the nudge above, or after spec.stack.targetNamespace
		// changed and the stack's apply came first: the stack would wait
		// out its retryInterval.
		name: "the namespace Kustomization ran since the stack failed", in: TenantClusterInput{Apply: stack(tenantKSNamespaceMissing), Namespace: ranAt(tenantNow)},
		want: nudgeStack, nudge: true,
	}, {
		// metav1.Time has seconds: the same second cannot be ordered, and
		// asking the stack again costs one retry.
		name: "the namespace Kustomization ran in the second the stack failed", in: TenantClusterInput{Apply: stack(tenantKSNamespaceMissing), Namespace: ranAt(stackFailedAt)},
		want: Nudge{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a", Token: "2026-11-22T10:00:12Z"}, nudge: true,
	}, {
		name: "the stack's spec changed since it failed", in: TenantClusterInput{Apply: func() Observation {
			o := stack(tenantKSNamespaceMissing)
			o.Generation = 2
			return o
		}(), Namespace: ranAt(tenantNow)},
	}, {
		name: "the namespace Kustomization is running", in: TenantClusterInput{Apply: stack(tenantKSNamespaceMissing), Namespace: ns(nsKSProgressing)},
	}, {
		name: "installed: nothing to ask", in: TenantClusterInput{Apply: stack(tenantKSInstalled), Namespace: ns(nsKSReady)},
	}, {
		name: "another failure of the stack", in: TenantClusterInput{Apply: stack(tenantKSForbidden), Namespace: ranAt(tenantNow)},
	}, {
		name: "no namespace Kustomization", in: TenantClusterInput{Apply: stack(tenantKSNamespaceMissing)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TenantClusterNudge(tt.in)
			if ok != tt.nudge || got != tt.want {
				t.Errorf("nudge = %+v, %v; want %+v, %v", got, ok, tt.want, tt.nudge)
			}
		})
	}
}

// The controller writes a cluster's stack Kustomization only once the
// namespace exists: the namespace Kustomization is Ready for its current
// spec, or only re-checks what it applied.
func TestTenantNamespaceCreated(t *testing.T) {
	ns := func(status string) Observation { return ObserveKustomization(namespaceKustomization(t, status)) }
	for _, tt := range []struct {
		name    string
		ns      Observation
		created bool
	}{
		{"ready", ns(nsKSReady), true},
		{"re-checking the namespace it created", ns(nsKSRecheck), false},
		{"first reconcile", ns(nsKSProgressing), false},
		{"artifact not seen yet", ns(nsKSArtifactNotFound), false},
		{"forbidden", ns(nsKSForbidden), false},
		{"not written", Observation{Kind: "Kustomization", Namespace: "team-b-clusters", Name: "team-b-edge-7-0d1e2f3a-namespace", Missing: true}, false},
		{"none rendered", Observation{}, false},
	} {
		if got := TenantNamespaceCreated(tt.ns); got != tt.created {
			t.Errorf("%s: TenantNamespaceCreated = %v, want %v", tt.name, got, tt.created)
		}
	}
}
