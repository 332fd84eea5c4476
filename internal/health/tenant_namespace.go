package health

import (
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A kustomize stack's target namespace is created by a Kustomization of
// its own (render.TenantNamespaceObjectName), which the controller writes
// before the stack's and the stack's only once it is Ready
// (TenantNamespaceCreated). Its state is part of the cluster's: while the
// stack waits for it the cluster is Installing, when it fails the cluster
// is Failed with its message, even while the stack is Ready.

// TenantNamespaceCreated tells whether the namespace Kustomization o
// created the target namespace for its current spec: the controller
// writes a cluster's stack Kustomization only then, so that its first
// apply finds the namespace.
func TenantNamespaceCreated(o Observation) bool {
	return o.Kind != "" && !o.Missing && o.settledReadiness().status == metav1.ConditionTrue
}

// namespaceReadiness is the readiness of the namespace Kustomization:
// True when there is none; Unknown while kustomize-controller has not
// seen the artifact Capwright stored for it yet (it reports "Source
// artifact not found" until its cache has the ExternalArtifact's status).
// An hourly re-check of a namespace that exists is never False, so it
// needs no holding as the stack's re-checks do: it only matters when it
// fails.
func namespaceReadiness(o Observation) readiness {
	if o.Kind == "" {
		return readiness{status: metav1.ConditionTrue, current: true}
	}
	r := o.settledReadiness()
	if r.status == metav1.ConditionFalse && r.reason == meta.ArtifactFailedReason && strings.Contains(r.message, "not found") {
		r.status = metav1.ConditionUnknown
	}
	return r
}

// namespaceHint explains kustomize-controller's "namespaces … not found":
// without a namespace Kustomization (a manager that serves no artifacts)
// nothing creates the target namespace; with one, the stack came before
// a new target namespace, or the namespace was deleted after it was
// created (TenantClusterNudge then has both run again).
func namespaceHint(c TenantClusterInput, r readiness) string {
	if !namespaceNotFound(c.Apply, r) {
		return ""
	}
	if c.Namespace.Kind == "" {
		return "; Flux does not create the target namespace of a Kustomization, and this Capwright manager serves no artifacts (it runs without --artifact-storage-path) to have Flux create it: " +
			"add a Namespace manifest to the artifact (kustomize renames it to spec.stack.targetNamespace), or run the manager with its artifact storage (Capwright's manifests and chart do)"
	}
	return "; spec.stack.targetNamespace changed and the stack reached the cluster before " + c.Namespace.ref() + " created the new namespace, or the namespace was deleted after it was created " +
		"(by hand, or pruned by Flux when a version of the artifact dropped the Namespace manifest an earlier one had): " +
		"Capwright asks Flux to create it, then to retry the stack"
}

func namespaceNotFound(o Observation, r readiness) bool {
	return o.Kind == kustomizev1.KustomizationKind && strings.Contains(r.message, `namespaces "`) && strings.Contains(r.message, "not found")
}

// externalArtifactHint explains kustomize-controller refusing the
// ExternalArtifact of the target namespace, which it reads only with its
// feature gate.
func externalArtifactHint(r readiness) string {
	if !strings.Contains(r.message, "ExternalArtifact feature gate is disabled") {
		return ""
	}
	return "; start kustomize-controller with --feature-gates=ExternalArtifact=true: Capwright hands Flux a kustomize stack's target namespace as an ExternalArtifact (docs/tenants.md)"
}

// Nudge is a reconcile Capwright asks of a Flux object
// (reconcile.fluxcd.io/requestedAt = Token). The token names the state
// it answers, so the same state asks once: a resync writes nothing.
type Nudge struct {
	Kind, Namespace, Name string
	Token                 string
}

// TenantClusterNudge tells whether kustomize-controller should reconcile
// one of a cluster's Kustomizations now rather than later, when the stack
// failed on a missing target namespace:
//   - the namespace Kustomization, when it has not run since the stack
//     failed (the namespace was deleted after it created it): it would
//     create it again only at its hourly interval. The token is the
//     stack's failure (kustomize-controller turns Ready Unknown and back
//     on every run, so each failed retry is a new transition);
//   - the stack, when the namespace Kustomization has run and created the
//     namespace since the stack failed (after the nudge above, or after
//     spec.stack.targetNamespace changed: the stack is written at once,
//     and its apply may come before the new namespace's): it would retry
//     only after its retryInterval. The token is that run of the
//     namespace Kustomization.
//
// Each state asks once; the nudges stop when the stack applies.
func TenantClusterNudge(c TenantClusterInput) (Nudge, bool) {
	if c.Namespace.Kind == "" || c.Namespace.Missing || c.Apply.Missing || c.Apply.Kind != kustomizev1.KustomizationKind {
		return Nudge{}, false
	}
	stackReady, nsReady := c.Apply.condition(meta.ReadyCondition), c.Namespace.condition(meta.ReadyCondition)
	if stackReady == nil || stackReady.Status != metav1.ConditionFalse || nsReady == nil || nsReady.Status != metav1.ConditionTrue ||
		c.Namespace.ObservedGeneration != c.Namespace.Generation || !namespaceNotFound(c.Apply, c.Apply.readiness()) {
		return Nudge{}, false
	}
	if nsReady.LastTransitionTime.Before(&stackReady.LastTransitionTime) {
		return Nudge{Kind: c.Namespace.Kind, Namespace: c.Namespace.Namespace, Name: c.Namespace.Name, Token: token(stackReady.LastTransitionTime)}, true
	}
	if stackReady.ObservedGeneration != c.Apply.Generation {
		return Nudge{}, false // the stack runs anyway, for its new spec
	}
	return Nudge{Kind: c.Apply.Kind, Namespace: c.Apply.Namespace, Name: c.Apply.Name, Token: token(nsReady.LastTransitionTime)}, true
}

func token(t metav1.Time) string { return t.UTC().Format(time.RFC3339Nano) }
