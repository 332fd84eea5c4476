package events

import (
	"context"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kuberecorder "k8s.io/client-go/tools/record"
)

// DefaultForwardQueue bounds the events waiting to be forwarded.
const DefaultForwardQueue = 1024

// Forwarder is the controllers' event recorder. It records every event as
// a Kubernetes event at once and forwards it to notification-controller
// (Notify) in the background, one POST at a time. Flux's recorder posts
// synchronously and retries for about 15 s, so an unreachable
// notification-controller (Flux installed without it, or restarting)
// would otherwise hold every reconcile that records an event. Events
// beyond the queue are not forwarded, and the drop is logged; the
// Kubernetes event is recorded regardless.
type Forwarder struct {
	// Kube records Kubernetes events.
	Kube kuberecorder.EventRecorder
	// Notify posts events to notification-controller (Flux's recorder
	// built over a recorder that records nothing); nil forwards nothing.
	Notify kuberecorder.EventRecorder
	Log    logr.Logger

	queue chan func()
}

// NewForwarder returns a Forwarder with a queue of size events; run Start
// (a manager Runnable) to forward them.
func NewForwarder(kube, notify kuberecorder.EventRecorder, log logr.Logger, size int) *Forwarder {
	return &Forwarder{Kube: kube, Notify: notify, Log: log, queue: make(chan func(), size)}
}

// Start forwards queued events until ctx ends.
func (f *Forwarder) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case post := <-f.queue:
			post()
		}
	}
}

// NeedLeaderElection is false: every replica forwards its own events.
func (f *Forwarder) NeedLeaderElection() bool { return false }

func (f *Forwarder) Event(object runtime.Object, eventtype, reason, message string) {
	f.AnnotatedEventf(object, nil, eventtype, reason, "%s", message)
}

func (f *Forwarder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	f.AnnotatedEventf(object, nil, eventtype, reason, messageFmt, args...)
}

func (f *Forwarder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	f.Kube.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	if f.Notify == nil || !namespaced(object) {
		return
	}
	// The object may change after this call returns: forward a copy.
	obj := object.DeepCopyObject()
	select {
	case f.queue <- func() { f.Notify.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...) }:
	default:
		f.Log.Info("notification-controller is behind: event not forwarded", "reason", reason, "queued", cap(f.queue))
	}
}

// namespaced tells whether object lives in a namespace. notification-controller
// handles only namespaced objects (an Alert's event sources are in its
// own or a named namespace) and Flux's recorder refuses the others with an
// error log, so a cluster-scoped object's events (a Tenant's) stay
// Kubernetes events.
func namespaced(object runtime.Object) bool {
	m, err := apimeta.Accessor(object)
	return err == nil && m.GetNamespace() != ""
}

// Discard is a Kubernetes event recorder that records nothing: the
// recorder under Flux's, so that Flux's posts and records nothing twice.
type Discard struct{}

func (Discard) Event(runtime.Object, string, string, string)                                      {}
func (Discard) Eventf(runtime.Object, string, string, string, ...any)                             {}
func (Discard) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {}
