package health

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// ProviderInput is what the fold of one provider needs.
type ProviderInput struct {
	// Generation of the provider; every condition carries it.
	Generation               int64
	DesiredVersion           string
	PreviousInstalledVersion string
	// ExpectedRevision is the Flux revision of the artifact preflight
	// checked (sha256:… for the digest-pinned OCIRepository); empty when
	// none is checked yet.
	ExpectedRevision string
	Suspended        bool
	Source           Observation
	Apply            Observation
	Now              metav1.Time
}

// ProviderResult is the fold's share of the provider status.
type ProviderResult struct {
	Installed, Available metav1.Condition
	InstalledVersion     string
	FluxObjects          []v1alpha1.FluxObjectStatus
}

// FoldProvider folds the source and applier observations into Installed,
// Available and the installed version. The version counts as installed
// only when the applier applied the expected revision and is Ready for its
// generation, which with wait=true means its health checks passed.
func FoldProvider(in ProviderInput) ProviderResult {
	res := ProviderResult{InstalledVersion: in.PreviousInstalledVersion}
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: in.Generation, LastTransitionTime: in.Now}
	}
	apply := in.Apply.ready()
	atExpected := in.ExpectedRevision != "" && in.Apply.Revision == in.ExpectedRevision

	switch {
	case in.ExpectedRevision == "":
		res.Installed = cond(v1alpha1.InstalledCondition, metav1.ConditionUnknown, v1alpha1.ReconcilingReason, "waiting for preflight to check an artifact")
	case atExpected && apply.status == metav1.ConditionTrue:
		res.InstalledVersion = in.DesiredVersion
		res.Installed = cond(v1alpha1.InstalledCondition, metav1.ConditionTrue, v1alpha1.InstalledReason,
			fmt.Sprintf("Flux applied %s (%s) and its health checks passed", in.DesiredVersion, in.ExpectedRevision))
	case apply.status == metav1.ConditionFalse && !atExpected:
		res.Installed = cond(v1alpha1.InstalledCondition, metav1.ConditionFalse, v1alpha1.InstallFailedReason,
			fmt.Sprintf("Flux could not install %s: %s", in.DesiredVersion, apply.message))
	default:
		reason, what := v1alpha1.InstallingReason, fmt.Sprintf("Flux is installing %s", in.DesiredVersion)
		if in.PreviousInstalledVersion != "" && in.PreviousInstalledVersion != in.DesiredVersion {
			reason, what = v1alpha1.UpgradingReason, fmt.Sprintf("Flux is upgrading to %s (installed: %s)", in.DesiredVersion, in.PreviousInstalledVersion)
		}
		if atExpected && apply.status == metav1.ConditionFalse {
			// Applied, but the health checks of this revision fail now.
			res.InstalledVersion = in.DesiredVersion
			res.Installed = cond(v1alpha1.InstalledCondition, metav1.ConditionTrue, v1alpha1.InstalledReason,
				fmt.Sprintf("Flux applied %s (%s)", in.DesiredVersion, in.ExpectedRevision))
			break
		}
		res.Installed = cond(v1alpha1.InstalledCondition, metav1.ConditionFalse, reason, what+": "+apply.message)
	}

	switch {
	case in.Apply.Missing:
		res.Available = cond(v1alpha1.AvailableCondition, metav1.ConditionUnknown, v1alpha1.NotAvailableReason, apply.message)
	case apply.status == metav1.ConditionTrue && atExpected:
		res.Available = cond(v1alpha1.AvailableCondition, metav1.ConditionTrue, v1alpha1.AvailableReason, "everything Flux applied is healthy")
	case apply.status == metav1.ConditionTrue:
		res.Available = cond(v1alpha1.AvailableCondition, metav1.ConditionFalse, v1alpha1.NotAvailableReason,
			fmt.Sprintf("%s is healthy at %s, not yet at %s", in.Apply.ref(), in.Apply.Revision, in.ExpectedRevision))
	default:
		res.Available = cond(v1alpha1.AvailableCondition, apply.status, v1alpha1.NotAvailableReason, apply.message)
	}

	for _, o := range []Observation{in.Source, in.Apply} {
		if o.Kind == "" || o.Missing {
			continue
		}
		r := o.ready()
		res.FluxObjects = append(res.FluxObjects, v1alpha1.FluxObjectStatus{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, Ready: r.status, Reason: r.reason})
	}
	return res
}

// summaryOrder is the order in which a blocking condition explains Ready.
var summaryOrder = []struct {
	Type     string
	Positive bool
}{
	{v1alpha1.DeletingCondition, false},
	{v1alpha1.PausedCondition, false},
	{v1alpha1.ArtifactResolvedCondition, true},
	{v1alpha1.CompatibleCondition, true},
	{v1alpha1.InstalledCondition, true},
	{v1alpha1.AvailableCondition, true},
}

// Summary is the Ready condition: True when ArtifactResolved, Compatible,
// Installed and Available are True and Paused and Deleting are not; False
// with the first blocking condition's reason and message; Unknown when a
// condition is still Unknown and none blocks.
func Summary(generation int64, conds []metav1.Condition, now metav1.Time) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ReadyCondition, ObservedGeneration: generation, LastTransitionTime: now}
	var unknown *metav1.Condition
	for _, s := range summaryOrder {
		c := apimeta.FindStatusCondition(conds, s.Type)
		switch {
		case c == nil || c.Status == metav1.ConditionUnknown || c.ObservedGeneration != generation:
			if s.Positive && unknown == nil {
				unknown = &metav1.Condition{Reason: v1alpha1.ReconcilingReason, Message: s.Type + " is not known yet"}
				if c != nil && c.Message != "" {
					unknown.Message = s.Type + ": " + c.Message
				}
			}
		case s.Positive && c.Status == metav1.ConditionFalse, !s.Positive && c.Status == metav1.ConditionTrue:
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, s.Type+": "+c.Message
			return ready
		}
	}
	if unknown != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, unknown.Reason, unknown.Message
		return ready
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, v1alpha1.SucceededReason, "installed and available"
	return ready
}

// SetCondition sets c in conds, keeping lastTransitionTime when the status
// does not change; it reports whether anything changed, so an unchanged
// resync writes nothing.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	existing := apimeta.FindStatusCondition(*conds, c.Type)
	if existing != nil && existing.Status == c.Status && existing.Reason == c.Reason &&
		existing.Message == c.Message && existing.ObservedGeneration == c.ObservedGeneration {
		return false
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.Now()
	}
	if existing != nil && existing.Status == c.Status {
		c.LastTransitionTime = existing.LastTransitionTime
	}
	apimeta.SetStatusCondition(conds, c)
	return true
}
