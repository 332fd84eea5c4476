// Package shell is the reconcile shell every Capwright controller runs
// on: fetch the object, add or honour its finalizer, run the kind's own
// steps, then — in one place — summarise its conditions into Ready, set
// the kstatus conditions (Reconciling, Stalled), acknowledge a
// reconcile.fluxcd.io/requestedAt request, write the status once if it
// changed, record events for transitions and record metrics.
//
// A controller brings only its steps (Steps); the rules of how a Capwright
// object looks to kstatus, `flux get`, Prometheus and notification-controller
// live here, so the provider and tenant controllers and every later one
// behave alike.
package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kuberecorder "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/plan"
)

// Condition types the shell owns on every kind (kstatus's, with Ready).
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"
)

// Object is a Capwright custom resource: conditions in its status, and
// the status fields every kind has.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// Steps are what a kind brings to the shell.
type Steps[T Object] interface {
	// Init sets the kind's conditions that are missing to Unknown (and
	// Deleting to False on an object that is not being deleted).
	Init(obj T)
	// Reconcile runs the kind's steps on an object that is not being
	// deleted. request is the reconcile.fluxcd.io/requestedAt value not
	// handled yet ("" if none): the kind passes it on to its Flux objects.
	Reconcile(ctx context.Context, obj T, request string) (Outcome, error)
	// Finalize runs on an object being deleted; Outcome.Done says that
	// nothing is left to wait for, and the shell removes the finalizer.
	Finalize(ctx context.Context, obj T) (Outcome, error)
	// Summarize sets Ready from the kind's conditions and the status
	// fields derived from them (observedGeneration included).
	Summarize(obj T)
	// Status is the object's reconcile-request status, to record the
	// handled request in.
	Status(obj T) *meta.ReconcileRequestStatus
	// Events are the kind's own events besides condition transitions
	// (a new installed version, a cluster's phase).
	Events(before, after T) []events.Event
	// EventMetadata is what every event of the object carries (the
	// revision, in the Flux event shape).
	EventMetadata(obj T) map[string]string
	// Warning tells whether a condition is news that needs attention.
	Warning(c metav1.Condition) bool
	// State is the object's line in the metrics.
	State(obj T) metrics.ObjectState
}

// Outcome is what the kind's steps tell the shell.
type Outcome struct {
	// Result says when to look again.
	Result reconcile.Result
	// Stalled is set when the object cannot make progress until its
	// spec, or what it references, changes.
	Stalled *Stall
	// Done, from Finalize: the object may go; the shell removes its
	// finalizer.
	Done bool
	// Hold: the shell writes nothing at all, not even the status of a new
	// generation. The object is paused and already says so (its new
	// generation stays unobserved until the pause ends, as kstatus should
	// see it), or what would be written is a moment Flux is passing
	// through (its next write wakes the object a moment later).
	Hold bool
}

// Stall is a refusal that does not fix itself: kstatus calls the object
// Failed, so a Kustomization that waits for it fails at once instead of
// at its timeout.
type Stall struct {
	Reason, Message string
}

// Stalled is an Outcome that stalls with reason and message and looks
// again after retry (the spec may not change, but what it references,
// which is not watched, may).
func Stalled(reason, message string, retry time.Duration) Outcome {
	return Outcome{Result: reconcile.Result{RequeueAfter: retry}, Stalled: &Stall{Reason: reason, Message: message}}
}

// Reconciler is the shell for one kind.
type Reconciler[T Object] struct {
	// Client reads the object (from the cache) and writes it.
	Client client.Client
	// Reader reads the object without the cache when a status write
	// finds that someone else changed it since it was read; nil reads
	// through Client.
	Reader client.Reader
	// Kind names the kind in logs, events and metrics.
	Kind string
	// New returns an empty object of the kind.
	New func() T
	// Finalizer is the kind's finalizer.
	Finalizer string
	// FieldOwner is the field manager of the status writes.
	FieldOwner string
	Steps      Steps[T]
	// Events records Kubernetes events (forwarded to notification-controller
	// when the manager runs with --events-addr); nil records none.
	Events kuberecorder.EventRecorder
	// Metrics records reconcile durations and object states; nil records
	// none.
	Metrics *metrics.Recorder
	// Written remembers the shell's writes across reconciles, so a read
	// from a cache that has not seen them yet is not acted on; the kind's
	// reconciler owns it. nil acts on every read.
	Written *Written
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Metadata, when set, puts the labels and annotations the kind keeps
	// on its objects onto obj and tells whether it changed anything; they
	// are written with the finalizer, in the same patch, before anything
	// else is written.
	Metadata func(obj T) bool
	// ProgressFields are status fields (by their JSON name) that, like
	// condition messages, report how far work has got: a status that
	// changes only them and messages is written at most every
	// progressEvery.
	ProgressFields []string
}

// staleRetry is how soon a reconcile that read an object older than the
// shell's own last write looks again if the update that brings the cache
// up to date is not seen (Written.CaughtUp wakes it as soon as it is).
const staleRetry = time.Second

func (s *Reconciler[T]) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Reconcile is the shell: fetch, finalizer, the kind's steps, then the
// status written once if it changed, events and metrics.
func (s *Reconciler[T]) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	start := s.now()
	obj := s.New()
	if err := s.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			s.Metrics.Forget(s.Kind, req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if s.Written.isStale(obj.GetUID(), obj.GetResourceVersion()) {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	defer func() { s.Metrics.ReconcileDone(s.Kind, req.Namespace, req.Name, s.now().Sub(start)) }()

	if obj.GetDeletionTimestamp().IsZero() {
		// The finalizer (and the kind's metadata) is added before anything
		// is written, with an optimistic lock so another controller's
		// finalizer added at the same moment is not lost (a conflict
		// retries).
		patch := client.MergeFromWithOptions(obj.DeepCopyObject().(T), client.MergeFromWithOptimisticLock{})
		changed := controllerutil.AddFinalizer(obj, s.Finalizer)
		if s.Metadata != nil && s.Metadata(obj) {
			changed = true
		}
		if changed {
			read := obj.GetResourceVersion()
			if err := s.Client.Patch(ctx, obj, patch); err != nil {
				return reconcile.Result{}, fmt.Errorf("adding finalizer %s to %s %s/%s: %w", s.Finalizer, s.Kind, obj.GetNamespace(), obj.GetName(), err)
			}
			s.Written.wrote(obj.GetUID(), read, obj.GetResourceVersion())
		}
	}
	before := obj.DeepCopyObject().(T)
	s.Steps.Init(obj)

	var out Outcome
	var err error
	request := ""
	if !obj.GetDeletionTimestamp().IsZero() {
		if !controllerutil.ContainsFinalizer(obj, s.Finalizer) {
			return reconcile.Result{}, nil
		}
		out, err = s.Steps.Finalize(ctx, obj)
		if err == nil && out.Done {
			return out.Result, s.removeFinalizer(ctx, obj)
		}
	} else {
		if token, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok && token != s.Steps.Status(obj).LastHandledReconcileAt {
			request = token
		}
		out, err = s.Steps.Reconcile(ctx, obj, request)
	}
	if refusal, ok := plan.AsRefusal(err); ok {
		// A refusal is an outcome, not an error to retry with backoff:
		// the kind's fold has put it on its condition.
		out, err = refusalOutcome(refusal, out.Result.RequeueAfter), nil
	}
	if err == nil && out.Hold {
		return out.Result, nil
	}
	if err == nil && request != "" {
		s.Steps.Status(obj).SetLastHandledReconcileRequest(request)
	}
	s.Steps.Summarize(obj)
	setKstatus(obj, out.Stalled)

	deferred, perr := s.writeStatus(ctx, before, obj)
	if perr != nil && !apierrors.IsNotFound(perr) {
		err = errors.Join(err, perr)
	}
	if deferred > 0 && (out.Result.RequeueAfter == 0 || deferred < out.Result.RequeueAfter) {
		out.Result.RequeueAfter = deferred
	}
	s.record(before, obj)
	s.Metrics.ObjectState(s.Steps.State(obj))
	if err != nil {
		// controller-runtime retries with backoff and ignores a result.
		return reconcile.Result{}, err
	}
	return out.Result, nil
}

// removeFinalizer lets the object go, with an optimistic lock so another
// controller's finalizer changed at the same moment is not lost.
func (s *Reconciler[T]) removeFinalizer(ctx context.Context, obj T) error {
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(T), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, s.Finalizer)
	if err := s.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing finalizer %s from %s %s/%s: %w", s.Finalizer, s.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	s.Metrics.Forget(s.Kind, obj.GetNamespace(), obj.GetName())
	s.Written.forget(obj.GetUID())
	return nil
}

// progressEvery is how often, at most, a status that only rewords its
// conditions (or changes the kind's ProgressFields) is written for one
// object. While Flux fetches, applies and checks, its steps ("building
// artifact", "stored artifact", "Running health checks …") and its
// objects' Ready flips follow each other within a second or two; mirrored
// one by one, each is a status write and a watch event for every object
// being installed. A change of any condition's status or reason, or of
// any other status field, is written at once.
const progressEvery = 2 * time.Second

// writeStatus writes the status when it differs from what was read: one
// write for conditions and the other fields together. The first status is
// written whole (an update): a merge patch leaves out fields still at
// their zero value, and kubectl's columns would show nothing for them. A
// status that only rewords its conditions (or changes ProgressFields)
// within progressEvery of the last write is not written yet: deferred
// says when to look again.
func (s *Reconciler[T]) writeStatus(ctx context.Context, before, obj T) (deferred time.Duration, err error) {
	old, err := statusOf(before)
	if err != nil {
		return 0, err
	}
	now, err := statusOf(obj)
	if err != nil {
		return 0, err
	}
	if equality.Semantic.DeepEqual(old, now) {
		return 0, nil
	}
	if last, ok := s.Written.statusWrittenAt(obj.GetUID()); ok && progressOnly(old, now, s.ProgressFields) {
		if wait := progressEvery - s.now().Sub(last); wait > 0 {
			return wait, nil
		}
	}
	read := obj.GetResourceVersion()
	if len(before.GetConditions()) == 0 {
		err = s.Client.Status().Update(ctx, obj)
	} else {
		err = s.patchStatus(ctx, before, obj)
	}
	if err == nil {
		s.Written.wrote(obj.GetUID(), read, obj.GetResourceVersion())
		s.Written.statusWritten(obj.GetUID(), s.now())
	}
	return 0, err
}

// statusConflictRetries bounds how often a status write is merged again
// onto an object someone else keeps changing.
const statusConflictRetries = 3

// patchStatus writes the status as one merge patch, locked to the version
// read. A JSON merge patch replaces the whole conditions list, so when
// someone else wrote the object since it was read (a conflict), the
// status is merged onto the object as it is now: the fields and
// conditions this reconcile changed are carried over, and the conditions
// it did not touch stay as the other writer left them — the rule of
// fluxcd/pkg/runtime/patch's owned conditions, in one write instead of
// its separate status and conditions patches.
func (s *Reconciler[T]) patchStatus(ctx context.Context, before, obj T) error {
	opts := []client.SubResourcePatchOption{}
	if s.FieldOwner != "" {
		opts = append(opts, client.FieldOwner(s.FieldOwner))
	}
	from := before
	for attempt := 0; ; attempt++ {
		err := s.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(from, client.MergeFromWithOptimisticLock{}), opts...)
		if !apierrors.IsConflict(err) || attempt == statusConflictRetries {
			return err
		}
		reader := s.Reader
		if reader == nil {
			reader = s.Client
		}
		latest := s.New()
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return err
		}
		from = latest
		obj.SetResourceVersion(latest.GetResourceVersion())
		obj.SetConditions(mergeConditions(before, obj, latest))
	}
}

// mergeConditions is the conditions of latest with the changes from
// before to after carried over: a condition after set or changed is
// after's, one after removed is removed, and the others are latest's.
func mergeConditions[T Object](before, after, latest T) []metav1.Condition {
	out := slices.Clone(latest.GetConditions())
	for _, c := range before.GetConditions() {
		if apimeta.FindStatusCondition(after.GetConditions(), c.Type) == nil {
			apimeta.RemoveStatusCondition(&out, c.Type)
		}
	}
	for _, c := range after.GetConditions() {
		if old := apimeta.FindStatusCondition(before.GetConditions(), c.Type); old != nil && equality.Semantic.DeepEqual(*old, c) {
			continue
		}
		if i := slices.IndexFunc(out, func(o metav1.Condition) bool { return o.Type == c.Type }); i >= 0 {
			out[i] = c
		} else {
			out = append(out, c)
		}
	}
	return out
}

// progressOnly tells whether two statuses differ only in the messages of
// their conditions and in the fields named progress.
func progressOnly(old, now any, progress []string) bool {
	return equality.Semantic.DeepEqual(withoutProgress(old, progress), withoutProgress(now, progress))
}

// withoutProgress is a copy of an unstructured status without the fields
// named progress, whose conditions carry no message.
func withoutProgress(status any, progress []string) any {
	m, ok := status.(map[string]any)
	if !ok {
		return status
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(progress, k) {
			out[k] = v
		}
	}
	conds, ok := m["conditions"].([]any)
	if !ok {
		return out
	}
	stripped := make([]any, len(conds))
	for i, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok {
			stripped[i] = c
			continue
		}
		cc := make(map[string]any, len(cm))
		for k, v := range cm {
			if k != "message" {
				cc[k] = v
			}
		}
		stripped[i] = cc
	}
	out["conditions"] = stripped
	return out
}

// record emits an event for every condition that changed status or
// reason (Reconciling and Stalled excepted: Ready and the kind's own
// conditions tell the same news) and the kind's own events.
func (s *Reconciler[T]) record(before, after T) {
	if s.Events == nil {
		return
	}
	annotations := s.Steps.EventMetadata(after)
	news := events.Transitions(withoutKstatus(before.GetConditions()), withoutKstatus(after.GetConditions()), s.Steps.Warning)
	news = append(news, s.Steps.Events(before, after)...)
	for _, e := range news {
		meta := annotations
		if e.Metadata != nil {
			meta = e.Metadata
		}
		s.Events.AnnotatedEventf(after, meta, e.Type, e.Reason, "%s", e.Message)
	}
}

func withoutKstatus(conds []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		if c.Type != ReconcilingCondition && c.Type != StalledCondition {
			out = append(out, c)
		}
	}
	return out
}

// setKstatus sets Reconciling and Stalled by kstatus's rules from Ready
// and the kind's outcome: Stalled (and not Reconciling) for a refusal that
// cannot fix itself; Reconciling, with Ready's reason and message, while
// the object is not Ready and work goes on; neither once Ready is True or
// while the object is paused (nothing is being worked on).
func setKstatus(obj Object, stall *Stall) {
	conds := obj.GetConditions()
	ready := apimeta.FindStatusCondition(conds, ReadyCondition)
	gen := obj.GetGeneration()
	switch {
	case stall != nil:
		apimeta.RemoveStatusCondition(&conds, ReconcilingCondition)
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: StalledCondition, Status: metav1.ConditionTrue,
			Reason: stall.Reason, Message: stall.Message, ObservedGeneration: gen})
	case ready == nil || ready.Status == metav1.ConditionTrue || ready.Reason == pausedReason:
		apimeta.RemoveStatusCondition(&conds, ReconcilingCondition)
		apimeta.RemoveStatusCondition(&conds, StalledCondition)
	default:
		apimeta.RemoveStatusCondition(&conds, StalledCondition)
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: ReconcilingCondition, Status: metav1.ConditionTrue,
			Reason: ready.Reason, Message: ready.Message, ObservedGeneration: gen})
	}
	obj.SetConditions(conds)
}

// pausedReason is Ready's reason while an object is suspended (the
// providers' and tenants' PausedReason).
const pausedReason = "Paused"

// statusOf is the object's status, for comparison.
func statusOf(obj client.Object) (any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return u["status"], nil
}
