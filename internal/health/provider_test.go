package health

import (
	"reflect"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

var testNow = metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))

type want struct {
	status  metav1.ConditionStatus
	reason  string
	message []string // substrings
}

func (w want) check(t *testing.T, c metav1.Condition) {
	t.Helper()
	if c.Status != w.status || c.Reason != w.reason {
		t.Errorf("%s = %s/%s (%q), want %s/%s", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason)
	}
	for _, m := range w.message {
		if !strings.Contains(c.Message, m) {
			t.Errorf("%s message %q lacks %q", c.Type, c.Message, m)
		}
	}
	if c.ObservedGeneration != 7 || !c.LastTransitionTime.Equal(&testNow) {
		t.Errorf("%s carries generation %d at %v, want the provider's 7 at now", c.Type, c.ObservedGeneration, c.LastTransitionTime)
	}
}

func TestFoldProviderKustomization(t *testing.T) {
	const ks, repo = "Kustomization capi-system/core-cluster-api", "OCIRepository capi-system/core-cluster-api"
	tests := []struct {
		name          string
		source, apply Observation
		previous      string
		expected      string
		suspended     bool
		installed     want
		available     want
		version       string
	}{{
		name:   "installed: applied the expected revision and healthy",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksInstalled)),
		installed: want{"True", v1alpha1.InstalledReason, []string{"v1.14.2", newRevision, ks}},
		available: want{"True", v1alpha1.AvailableReason, []string{ks + " has applied " + newDigest + " and its health checks passed"}},
		version:   "v1.14.2",
	}, {
		name:   "installed, matched on the bare digest too",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksInstalled)),
		expected:  newDigest,
		installed: want{"True", v1alpha1.InstalledReason, nil},
		available: want{"True", v1alpha1.AvailableReason, nil},
		version:   "v1.14.2",
	}, {
		name:   "periodic re-check of the installed revision stays installed",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksRecheck)),
		previous:  "v1.14.2",
		installed: want{"True", v1alpha1.InstalledReason, nil},
		available: want{"True", v1alpha1.AvailableReason, []string{ks + " has applied " + newDigest + " and its health checks passed"}},
		version:   "v1.14.2",
	}, {
		name:   "upgrading: Flux applies the new revision",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksUpgrading)),
		previous:  "v1.13.6",
		installed: want{"False", v1alpha1.UpgradingReason, []string{"Flux is applying v1.14.2 (installed: v1.13.6): " + ks + ": Running health checks for revision " + newDigest}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{ks, "Running health checks"}},
		version:   "v1.13.6",
	}, {
		name:   "first install: health checks failed",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksHealthCheckFailed)),
		installed: want{"False", v1alpha1.InstallFailedReason, []string{"Flux failed to apply v1.14.2: " + ks + ": health check failed after 5m0.03s"}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{"timeout waiting for"}},
		version:   "",
	}, {
		name:   "installed revision degraded: health check of a re-check failed",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksDegraded)),
		previous:  "v1.14.2",
		installed: want{"False", v1alpha1.InstallFailedReason, []string{"Flux failed to apply v1.14.2", "health check failed"}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{ks + ": health check failed"}},
		version:   "v1.14.2",
	}, {
		name:   "stalled: terminal failure with Flux's message",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksStalled)),
		previous:  "v1.13.6",
		installed: want{"False", v1alpha1.InstallFailedReason, []string{ks + ": terminal error: failed to create CEL status reader"}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{"terminal error"}},
		version:   "v1.13.6",
	}, {
		name:   "Flux has not observed the new generation yet",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksLagging)),
		previous:  "v1.14.2",
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{ks + " has not reported on generation 2"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{"generation 2"}},
		version:   "v1.14.2",
	}, {
		name:   "the source cannot verify the new artifact: upgrade fails, old version available",
		source: ObserveOCIRepository(ociRepository(t, repoVerifyFailed)), apply: ObserveKustomization(kustomization(t, ksAtOld)),
		previous:  "v1.13.6",
		installed: want{"False", v1alpha1.InstallFailedReason, []string{"Flux cannot fetch v1.14.2: " + repo + ": failed to verify the signature"}},
		available: want{"True", v1alpha1.AvailableReason, []string{"has applied " + oldDigest}},
		version:   "v1.13.6",
	}, {
		name:   "the source is stalled",
		source: ObserveOCIRepository(ociRepository(t, repoStalled)), apply: ObserveKustomization(kustomization(t, ksArtifactFailed)),
		installed: want{"False", v1alpha1.InstallFailedReason, []string{"Flux cannot fetch v1.14.2: " + repo + ": URL validation failed"}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{"Source artifact not found"}},
	}, {
		name:   "the new artifact has not reached the Kustomization yet",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksAtOld)),
		previous:  "v1.13.6",
		installed: want{"False", v1alpha1.UpgradingReason, []string{ks + " has applied " + oldDigest + ", not yet " + newRevision}},
		available: want{"True", v1alpha1.AvailableReason, nil},
		version:   "v1.13.6",
	}, {
		name:   "Kustomization missing",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: Observation{Kind: "Kustomization", Namespace: "capi-system", Name: "core-cluster-api", Missing: true},
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{ks + " does not exist"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{ks + " does not exist"}},
	}, {
		name: "first install: the Kustomization looked before source-controller fetched the artifact",
		source: Observation{Kind: "OCIRepository", Namespace: "capi-system", Name: "core-cluster-api", Generation: 1,
			Conditions: []metav1.Condition{{Type: "Reconciling", Status: "True", Reason: "Progressing", Message: "building artifact: new revision", ObservedGeneration: 1},
				{Type: "Ready", Status: "Unknown", Reason: "Progressing", Message: "reconciliation in progress", ObservedGeneration: 1}}},
		apply:     ObserveKustomization(kustomization(t, ksArtifactFailed)),
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{repo + ": building artifact"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{"Source artifact not found"}},
	}, {
		name:   "OCIRepository missing",
		source: Observation{Kind: "OCIRepository", Namespace: "capi-system", Name: "core-cluster-api", Missing: true}, apply: ObserveKustomization(kustomization(t, ksArtifactFailed)),
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{repo + " does not exist"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{"Source artifact not found"}},
	}, {
		name:   "nothing checked yet",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksInstalled)),
		expected:  "-",
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{"no artifact of v1.14.2 is checked yet"}},
		available: want{"True", v1alpha1.AvailableReason, nil},
	}, {
		name:   "suspended mid-upgrade",
		source: ObserveOCIRepository(ociRepository(t, repoReady)), apply: ObserveKustomization(kustomization(t, ksAtOld)),
		previous: "v1.13.6", suspended: true,
		installed: want{"False", v1alpha1.UpgradingReason, []string{"spec.suspend is true"}},
		available: want{"True", v1alpha1.AvailableReason, nil},
		version:   "v1.13.6",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", PreviousInstalledVersion: tt.previous,
				ExpectedRevision: newRevision, Suspended: tt.suspended, Source: tt.source, Apply: tt.apply, Now: testNow}
			switch tt.expected {
			case "-":
				in.ExpectedRevision = ""
			case "":
			default:
				in.ExpectedRevision = tt.expected
			}
			res := FoldProvider(in)
			tt.installed.check(t, res.Installed)
			tt.available.check(t, res.Available)
			if res.InstalledVersion != tt.version {
				t.Errorf("installed version = %q, want %q", res.InstalledVersion, tt.version)
			}
			if res.Installed.Type != v1alpha1.InstalledCondition || res.Available.Type != v1alpha1.AvailableCondition {
				t.Errorf("condition types %s, %s", res.Installed.Type, res.Available.Type)
			}
		})
	}
}

func TestFoldProviderHelmRelease(t *testing.T) {
	const hr = "HelmRelease caaph-system/addon-helm"
	tests := []struct {
		name      string
		apply     string
		installed want
		available want
		version   string
	}{
		{"released", hrReleased, want{"True", v1alpha1.InstalledReason, []string{hr}}, want{"True", v1alpha1.AvailableReason, []string{hr + " has applied " + newDigest}}, "v0.4.1"},
		{"checking prerequisites", hrPrerequisites, want{"True", v1alpha1.InstalledReason, nil}, want{"True", v1alpha1.AvailableReason, nil}, "v0.4.1"},
		{"remediated by rollback", hrRemediated,
			want{"False", v1alpha1.InstallFailedReason, []string{hr + ": Helm rollback to previous release"}},
			want{"False", v1alpha1.NotAvailableReason, []string{"rollback"}}, "v0.4.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := FoldProvider(ProviderInput{Generation: 7, DesiredVersion: "v0.4.1", PreviousInstalledVersion: "v0.4.0",
				ExpectedRevision: "v0.4.1@" + newDigest, Now: testNow,
				Source: Observation{Kind: "OCIRepository", Namespace: "caaph-system", Name: "addon-helm", Generation: 1, ObservedGeneration: 1,
					Revision: newDigest, Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1}}},
				Apply: ObserveHelmRelease(helmRelease(t, tt.apply))})
			tt.installed.check(t, res.Installed)
			tt.available.check(t, res.Available)
			if res.InstalledVersion != tt.version {
				t.Errorf("installed version = %q, want %q", res.InstalledVersion, tt.version)
			}
		})
	}
}

func TestFluxObjects(t *testing.T) {
	res := FoldProvider(ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow,
		Source: ObserveOCIRepository(ociRepository(t, repoReady)),
		Apply:  ObserveKustomization(kustomization(t, ksLagging))})
	want := []v1alpha1.FluxObjectStatus{
		{Kind: "OCIRepository", Namespace: "capi-system", Name: "core-cluster-api", Ready: "True", Reason: "Succeeded"},
		{Kind: "Kustomization", Namespace: "capi-system", Name: "core-cluster-api", Ready: "Unknown", Reason: "Progressing"},
	}
	if len(res.FluxObjects) != 2 || res.FluxObjects[0] != want[0] || res.FluxObjects[1] != want[1] {
		t.Errorf("fluxObjects = %+v, want %+v", res.FluxObjects, want)
	}

	// A re-check with no entry to keep counts as Ready; a missing object
	// is Unknown.
	res = FoldProvider(ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow,
		Source: Observation{Kind: "OCIRepository", Namespace: "capi-system", Name: "core-cluster-api", Missing: true},
		Apply:  ObserveKustomization(kustomization(t, ksRecheck))})
	if got := res.FluxObjects[0]; got.Ready != "Unknown" || got.Reason != "NotFound" {
		t.Errorf("missing source = %+v", got)
	}
	if got := res.FluxObjects[1]; got.Ready != "True" || got.Reason != "Progressing" {
		t.Errorf("re-checking Kustomization = %+v", got)
	}
}

// Flux re-reconciles every object on its interval: the source re-fetches
// (Reconciling, Ready Unknown), the Kustomization re-applies and re-checks
// the same revision. None of it is news, so the fold must give exactly the
// status it gave before, and the controller writes nothing.
func TestRoutineReconcileOfFluxChangesNothing(t *testing.T) {
	repoRefetching := ObserveOCIRepository(ociRepository(t, repoReady))
	for i, c := range repoRefetching.Conditions {
		if c.Type == "Ready" {
			repoRefetching.Conditions[i].Status, repoRefetching.Conditions[i].Reason = "Unknown", "Progressing"
			repoRefetching.Conditions[i].Message = "reconciliation in progress"
		}
	}
	repoRefetching.Conditions = append(repoRefetching.Conditions, metav1.Condition{Type: "Reconciling", Status: "True", Reason: "Progressing",
		Message: "building artifact", ObservedGeneration: repoRefetching.Generation})
	in := ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", PreviousInstalledVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow,
		Source: ObserveOCIRepository(ociRepository(t, repoReady)), Apply: ObserveKustomization(kustomization(t, ksInstalled))}
	ready := FoldProvider(in)
	for _, step := range []struct {
		name          string
		source, apply Observation
	}{
		{"source re-fetching", repoRefetching, in.Apply},
		{"Kustomization re-applying", in.Source, ObserveKustomization(kustomization(t, ksRecheck))},
		{"both", repoRefetching, ObserveKustomization(kustomization(t, ksRecheck))},
		{"Kustomization re-running its health checks", in.Source, ObserveKustomization(kustomization(t, ksRecheckHealth))},
	} {
		t.Run(step.name, func(t *testing.T) {
			next := in
			next.Source, next.Apply, next.PreviousFluxObjects = step.source, step.apply, ready.FluxObjects
			next.Now = metav1.NewTime(testNow.Add(10 * time.Minute))
			got := FoldProvider(next)
			if !reflect.DeepEqual(got.FluxObjects, ready.FluxObjects) {
				t.Errorf("fluxObjects = %+v, want them kept as %+v", got.FluxObjects, ready.FluxObjects)
			}
			for _, pair := range [][2]metav1.Condition{{got.Installed, ready.Installed}, {got.Available, ready.Available}} {
				if pair[0].Status != pair[1].Status || pair[0].Reason != pair[1].Reason || pair[0].Message != pair[1].Message {
					t.Errorf("%s = %s %s %q, want %s %s %q", pair[0].Type, pair[0].Status, pair[0].Reason, pair[0].Message, pair[1].Status, pair[1].Reason, pair[1].Message)
				}
			}
		})
	}

	// A re-check after a failed one is not held: nothing records that the
	// revision was healthy.
	failed := in
	failed.Apply, failed.PreviousFluxObjects = ObserveKustomization(kustomization(t, ksRecheckHealth)),
		[]v1alpha1.FluxObjectStatus{ready.FluxObjects[0], {Kind: "Kustomization", Namespace: "capi-system", Name: "core-cluster-api", Ready: "False", Reason: "HealthCheckFailed"}}
	if got := FoldProvider(failed); got.Available.Status == metav1.ConditionTrue || got.FluxObjects[1].Ready == metav1.ConditionTrue {
		t.Errorf("a re-check after a failed check is held as Ready: Available %s, fluxObjects %+v", got.Available.Status, got.FluxObjects)
	}

	// A re-check that finds the applied revision unhealthy is news.
	next := in
	next.Apply, next.PreviousFluxObjects = ObserveKustomization(kustomization(t, ksHealthCheckFailed)), ready.FluxObjects
	if got := FoldProvider(next); reflect.DeepEqual(got.FluxObjects, ready.FluxObjects) || got.Available.Status == metav1.ConditionTrue {
		t.Errorf("a failed re-check kept fluxObjects %+v and Available %s", got.FluxObjects, got.Available.Status)
	}
}

func TestLongFluxMessagesAreCut(t *testing.T) {
	obs := ObserveKustomization(kustomization(t, ksHealthCheckFailed))
	for i := range obs.Conditions {
		obs.Conditions[i].Message = strings.Repeat("é", 20000)
	}
	res := FoldProvider(ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow, Apply: obs})
	if n := len(res.Installed.Message); n > maxMessage || !strings.HasSuffix(res.Installed.Message, "…") {
		t.Errorf("message of %d bytes, want at most %d ending in …", n, maxMessage)
	}
}

// The Kustomization of spec.additionalManifests as kustomize-controller
// v1.9.5 reports on it; ADDED stands for the stored artifact's digest.
const addedDigest = "sha256:3333333333333333333333333333333333333333333333333333333333333333"

func additionalKustomization(t *testing.T, status string) *kustomizev1.Kustomization {
	ks := kustomization(t, strings.ReplaceAll(status, "ADDED", addedDigest))
	ks.Name = "core-cluster-api-additional"
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "ExternalArtifact", Name: ks.Name}
	return ks
}

const (
	ksAdditionalApplied = `
status:
  observedGeneration: 2
  lastAppliedRevision: ADDED
  lastAttemptedRevision: ADDED
  conditions:
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: ADDED", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:01:12Z"}
  - {type: Healthy, status: "True", reason: Succeeded, message: "Health check passed in 1.02s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:01:12Z"}
`
	// kustomize-controller started without --feature-gates=ExternalArtifact=true.
	ksAdditionalGateDisabled = `
status:
  observedGeneration: -1
  conditions:
  - {type: Ready, status: "False", reason: AccessDenied, message: "can't access 'ExternalArtifact/capi-system/core-cluster-api-additional', ExternalArtifact feature gate is disabled", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:01:00Z"}
  - {type: Stalled, status: "True", reason: AccessDenied, message: "can't access 'ExternalArtifact/capi-system/core-cluster-api-additional', ExternalArtifact feature gate is disabled", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:01:00Z"}
`
	// The installer role does not list a kind of the manifests (the
	// message Flux wrote on the plane's lockdown suite).
	ksAdditionalForbidden = `
status:
  observedGeneration: 2
  lastAttemptedRevision: ADDED
  conditions:
  - {type: Ready, status: "False", reason: ReconciliationFailed, message: "PriorityClass/capi-critical dry-run failed (Forbidden): priorityclasses.scheduling.k8s.io \"capi-critical\" is forbidden: User \"system:serviceaccount:capi-system:core-cluster-api-installer\" cannot patch resource \"priorityclasses\" in API group \"scheduling.k8s.io\" at the cluster scope\n", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:01:00Z"}
`
	// Waiting for the provider's Kustomization (dependsOn).
	ksAdditionalWaiting = `
status:
  observedGeneration: -1
  conditions:
  - {type: Ready, status: "False", reason: DependencyNotReady, message: "Dependencies do not meet ready condition, retrying in 30s", observedGeneration: 2, lastTransitionTime: "2026-11-22T10:00:05Z"}
`
)

func TestFoldProviderAdditionalManifests(t *testing.T) {
	const extra = "Kustomization capi-system/core-cluster-api-additional"
	ea := Observation{Kind: "ExternalArtifact", Namespace: "capi-system", Name: "core-cluster-api-additional", Generation: 1, ObservedGeneration: 1,
		Revision: addedDigest, Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1}}}
	for _, tt := range []struct {
		name      string
		apply     Observation // the provider's Kustomization
		extra     Observation
		revision  string
		installed want
		available want
		version   string
	}{{
		name:  "components and additional manifests applied and healthy",
		apply: ObserveKustomization(kustomization(t, ksInstalled)), extra: ObserveKustomization(additionalKustomization(t, ksAdditionalApplied)), revision: addedDigest,
		installed: want{"True", v1alpha1.InstalledReason, []string{"Flux applied v1.14.2", "additional manifests (" + addedDigest + ", " + extra + ")"}},
		available: want{"True", v1alpha1.AvailableReason, nil},
		version:   "v1.14.2",
	}, {
		name:  "kustomize-controller without the ExternalArtifact feature gate",
		apply: ObserveKustomization(kustomization(t, ksInstalled)), extra: ObserveKustomization(additionalKustomization(t, ksAdditionalGateDisabled)), revision: addedDigest,
		installed: want{"False", v1alpha1.InstallFailedReason, []string{"v1.14.2 is installed, but Flux failed to apply its additional manifests", "feature gate is disabled", "--feature-gates=ExternalArtifact=true"}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{extra}},
	}, {
		name:  "a kind the installer role does not list",
		apply: ObserveKustomization(kustomization(t, ksInstalled)), extra: ObserveKustomization(additionalKustomization(t, ksAdditionalForbidden)), revision: addedDigest,
		installed: want{"False", v1alpha1.InstallFailedReason, []string{`"priorityclasses"`, "core-cluster-api-installer", `ClusterRole labelled providers.capwright.io/aggregate-to-installer: "true"`}},
		available: want{"False", v1alpha1.NotAvailableReason, []string{extra}},
	}, {
		name:  "the additional manifests wait for the components",
		apply: ObserveKustomization(kustomization(t, ksUpgrading)), extra: ObserveKustomization(additionalKustomization(t, ksAdditionalWaiting)), revision: addedDigest,
		installed: want{"False", v1alpha1.InstallingReason, []string{"Running health checks"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, nil},
	}, {
		name:  "an edit of the ConfigMap is not applied yet",
		apply: ObserveKustomization(kustomization(t, ksInstalled)), extra: ObserveKustomization(additionalKustomization(t, ksAdditionalApplied)), revision: newDigest,
		installed: want{"False", v1alpha1.InstallingReason, []string{"Flux is applying its additional manifests", extra}},
		available: want{"True", v1alpha1.AvailableReason, nil},
	}, {
		name:  "the artifact is not stored yet",
		apply: ObserveKustomization(kustomization(t, ksInstalled)), extra: Observation{Kind: "Kustomization", Namespace: "capi-system", Name: "core-cluster-api-additional", Missing: true},
		installed: want{"Unknown", v1alpha1.InstallingReason, []string{"their artifact is not stored yet"}},
		available: want{"Unknown", v1alpha1.NotAvailableReason, []string{extra + " does not exist"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			res := FoldProvider(ProviderInput{
				Generation: 7, DesiredVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow,
				Source: ObserveOCIRepository(ociRepository(t, repoReady)), Apply: tt.apply,
				AdditionalSource: ea, AdditionalApply: tt.extra, AdditionalRevision: tt.revision,
			})
			tt.installed.check(t, res.Installed)
			tt.available.check(t, res.Available)
			if res.InstalledVersion != tt.version {
				t.Errorf("installedVersion = %q, want %q", res.InstalledVersion, tt.version)
			}
			if len(res.FluxObjects) != 4 || res.FluxObjects[2].Kind != "ExternalArtifact" || res.FluxObjects[3].Name != "core-cluster-api-additional" {
				t.Errorf("fluxObjects = %+v, want the OCIRepository, Kustomization, ExternalArtifact and additional Kustomization", res.FluxObjects)
			}
		})
	}
}

// kustomize-controller's steps before the health checks follow each other
// within a second or two; the provider's status says the same through all
// of them, so they are not a status write each.
func TestApplyStepsAreOneMessage(t *testing.T) {
	var messages []string
	for _, step := range []string{"Fetching manifests", "Building manifests", "Detecting drift"} {
		obs := ObserveKustomization(kustomization(t, ksUpgrading))
		for i, c := range obs.Conditions {
			if c.Type == "Reconciling" {
				obs.Conditions[i].Message = step + " for revision " + newDigest + " with a timeout of 5m0s"
			}
		}
		obs.Conditions = obs.Conditions[:2] // Ready and Reconciling: no health check runs yet
		res := FoldProvider(ProviderInput{Generation: 7, DesiredVersion: "v1.14.2", PreviousInstalledVersion: "v1.13.6", ExpectedRevision: newRevision, Now: testNow,
			Source: ObserveOCIRepository(ociRepository(t, repoReady)), Apply: obs})
		messages = append(messages, res.Installed.Message)
	}
	if messages[0] != messages[1] || messages[1] != messages[2] || !strings.Contains(messages[0], "Applying manifests for revision "+newDigest) {
		t.Errorf("Installed messages differ by step or do not say what is applied:\n%s", strings.Join(messages, "\n"))
	}
}
