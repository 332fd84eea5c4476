package health

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fluxcd/pkg/apis/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// ProviderInput is what the fold of one provider needs.
type ProviderInput struct {
	// Generation of the provider; every condition carries it.
	Generation int64
	// DesiredVersion is spec.version; PreviousInstalledVersion is
	// status.installedVersion before this fold.
	DesiredVersion           string
	PreviousInstalledVersion string
	// ExpectedRevision is the revision of the artifact preflight checked,
	// "<tag>@sha256:<digest>" or the bare digest; empty while none is.
	ExpectedRevision string
	// Suspended is spec.suspend: Flux applies nothing meanwhile.
	Suspended bool
	// Source is the OCIRepository, Apply the Kustomization or HelmRelease.
	Source, Apply Observation
	// AdditionalSource and AdditionalApply are the ExternalArtifact and
	// Kustomization of spec.additionalManifests (Kind empty without
	// them), and AdditionalRevision the revision of the artifact the
	// controller stored for them.
	AdditionalSource, AdditionalApply Observation
	AdditionalRevision                string
	// ApplyChanges are the changes kustomize-controller reported applying
	// for the Kustomization (none for a HelmRelease).
	ApplyChanges []FluxChange
	// PreviousFluxObjects is status.fluxObjects before this fold: an
	// object Flux is only re-checking keeps its entry.
	PreviousFluxObjects []v1alpha1.FluxObjectStatus
	// Now stamps transitions.
	Now metav1.Time
}

// ProviderResult is the fold's share of the provider status.
type ProviderResult struct {
	Installed, Available metav1.Condition
	InstalledVersion     string
	FluxObjects          []v1alpha1.FluxObjectStatus
}

// FoldProvider folds the source and applier observations into Installed,
// Available, the installed version and the Flux objects' readiness.
//
// Installed is True only when the applier applied the expected revision
// and is Ready for its current generation — with wait, that means its
// health checks passed — and only then does the installed version become
// the desired one. Available is True while the applier is Ready for its
// current generation: what Flux applied is healthy, whichever revision
// that is (the old version stays available while an upgrade has not
// started).
func FoldProvider(in ProviderInput) ProviderResult {
	res := ProviderResult{InstalledVersion: in.PreviousInstalledVersion}
	var installed bool
	res.Installed, installed = installedCondition(in)
	if installed && in.AdditionalApply.Kind != "" {
		res.Installed, installed = additionalInstalledCondition(in, res.Installed)
	}
	if installed {
		res.InstalledVersion = in.DesiredVersion
	}
	res.Available = availableCondition(in)
	for _, o := range []Observation{in.Source, in.Apply, in.AdditionalSource, in.AdditionalApply} {
		if o.Kind != "" {
			res.FluxObjects = append(res.FluxObjects, in.fluxObjectStatus(o))
		}
	}
	return res
}

// fluxObjectStatus is an object's entry in status.fluxObjects: its Ready
// condition for its current generation. Flux re-reconciles every object
// on its interval, marking it Reconciling (a Kustomization also Ready
// Unknown) while it re-fetches or re-applies what it already holds; the
// entry would flip and flip back with no news, a status write each time
// for every provider. While an object only re-checks — its settled
// readiness is True — its previous Ready entry stays as it was.
func (in ProviderInput) fluxObjectStatus(o Observation) v1alpha1.FluxObjectStatus {
	r := o.readiness()
	entry := v1alpha1.FluxObjectStatus{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, Ready: r.status, Reason: r.reason}
	if r.status == metav1.ConditionTrue || (!o.settled() && in.held(o).status != metav1.ConditionTrue) {
		return entry
	}
	if p := in.previous(o); p != nil {
		return *p
	}
	entry.Ready = metav1.ConditionTrue
	return entry
}

// previous is the object's Ready entry of the previous fold, nil if it
// was not Ready.
func (in ProviderInput) previous(o Observation) *v1alpha1.FluxObjectStatus {
	for i, p := range in.PreviousFluxObjects {
		if p.Kind == o.Kind && p.Name == o.Name && p.Namespace == o.Namespace && p.Ready == metav1.ConditionTrue {
			return &in.PreviousFluxObjects[i]
		}
	}
	return nil
}

// held is the applier's readiness, held through the health checks
// kustomize-controller runs again while the previous fold recorded it
// Ready (heldThroughRecheck).
func (in ProviderInput) held(o Observation) readiness {
	return o.heldThroughRecheck(in.previous(o) != nil)
}

// installedCondition is Installed, and whether the desired version is
// installed.
func installedCondition(in ProviderInput) (metav1.Condition, bool) {
	progress, doing := v1alpha1.InstallingReason, "Flux is applying "+in.DesiredVersion
	if prev := in.PreviousInstalledVersion; prev != "" {
		doing += " (installed: " + prev + ")"
		if prev != in.DesiredVersion {
			progress = v1alpha1.UpgradingReason
		}
	}
	cond := func(status metav1.ConditionStatus, reason, message string) (metav1.Condition, bool) {
		if in.Suspended && status != metav1.ConditionTrue {
			message += "; spec.suspend is true, so Flux applies nothing until it is unset"
		}
		return newCondition(in, v1alpha1.InstalledCondition, status, reason, message), status == metav1.ConditionTrue
	}
	if in.ExpectedRevision == "" {
		return cond(metav1.ConditionUnknown, progress,
			fmt.Sprintf("no artifact of %s is checked yet; Flux applies nothing before preflight passes", in.DesiredVersion))
	}

	apply, source := in.held(in.Apply), in.Source.readiness()
	atExpected := sameRevision(in.Apply.Revision, in.ExpectedRevision)
	switch {
	case in.Apply.Missing:
		return cond(metav1.ConditionUnknown, progress, doing+": "+apply.message)
	case apply.status == metav1.ConditionTrue && atExpected:
		return cond(metav1.ConditionTrue, v1alpha1.InstalledReason,
			fmt.Sprintf("Flux applied %s (%s) and its health checks passed (%s)", in.DesiredVersion, in.ExpectedRevision, in.Apply.ref()))
	// A source that cannot deliver the expected artifact explains the
	// applier's state (ArtifactFailed, or Ready at the old revision).
	case source.status == metav1.ConditionFalse && !sameRevision(in.Source.Revision, in.ExpectedRevision):
		return cond(metav1.ConditionFalse, v1alpha1.InstallFailedReason,
			fmt.Sprintf("Flux cannot fetch %s: %s", in.DesiredVersion, source.message))
	case in.Source.Missing:
		return cond(metav1.ConditionUnknown, progress, doing+": "+source.message)
	case in.waitingForSource(apply):
		return cond(metav1.ConditionUnknown, progress, doing+": "+source.message)
	case apply.status == metav1.ConditionFalse:
		return cond(metav1.ConditionFalse, v1alpha1.InstallFailedReason,
			fmt.Sprintf("Flux failed to apply %s: %s", in.DesiredVersion, withHints(apply.message, installerHint(apply.message))))
	case apply.status == metav1.ConditionTrue:
		// Ready, but at another revision: the new artifact has not
		// reached the applier yet.
		msg := fmt.Sprintf("%s: %s has applied %s, not yet %s", doing, in.Apply.ref(), orNothing(in.Apply.Revision), in.ExpectedRevision)
		if in.Source.Kind != "" {
			msg += "; " + source.message
		}
		return cond(metav1.ConditionFalse, progress, msg)
	case !apply.current:
		return cond(metav1.ConditionUnknown, progress, doing+": "+apply.message)
	}
	return cond(metav1.ConditionFalse, progress, doing+": "+apply.message)
}

// waitingForSource tells whether the applier only waits for its source's
// first artifact: Capwright writes the OCIRepository and the Kustomization
// together, and kustomize-controller, which may look first, reports
// "Source artifact not found" (Ready False, ArtifactFailed) until
// source-controller has fetched it. That is progress, not a failure,
// unless the source itself failed.
func (in ProviderInput) waitingForSource(apply readiness) bool {
	return apply.status == metav1.ConditionFalse && apply.reason == meta.ArtifactFailedReason &&
		in.Source.Kind != "" && in.Source.readiness().status != metav1.ConditionFalse
}

// additionalInstalledCondition is Installed once the components are: the
// additional manifests must be applied at the stored revision and healthy
// too.
func additionalInstalledCondition(in ProviderInput, components metav1.Condition) (metav1.Condition, bool) {
	progress := components.Reason
	if progress == v1alpha1.InstalledReason {
		progress = v1alpha1.InstallingReason
	}
	cond := func(status metav1.ConditionStatus, reason, message string) (metav1.Condition, bool) {
		return newCondition(in, v1alpha1.InstalledCondition, status, reason, message), status == metav1.ConditionTrue
	}
	apply := in.held(in.AdditionalApply)
	doing := fmt.Sprintf("%s is installed; Flux is applying its additional manifests", in.DesiredVersion)
	switch {
	case in.AdditionalRevision == "":
		return cond(metav1.ConditionUnknown, progress, doing+": their artifact is not stored yet")
	case in.AdditionalApply.Missing:
		return cond(metav1.ConditionUnknown, progress, doing+": "+apply.message)
	case apply.status == metav1.ConditionTrue && sameRevision(in.AdditionalApply.Revision, in.AdditionalRevision):
		return cond(metav1.ConditionTrue, v1alpha1.InstalledReason,
			fmt.Sprintf("%s; its additional manifests (%s, %s) are applied and healthy too", components.Message, in.AdditionalRevision, in.AdditionalApply.ref()))
	case apply.status == metav1.ConditionFalse:
		return cond(metav1.ConditionFalse, v1alpha1.InstallFailedReason,
			fmt.Sprintf("%s is installed, but Flux failed to apply its additional manifests: %s", in.DesiredVersion,
				withHints(apply.message, featureGateHint(apply.message), installerHint(apply.message))))
	}
	return cond(metav1.ConditionFalse, progress, doing+": "+apply.message)
}

// featureGateHint tells how to let kustomize-controller read an
// ExternalArtifact, which it refuses unless started with its feature gate.
func featureGateHint(message string) string {
	if !strings.Contains(message, "ExternalArtifact feature gate is disabled") {
		return ""
	}
	return "; start kustomize-controller with --feature-gates=ExternalArtifact=true (see docs/providers.md, \"Additional manifests\")"
}

// installerHint tells how to let a provider's installer write a kind its
// role does not list, when the API server refused it.
func installerHint(message string) string {
	if !strings.Contains(message, `is forbidden: User "system:serviceaccount:`) || !strings.Contains(message, `-installer" cannot`) {
		return ""
	}
	return `; the provider's installer ServiceAccount may not write that kind: grant it in a ClusterRole labelled providers.capwright.io/aggregate-to-installer: "true" (docs/security.md, "The provider installer")`
}

// availableCondition is Available: what Flux applied, components and
// additional manifests, is healthy.
func availableCondition(in ProviderInput) metav1.Condition {
	r := in.held(in.Apply)
	if r.status == metav1.ConditionTrue && in.AdditionalApply.Kind != "" {
		if extra := in.held(in.AdditionalApply); extra.status != metav1.ConditionTrue {
			return newCondition(in, v1alpha1.AvailableCondition, extra.status, v1alpha1.NotAvailableReason, extra.message)
		}
	}
	if in.waitingForSource(r) {
		return newCondition(in, v1alpha1.AvailableCondition, metav1.ConditionUnknown, v1alpha1.NotAvailableReason, r.message)
	}
	if r.status == metav1.ConditionTrue {
		// Worded from the revision, not from Flux's message, so a
		// routine re-check of that revision says the same.
		return newCondition(in, v1alpha1.AvailableCondition, metav1.ConditionTrue, v1alpha1.AvailableReason,
			fmt.Sprintf("%s has applied %s and its health checks passed", in.Apply.ref(), orNothing(in.Apply.Revision)))
	}
	return newCondition(in, v1alpha1.AvailableCondition, r.status, v1alpha1.NotAvailableReason, r.message)
}

func orNothing(revision string) string {
	if revision == "" {
		return "nothing"
	}
	return revision
}

// maxMessage is the API's limit on a condition message.
const maxMessage = 32768

func newCondition(in ProviderInput, t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	if len(message) > maxMessage {
		cut := maxMessage - len("…")
		for cut > 0 && !utf8.RuneStart(message[cut]) {
			cut--
		}
		message = message[:cut] + "…"
	}
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: in.Generation, LastTransitionTime: in.Now}
}

// Progress is how far Flux has got with the expected revision: the
// source holds it, the applier applied it (and runs its health checks),
// the applier found it healthy.
type Progress struct {
	SourceReady, Applied, Healthy bool
}

// InstallProgress reads from the observations how far Flux has got with
// in.ExpectedRevision, for the install timeline.
func InstallProgress(in ProviderInput) Progress {
	var p Progress
	if in.ExpectedRevision == "" {
		return p
	}
	src := in.Source.readiness()
	p.SourceReady = src.status == metav1.ConditionTrue && sameRevision(in.Source.Revision, in.ExpectedRevision)
	apply := in.Apply.settledReadiness()
	p.Healthy = apply.status == metav1.ConditionTrue && sameRevision(in.Apply.Revision, in.ExpectedRevision)
	// kustomize-controller marks Healthy Unknown ("Running health checks
	// for revision …") once it has applied the revision; helm-controller
	// reports nothing between the two.
	healthy := in.Apply.condition(meta.HealthyCondition)
	checking := healthy != nil && healthy.Status == metav1.ConditionUnknown && sameRevision(in.Apply.LastAttemptedRevision, in.ExpectedRevision)
	p.Applied = p.Healthy || checking
	return p
}
