// Package health folds the conditions of Flux objects into provider
// conditions. It is pure: values in, values out. A Flux object counts only
// for its current generation and, for what it applied, only at the
// revision the provider expects.
package health

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Flux condition types (github.com/fluxcd/pkg/apis/meta).
const (
	fluxReady       = "Ready"
	fluxReconciling = "Reconciling"
	fluxStalled     = "Stalled"
)

// Observation is what health needs of one Flux object.
type Observation struct {
	Kind, Name, Namespace string
	Generation            int64
	ObservedGeneration    int64
	Conditions            []metav1.Condition
	// Revision is what the object holds or applied: an OCIRepository's
	// artifact revision, a Kustomization's lastAppliedRevision, a
	// HelmRelease's last released chart digest.
	Revision              string
	LastAttemptedRevision string
	// Missing is set when the object does not exist.
	Missing bool
}

// ObserveOCIRepository observes a source.
func ObserveOCIRepository(o *sourcev1.OCIRepository) Observation {
	obs := Observation{Kind: sourcev1.OCIRepositoryKind, Name: o.Name, Namespace: o.Namespace, Generation: o.Generation,
		ObservedGeneration: o.Status.ObservedGeneration, Conditions: o.Status.Conditions}
	if o.Status.Artifact != nil {
		obs.Revision = o.Status.Artifact.Revision
	}
	return obs
}

// ObserveKustomization observes an applier.
func ObserveKustomization(k *kustomizev1.Kustomization) Observation {
	return Observation{Kind: kustomizev1.KustomizationKind, Name: k.Name, Namespace: k.Namespace, Generation: k.Generation,
		ObservedGeneration: k.Status.ObservedGeneration, Conditions: k.Status.Conditions,
		Revision: k.Status.LastAppliedRevision, LastAttemptedRevision: k.Status.LastAttemptedRevision}
}

// ObserveHelmRelease observes a Helm applier; its revision is the OCI
// digest of the chart it last released (helm-controller records the
// source's digest revision per release).
func ObserveHelmRelease(h *helmv2.HelmRelease) Observation {
	obs := Observation{Kind: helmv2.HelmReleaseKind, Name: h.Name, Namespace: h.Namespace, Generation: h.Generation,
		ObservedGeneration: h.Status.ObservedGeneration, Conditions: h.Status.Conditions,
		LastAttemptedRevision: h.Status.LastAttemptedRevision}
	if latest := h.Status.History.Latest(); latest != nil {
		obs.Revision = latest.OCIDigest
	}
	return obs
}

// readiness is an object's Ready state for its current spec.
type readiness struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// ready reports whether the object is Ready for its current generation:
// observedGeneration caught up, Ready True for that generation, neither
// Reconciling nor Stalled. Stalled True is a terminal failure.
func (o Observation) ready() readiness {
	if o.Missing {
		return readiness{metav1.ConditionUnknown, "NotFound", o.ref() + " does not exist"}
	}
	cond := apimeta.FindStatusCondition(o.Conditions, fluxReady)
	if stalled := apimeta.FindStatusCondition(o.Conditions, fluxStalled); stalled != nil && stalled.Status == metav1.ConditionTrue {
		return readiness{metav1.ConditionFalse, stalled.Reason, o.ref() + ": " + stalled.Message}
	}
	if cond == nil || o.ObservedGeneration != o.Generation || cond.ObservedGeneration != o.Generation {
		return readiness{metav1.ConditionUnknown, "Progressing", o.ref() + " has not reconciled its current generation yet"}
	}
	if rec := apimeta.FindStatusCondition(o.Conditions, fluxReconciling); rec != nil && rec.Status == metav1.ConditionTrue {
		return readiness{metav1.ConditionUnknown, rec.Reason, o.ref() + ": " + rec.Message}
	}
	return readiness{cond.Status, cond.Reason, o.ref() + ": " + cond.Message}
}

func (o Observation) ref() string {
	return o.Kind + " " + o.Namespace + "/" + o.Name
}
