package health

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFailedAttempt(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	notReady := func(kind, attempted string, observed int64) Observation {
		// Flux moves status.observedGeneration only on success.
		return Observation{Kind: kind, Name: "x", Namespace: "ns", Generation: 2, ObservedGeneration: 1, LastAttemptedRevision: attempted, AttemptedGeneration: observed,
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "UpgradeFailed", ObservedGeneration: observed}}}
	}
	pending := Observation{Kind: "OCIRepository", Name: "s", Namespace: "ns", Generation: 1, ObservedGeneration: 0,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: meta.ProgressingReason, ObservedGeneration: 1}}}
	ready := Observation{Kind: "OCIRepository", Name: "s", Namespace: "ns", Generation: 1, ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: 1}}}
	failedSource := Observation{Kind: "OCIRepository", Name: "s", Namespace: "ns", Generation: 1, ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "VerificationError", ObservedGeneration: 1}}}
	unreachable := func(message string) Observation {
		return Observation{Kind: "OCIRepository", Name: "s", Namespace: "ns", Generation: 1,
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "OCIArtifactPullFailed", Message: message, ObservedGeneration: 1}}}
	}
	for _, tt := range []struct {
		name          string
		apply, source Observation
		want          bool
	}{
		{"tried the artifact and failed", notReady("HelmRelease", digest, 2), ready, true},
		{"tried it as tag@digest", notReady("Kustomization", "v2@"+digest, 2), ready, true},
		{"waits for its source", notReady("HelmRelease", "", 2), pending, false},
		{"failed on the artifact before", notReady("Kustomization", "v1@sha256:2222222222222222222222222222222222222222222222222222222222222222", 2), ready, false},
		{"not yet at its generation", notReady("Kustomization", digest, 1), ready, false},
		{"the pinned source failed", notReady("Kustomization", "", 2), failedSource, true},
		{"a HelmRelease of a values change waiting for its new source", func() Observation {
			o := notReady("HelmRelease", digest, 2)
			o.AttemptedGeneration = 1
			return o
		}(), pending, false},
		// A registry outage as a rollout starts: the new revision's
		// pinned source cannot be pulled for now, which is no failure of
		// the revision (the soak found it counted as one, and the revision
		// rolled back for good).
		{"the pinned source cannot reach its registry", notReady("Kustomization", "", 2), unreachable("failed to pull artifact from 'oci://registry.example.com/stacks/team-a': Get \"https://registry.example.com/v2/\": dial tcp 10.0.0.7:443: connect: connection refused"), false},
		{"the pinned source's registry does not answer in time", notReady("HelmRelease", "", 2), unreachable("failed to pull artifact from 'oci://registry.example.com/stacks/team-a': Get \"https://registry.example.com/v2/\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)"), false},
		{"the pinned source's registry answers 503", notReady("Kustomization", "", 2), unreachable("failed to pull artifact from 'oci://registry.example.com/stacks/team-a': GET https://registry.example.com/v2/stacks/team-a/manifests/sha256:1111: unexpected status code 503 Service Unavailable"), false},
		{"the pinned digest is not in the registry", notReady("Kustomization", "", 2), unreachable("failed to pull artifact from 'oci://registry.example.com/stacks/team-a': GET https://registry.example.com/v2/stacks/team-a/manifests/sha256:1111: MANIFEST_UNKNOWN: manifest unknown"), true},
		{"a Kustomization of a substitution change waiting for its new source", func() Observation {
			o := notReady("Kustomization", digest, 2)
			o.Conditions[0].Reason = meta.ArtifactFailedReason
			return o
		}(), pending, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailedAttempt(tt.apply, tt.source, digest); got != tt.want {
				t.Errorf("FailedAttempt = %v, want %v", got, tt.want)
			}
		})
	}
}
