package health

import (
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// A kustomize stack's target namespace is created by a Kustomization of
// its own, which the stack's Kustomization depends on
// (render.TenantNamespaceObjectName). Its state is part of the cluster's:
// while the stack waits for it the cluster is Installing, when it fails
// the cluster is Failed with its message, even while the stack is Ready.

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

// waitsForNamespace tells whether the stack's Kustomization only waits
// for the namespace Kustomization it depends on: kustomize-controller
// reports that as Ready False, reason DependencyNotReady, and looks again
// after --requeue-dependency.
func waitsForNamespace(c TenantClusterInput, apply readiness) bool {
	return c.Namespace.Kind != "" && apply.status == metav1.ConditionFalse && apply.reason == meta.DependencyNotReadyReason
}

// waitingAfterInstalled tells whether a stack that waits for its
// namespace Kustomization had installed its current spec before: the
// stack's routine reconcile found the namespace Kustomization in the
// middle of its own (hourly) one. The cluster's line stays Ready then,
// as for the stack's own re-checks (recheckingInstalled): nothing changed
// on the cluster, and a thousand clusters must not flip to Installing
// and back for it.
func waitingAfterInstalled(o Observation, previous *tenancyv1alpha1.TenantClusterStatus) bool {
	if previous == nil || previous.Phase != tenancyv1alpha1.ClusterPhaseReady || previous.FluxObject == nil ||
		previous.FluxObject.Kind != o.Kind || previous.FluxObject.Name != o.Name {
		return false
	}
	return o.ObservedGeneration == o.Generation && sameRevision(o.Revision, previous.AppliedRevision)
}

// namespaceHint explains kustomize-controller's "namespaces … not found":
// without a namespace Kustomization (a manager that serves no artifacts)
// nothing creates the target namespace; with one, the namespace was
// deleted after it was created.
func namespaceHint(c TenantClusterInput, r readiness) string {
	if !namespaceNotFound(c.Apply, r) {
		return ""
	}
	if c.Namespace.Kind == "" {
		return "; Flux does not create the target namespace of a Kustomization, and this Capwright manager serves no artifacts (it runs without --artifact-storage-path) to have Flux create it: " +
			"add a Namespace manifest to the artifact (kustomize renames it to spec.stack.targetNamespace), or run the manager with its artifact storage (Capwright's manifests and chart do)"
	}
	return "; the namespace was deleted after " + c.Namespace.ref() + " created it (by hand, or pruned by Flux when a version of the artifact dropped the Namespace manifest an earlier one had): " +
		"Capwright asks Flux to create it again, and the stack is retried within a minute"
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

// TenantNamespaceNudge tells which of a cluster's Kustomizations
// kustomize-controller should reconcile now rather than later:
//
//   - the stack's, when it waits for the namespace Kustomization and that
//     one is Ready: kustomize-controller does not watch dependencies and
//     would look again only after --requeue-dependency (30 s by
//     default), on every cluster's first install. The token is the
//     namespace Kustomization's Ready transition and resourceVersion: it
//     often reconciles twice within a second (kustomize-controller
//     enqueues it with its dependants when the stack's source gets its
//     artifact), and a stack that looked in between, while it was not
//     Ready, must be asked again although the transition time, in whole
//     seconds, reads the same.
//   - the namespace Kustomization's, when the stack finds the namespace
//     gone and the namespace Kustomization has not run since: it would
//     create it again only at its hourly interval. The token is the
//     stack's failure (kustomize-controller turns Ready Unknown and back
//     on every retry, so each failed retry is a new transition), and the
//     nudge stops once the namespace Kustomization ran after it.
func TenantNamespaceNudge(c TenantClusterInput) (Nudge, bool) {
	if c.Namespace.Kind == "" || c.Namespace.Missing || c.Apply.Missing || c.Apply.Kind != kustomizev1.KustomizationKind {
		return Nudge{}, false
	}
	stackReady, nsReady := c.Apply.condition(meta.ReadyCondition), c.Namespace.condition(meta.ReadyCondition)
	if stackReady == nil || stackReady.Status != metav1.ConditionFalse || nsReady == nil || nsReady.Status != metav1.ConditionTrue ||
		c.Namespace.ObservedGeneration != c.Namespace.Generation {
		return Nudge{}, false
	}
	apply := c.Apply.readiness()
	switch {
	case waitsForNamespace(c, apply):
		return Nudge{Kind: c.Apply.Kind, Namespace: c.Apply.Namespace, Name: c.Apply.Name, Token: token(nsReady.LastTransitionTime) + "/" + c.Namespace.ResourceVersion}, true
	case namespaceNotFound(c.Apply, apply) && nsReady.LastTransitionTime.Before(&stackReady.LastTransitionTime):
		return Nudge{Kind: c.Namespace.Kind, Namespace: c.Namespace.Namespace, Name: c.Namespace.Name, Token: token(stackReady.LastTransitionTime)}, true
	}
	return Nudge{}, false
}

func token(t metav1.Time) string { return t.UTC().Format(time.RFC3339Nano) }
