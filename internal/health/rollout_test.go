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
