package health

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// notFoundReason is the readiness reason of a Flux object that does not
// exist.
const notFoundReason = "NotFound"

// readiness is a Flux object's Ready state for its current spec.
type readiness struct {
	status  metav1.ConditionStatus
	reason  string
	message string // names the object: "Kustomization ns/name: …"
	// current is set when Flux has reported on the object's current
	// generation (its Ready condition describes it).
	current bool
}

// readiness is the object's Ready state for its current generation, as
// Flux documents it: Ready True for status.observedGeneration ==
// metadata.generation and neither Reconciling nor Stalled. Stalled True is
// a terminal failure. Ready False for the current generation is a failure
// even while status.observedGeneration lags: kustomize-controller advances
// observedGeneration only on success.
func (o Observation) readiness() readiness {
	if o.Missing {
		return readiness{status: metav1.ConditionUnknown, reason: notFoundReason, message: o.ref() + " does not exist"}
	}
	if stalled := o.condition(meta.StalledCondition); stalled != nil && stalled.Status == metav1.ConditionTrue {
		return readiness{status: metav1.ConditionFalse, reason: stalled.Reason, message: o.ref() + ": " + fluxMessage(stalled.Message), current: true}
	}
	ready := o.condition(meta.ReadyCondition)
	if ready == nil {
		return readiness{status: metav1.ConditionUnknown, reason: meta.ProgressingReason,
			message: fmt.Sprintf("%s has not reported on generation %d yet", o.ref(), o.Generation)}
	}
	// While Flux works, Reconciling says what it is doing ("Running
	// health checks for revision … with a timeout of 5m0s"), more than
	// Ready Unknown's "Reconciliation in progress".
	reconciling := o.condition(meta.ReconcilingCondition)
	if reconciling != nil && reconciling.Status != metav1.ConditionTrue {
		reconciling = nil
	}
	switch {
	case ready.Status == metav1.ConditionFalse:
		return readiness{status: metav1.ConditionFalse, reason: ready.Reason, current: true,
			message: o.ref() + ": " + withHints(fluxMessage(ready.Message), o.verificationHint(ready.Reason))}
	case reconciling != nil:
		return readiness{status: metav1.ConditionUnknown, reason: reconciling.Reason, message: o.ref() + ": " + applyingStep(fluxMessage(reconciling.Message)), current: true}
	case ready.Status != metav1.ConditionTrue:
		return readiness{status: metav1.ConditionUnknown, reason: ready.Reason, message: o.ref() + ": " + fluxMessage(ready.Message), current: true}
	case o.ObservedGeneration != o.Generation:
		return readiness{status: metav1.ConditionUnknown, reason: meta.ProgressingReason, current: true,
			message: fmt.Sprintf("%s has not finished reconciling generation %d", o.ref(), o.Generation)}
	}
	return readiness{status: metav1.ConditionTrue, reason: ready.Reason, message: o.ref() + ": " + fluxMessage(ready.Message), current: true}
}

// fluxMessage is a Flux condition's message without the newline Flux
// leaves at the end of some (Helm's and kustomize's errors): whatever
// Capwright puts after it starts on the same line.
func fluxMessage(m string) string { return strings.TrimRightFunc(m, unicode.IsSpace) }

// applySteps are the steps kustomize-controller reports, one after the
// other within a second or two, before it runs the health checks.
var applySteps = []string{"Fetching manifests", "Building manifests", "Detecting drift"}

// applyingStep words kustomize-controller's short steps before the health
// checks ("Fetching manifests for revision …", "Building manifests …",
// "Detecting drift …") as one, "Applying manifests for revision …": what
// they say is no news to a provider or a tenant, and mirroring each would
// be a status write per step for every object Flux applies.
func applyingStep(message string) string {
	for _, step := range applySteps {
		if rest, ok := strings.CutPrefix(message, step); ok {
			return "Applying manifests" + rest
		}
	}
	return message
}

// settledReadiness is readiness, except that a routine re-reconcile of
// what the object already applied keeps counting as Ready.
//
// Flux reconciles every interval: kustomize-controller then marks Ready
// Unknown and Reconciling True while it re-applies and re-checks the same
// revision, helm-controller marks Reconciling True while it checks its
// prerequisites. Taken literally, every provider would flip to not Ready
// for a moment every interval (with events and alerts, and dependants
// waiting on a Ready core provider). It is held as Ready when the object
// has finished its current generation (observedGeneration), is attempting
// exactly the revision it last applied, and, where it reports health
// (a Kustomization with wait), its last health check passed. A failure
// found by the re-check turns Ready False, which is never held.
func (o Observation) settledReadiness() readiness {
	r := o.readiness()
	if r.status == metav1.ConditionUnknown && o.recheckingApplied() {
		return readiness{status: metav1.ConditionTrue, reason: r.reason, current: true,
			message: fmt.Sprintf("%s is re-checking revision %s, which it applied and found healthy", o.ref(), o.Revision)}
	}
	return r
}

// heldThroughRecheck is settledReadiness, also held as Ready while
// kustomize-controller runs the health checks of the revision it applied
// again, as it does on every run with wait: Ready and Healthy are Unknown
// until they pass. wasReady, the previous fold's record that the object
// was Ready at that revision, is then the only record that the last
// check passed: without it (a first install, a last check that failed)
// nothing is held. A failure the re-check finds shows at once.
func (o Observation) heldThroughRecheck(wasReady bool) readiness {
	r := o.settledReadiness()
	if r.status != metav1.ConditionUnknown || !o.rerunningHealthChecks() || !wasReady {
		return r
	}
	return readiness{status: metav1.ConditionTrue, reason: r.reason, current: true,
		message: fmt.Sprintf("%s is re-checking revision %s, which it applied and found healthy", o.ref(), o.Revision)}
}

// settled tells whether the object is Ready for its current spec or only
// re-checks what it holds: an applier re-checking the revision it applied
// and found healthy (settledReadiness), a source re-fetching after it
// produced the artifact of its current generation.
func (o Observation) settled() bool {
	if o.settledReadiness().status == metav1.ConditionTrue {
		return true
	}
	isSource := o.Kind == sourcev1.OCIRepositoryKind || o.Kind == sourcev1.ExternalArtifactKind
	return isSource && o.refetching()
}

// refetching tells whether a source that produced the artifact of its
// current generation is only fetching again: its artifact is still the
// current spec's. A source working on a new generation (a new version or
// range) is not: its artifact may be the old spec's.
func (o Observation) refetching() bool {
	r := o.readiness()
	return r.status == metav1.ConditionUnknown && r.current && !o.Missing && o.ObservedGeneration == o.Generation && o.Revision != ""
}

// rerunningHealthChecks tells whether kustomize-controller runs the health
// checks of the revision it applied again, for the object's current
// generation, and has found no failure yet.
func (o Observation) rerunningHealthChecks() bool {
	if o.Missing || o.ObservedGeneration != o.Generation || !sameRevision(o.Revision, o.LastAttemptedRevision) {
		return false
	}
	ready, rec, healthy := o.condition(meta.ReadyCondition), o.condition(meta.ReconcilingCondition), o.condition(meta.HealthyCondition)
	if ready == nil || ready.Status != metav1.ConditionUnknown || rec == nil || rec.Status != metav1.ConditionTrue ||
		healthy == nil || healthy.Status != metav1.ConditionUnknown {
		return false
	}
	stalled := o.condition(meta.StalledCondition)
	return stalled == nil || stalled.Status != metav1.ConditionTrue
}

func (o Observation) recheckingApplied() bool {
	ready := o.condition(meta.ReadyCondition)
	rec := o.condition(meta.ReconcilingCondition)
	if o.Missing || ready == nil || rec == nil || rec.Status != metav1.ConditionTrue ||
		o.ObservedGeneration != o.Generation || !sameRevision(o.Revision, o.LastAttemptedRevision) {
		return false
	}
	if stalled := o.condition(meta.StalledCondition); stalled != nil && stalled.Status == metav1.ConditionTrue {
		return false
	}
	healthy := o.condition(meta.HealthyCondition)
	switch ready.Status {
	case metav1.ConditionTrue:
		return healthy == nil || healthy.Status == metav1.ConditionTrue
	case metav1.ConditionUnknown:
		return healthy != nil && healthy.Status == metav1.ConditionTrue
	}
	return false
}

// condition returns a condition of the object's current generation; a
// condition another generation wrote does not describe the current spec.
func (o Observation) condition(t string) *metav1.Condition {
	c := apimeta.FindStatusCondition(o.Conditions, t)
	if c == nil || c.ObservedGeneration != o.Generation {
		return nil
	}
	return c
}

// ref names the object in messages: "Kustomization capi-system/core-cluster-api".
func (o Observation) ref() string {
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// sameRevision reports whether two Flux revisions name the same artifact.
// Capwright pins OCIRepositories by digest, for which Flux reports
// "sha256:<digest>", while the revision preflight checked reads
// "<tag>@sha256:<digest>"; the digest identifies the artifact in both.
func sameRevision(a, b string) bool {
	return a != "" && b != "" && revisionDigest(a) == revisionDigest(b)
}

func revisionDigest(revision string) string {
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		return revision[i+1:]
	}
	return revision
}

// finishingWindow bounds how long an applier may look Finishing: Flux's
// second write follows its first within milliseconds.
const finishingWindow = 5 * time.Second

// Finishing tells whether kustomize-controller is between the two writes
// that end a reconcile of a new revision: its patch helper writes the
// conditions (Ready True, Reconciling gone) before the other status fields
// (lastAppliedRevision), so for a moment the Kustomization is Ready while
// it still names the previous revision as applied. Folded, that moment is
// a status that is out of date a few milliseconds later ("has applied the
// old revision, not yet the new one"); the caller waits for the second
// write instead, which wakes it. A Ready that turned True more than
// finishingWindow before now is not that moment.
func (o Observation) Finishing(now time.Time) bool {
	if o.Kind != kustomizev1.KustomizationKind || o.Missing || o.LastAttemptedRevision == "" || sameRevision(o.Revision, o.LastAttemptedRevision) {
		return false
	}
	ready, rec := o.condition(meta.ReadyCondition), o.condition(meta.ReconcilingCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || (rec != nil && rec.Status == metav1.ConditionTrue) {
		return false
	}
	return now.Sub(ready.LastTransitionTime.Time) < finishingWindow
}
