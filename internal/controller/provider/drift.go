package provider

import (
	"context"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// Drift: kustomize-controller re-applies a provider's components every
// spec.interval and puts back what someone changed or deleted. Its
// Kustomization's status reads the same before and after (the revision
// it applied, Ready); only its event tells what it changed. The manager
// watches those events, and the fold records the newest that re-applied
// the installed revision as status.lastDriftCorrection.

// revisionAnnotation is the annotation of Flux's events on a
// Kustomization holding the revision they are about.
var revisionAnnotation = kustomizev1.GroupVersion.Group + "/revision"

// CacheByObject restricts the manager's cache of Events to what the
// provider controllers read: Normal events on Kustomizations (Flux
// reports the objects an apply changed in one). The API server filters
// them, so no other event of the cluster reaches the manager, and of
// those only what is read is kept (fluxChangeOnly).
func CacheByObject() map[ctrl.Object]cache.ByObject {
	return map[ctrl.Object]cache.ByObject{&corev1.Event{}: {
		Field: fields.SelectorFromSet(fields.Set{
			"involvedObject.kind": kustomizev1.KustomizationKind,
			"type":                corev1.EventTypeNormal,
		}),
		Transform: fluxChangeOnly,
	}}
}

// fluxChangeOnly keeps of a cached event what changeReported and observe
// read; of an event on a Kustomization no provider is named for (a
// Tenant's: a fleet has thousands, each reporting its stack's objects),
// only where it points.
func fluxChangeOnly(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name, UID: e.UID, ResourceVersion: e.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace,
			Name: e.InvolvedObject.Name, UID: e.InvolvedObject.UID},
		Type: e.Type, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime, Series: e.Series,
	}
	// A provider's Flux objects are named <type>-<name>.
	for _, t := range clusterctl.ProviderTypes() {
		if strings.HasPrefix(e.InvolvedObject.Name, t+"-") {
			kept.Message = e.Message
			if revision := e.Annotations[revisionAnnotation]; revision != "" {
				kept.Annotations = map[string]string{revisionAnnotation: revision}
			}
			break
		}
	}
	return kept, nil
}

// changeReported enqueues the provider of r.Kind whose Kustomization a
// Flux event with a revision is about.
func (r *Reconciler) changeReported(_ context.Context, o ctrl.Object) []reconcile.Request {
	e, ok := o.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != kustomizev1.KustomizationKind || e.Annotations[revisionAnnotation] == "" {
		return nil
	}
	name, ok := strings.CutPrefix(e.InvolvedObject.Name, r.Kind.NewObject().ProviderType()+"-")
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrl.ObjectKey{Namespace: e.InvolvedObject.Namespace, Name: name}}}
}

// readBack is the fold's input: what the plan expects (d.Expect), with
// the Flux objects as read — the source and applier, and the additional
// manifests' objects — and the changes Flux reported applying: its
// events on the Kustomization, which tell drift it put back.
func (r *Reconciler) readBack(ctx context.Context, d providerplan.Desired, observed plan.Observed) synced {
	in := d.Expect
	in.Now = metav1.Now()
	for _, o := range []*health.Observation{&in.Source, &in.Apply, &in.AdditionalSource, &in.AdditionalApply} {
		if o.Kind != "" {
			*o = health.Observe(observed.Get(o.Kind, o.Namespace, o.Name), o.Kind, o.Namespace, o.Name)
		}
	}
	if extra := d.Expect.AdditionalSource; extra.Kind != "" {
		if ea, ok := observed.Get(extra.Kind, extra.Namespace, extra.Name).(*sourcev1.ExternalArtifact); ok && ea.Status.Artifact != nil {
			in.AdditionalRevision = ea.Status.Artifact.Revision
		}
	}
	s := synced{in: &in, now: time.Now()}
	apply := d.Expect.Apply
	ks, ok := observed.Get(apply.Kind, apply.Namespace, apply.Name).(*kustomizev1.Kustomization)
	if !ok || ks == nil {
		return s
	}
	var events corev1.EventList
	if err := r.Client.List(ctx, &events, ctrl.InNamespace(ks.Namespace)); err != nil {
		// Only status.lastDriftCorrection waits for the next reconcile.
		log.FromContext(ctx).Error(err, "listing Flux's events on the Kustomization")
		return s
	}
	for _, e := range events.Items {
		revision := e.Annotations[revisionAnnotation]
		if e.InvolvedObject.Kind != kustomizev1.KustomizationKind || e.InvolvedObject.Name != ks.Name || e.InvolvedObject.UID != ks.UID || revision == "" {
			continue
		}
		// Repeats of an event are counted on it, with their time.
		at := e.LastTimestamp
		if e.Series != nil {
			at = metav1.NewTime(e.Series.LastObservedTime.Time)
		} else if at.IsZero() {
			at = metav1.NewTime(e.EventTime.Time)
		}
		s.in.ApplyChanges = append(s.in.ApplyChanges, health.FluxChange{Time: at, Revision: revision, Message: e.Message})
	}
	return s
}
