package provider

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
)

// OwnedConditions are the conditions the provider controller sets besides
// Ready, Paused and Deleting; each starts Unknown so nothing claims Ready
// before it is.
var OwnedConditions = []string{
	v1alpha1.ArtifactResolvedCondition,
	v1alpha1.CompatibleCondition,
	v1alpha1.InstalledCondition,
	v1alpha1.AvailableCondition,
}

// Fold sets the provider's status from what the plan established, or
// why it refused (err), and, when the sync read them back (in is not
// nil), from the Flux objects' health: the one place a provider's status
// is set, at the end of every reconcile — suspended, refused, kept or
// written. It returns the health fold, nil when the Flux objects were not
// read.
func Fold(obj v1alpha1.Provider, d Desired, in *health.ProviderInput, err error) *health.ProviderResult {
	status := obj.GetStatus()
	if obj.GetSpec().Suspend {
		conditions.True(obj, v1alpha1.PausedCondition, v1alpha1.PausedReason, "spec.suspend is true: Capwright and Flux leave the installed provider as it is")
	} else {
		conditions.False(obj, v1alpha1.PausedCondition, v1alpha1.NotPausedReason, "")
	}
	if d.Status.LastAttemptedRevision != "" {
		status.LastAttemptedRevision = d.Status.LastAttemptedRevision
	}
	for _, c := range []*metav1.Condition{d.Status.ArtifactResolved, d.Status.Compatible} {
		if c != nil {
			conditions.Put(obj, *c)
		}
	}
	if d.Status.Artifact != nil {
		status.Contract, status.Artifact = d.Status.Contract, d.Status.Artifact
	}
	if refusal, refused := plan.AsRefusal(err); refused {
		conditions.Set(obj, refusal.Condition, refusal.Status, refusal.Reason, refusal.Message)
		if !refusal.Waits() && refusal.Condition == v1alpha1.ArtifactResolvedCondition {
			// For an artifact problem the compatibility is unknown.
			conditions.Unknown(obj, v1alpha1.CompatibleCondition, v1alpha1.ReconcilingReason, "waiting for the artifact to resolve")
		}
	} else if err != nil && !d.Suspend {
		// A write failed: nothing after it was written.
		conditions.False(obj, v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason, err.Error())
	}
	if in == nil {
		return nil
	}
	res := health.FoldProvider(*in)
	conditions.Put(obj, res.Installed)
	conditions.Put(obj, res.Available)
	if res.Installed.Status == metav1.ConditionTrue {
		// Flux re-applying the installed revision and changing objects
		// since it was installed: it put back what someone changed.
		since := conditions.Get(obj, v1alpha1.InstalledCondition).LastTransitionTime
		status.LastDriftCorrection = health.DriftCorrection(status.LastDriftCorrection, in.ApplyChanges, in.ExpectedRevision, since)
	}
	status.InstalledVersion = res.InstalledVersion
	status.FluxObjects = res.FluxObjects
	return &res
}

// Summarize sets observedGeneration and Ready from the other conditions.
func Summarize(obj v1alpha1.Provider, now metav1.Time) {
	obj.GetStatus().ObservedGeneration = obj.GetGeneration()
	conditions.Put(obj, health.Summary(obj.GetGeneration(), obj.GetConditions(), now))
}
