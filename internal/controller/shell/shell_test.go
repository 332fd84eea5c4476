package shell

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/metrics"
)

// fakeSteps are a kind's steps whose outcome the test sets: Ready follows
// the "Done" condition the steps set.
type fakeSteps struct {
	outcome  Outcome
	ready    metav1.ConditionStatus
	requests []string
	finalize Outcome
	// message words the steps' condition; "" says "the steps say <reason>".
	message string
	// installing is set as status.installingClusters.
	installing int32
}

func (f *fakeSteps) Init(t *tenancyv1alpha1.Tenant) {
	if apimeta.FindStatusCondition(t.Status.Conditions, "Done") == nil {
		apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: "Done", Status: metav1.ConditionUnknown, Reason: "Reconciling", ObservedGeneration: t.Generation})
	}
}

func (f *fakeSteps) Reconcile(_ context.Context, t *tenancyv1alpha1.Tenant, request string) (Outcome, error) {
	f.requests = append(f.requests, request)
	reason := "Installing"
	switch {
	case f.outcome.Stalled != nil:
		reason = f.outcome.Stalled.Reason
	case f.ready == metav1.ConditionTrue:
		reason = "Succeeded"
	}
	msg := f.message
	if msg == "" {
		msg = "the steps say " + reason
	}
	apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: "Done", Status: f.ready, Reason: reason, Message: msg, ObservedGeneration: t.Generation})
	t.Status.InstallingClusters = f.installing
	return f.outcome, nil
}

func (f *fakeSteps) Finalize(context.Context, *tenancyv1alpha1.Tenant) (Outcome, error) {
	return f.finalize, nil
}

func (f *fakeSteps) Summarize(t *tenancyv1alpha1.Tenant) {
	t.Status.ObservedGeneration = t.Generation
	done := apimeta.FindStatusCondition(t.Status.Conditions, "Done")
	apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: ReadyCondition, Status: done.Status, Reason: done.Reason, Message: done.Message, ObservedGeneration: t.Generation})
}

func (f *fakeSteps) Status(t *tenancyv1alpha1.Tenant) *meta.ReconcileRequestStatus {
	return &t.Status.ReconcileRequestStatus
}
func (f *fakeSteps) Events(_, _ *tenancyv1alpha1.Tenant) []events.Event      { return nil }
func (f *fakeSteps) EventMetadata(*tenancyv1alpha1.Tenant) map[string]string { return nil }
func (f *fakeSteps) Warning(c metav1.Condition) bool                         { return c.Status == metav1.ConditionFalse }
func (f *fakeSteps) State(t *tenancyv1alpha1.Tenant) metrics.ObjectState {
	return metrics.ObjectState{Kind: "Tenant", Namespace: t.Namespace, Name: t.Name}
}

type writes struct{ patches, statusWrites int }

func newShell(t *testing.T, steps *fakeSteps, objs ...client.Object) (*Reconciler[*tenancyv1alpha1.Tenant], client.Client, *writes, *record.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &writes{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				w.patches++
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				w.statusWrites++
				return c.Status().Patch(ctx, o, p, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
				w.statusWrites++
				return c.Status().Update(ctx, o, opts...)
			},
		}).Build()
	rec := record.NewFakeRecorder(32)
	return &Reconciler[*tenancyv1alpha1.Tenant]{
		Client: c, Kind: "Tenant", New: func() *tenancyv1alpha1.Tenant { return &tenancyv1alpha1.Tenant{} },
		Finalizer: tenancyv1alpha1.Finalizer, FieldOwner: "capwright", Steps: steps, Events: rec,
	}, c, w, rec
}

func tenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Generation: 1}}
}

var req = reconcile.Request{NamespacedName: client.ObjectKey{Name: "team-a"}}

func get(t *testing.T, c client.Client) *tenancyv1alpha1.Tenant {
	t.Helper()
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestProgressIsReconcilingAndANoOpWritesNothing(t *testing.T) {
	ctx := context.Background()
	steps := &fakeSteps{ready: metav1.ConditionFalse, outcome: Outcome{Result: reconcile.Result{RequeueAfter: time.Minute}}}
	s, c, w, rec := newShell(t, steps, tenant())

	res, err := s.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("Reconcile = %v, %v; want the steps' requeue", res, err)
	}
	got := get(t, c)
	if len(got.Finalizers) != 1 || w.patches != 1 || w.statusWrites != 1 {
		t.Fatalf("first reconcile: finalizers %v, %d patches, %d status writes; want the finalizer and one status write", got.Finalizers, w.patches, w.statusWrites)
	}
	rc := apimeta.FindStatusCondition(got.Status.Conditions, ReconcilingCondition)
	if rc == nil || rc.Status != metav1.ConditionTrue || rc.Reason != "Installing" || apimeta.FindStatusCondition(got.Status.Conditions, StalledCondition) != nil {
		t.Errorf("while installing: Reconciling %+v, want True with Ready's reason and no Stalled", rc)
	}
	if got.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d, want 1", got.Status.ObservedGeneration)
	}
	// Progress is not a Warning: the steps' condition is False, but the
	// fake says False is a Warning, so one Warning per condition — and
	// none for Reconciling itself.
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, ReconcilingCondition) {
			t.Errorf("event for the kstatus condition: %q", e)
		}
	}

	*w = writes{}
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if w.patches != 0 || w.statusWrites != 0 {
		t.Errorf("a reconcile that found nothing new wrote %d patches and %d status writes, want none", w.patches, w.statusWrites)
	}

	steps.ready = metav1.ConditionTrue
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got = get(t, c)
	if apimeta.FindStatusCondition(got.Status.Conditions, ReconcilingCondition) != nil || !apimeta.IsStatusConditionTrue(got.Status.Conditions, ReadyCondition) {
		t.Errorf("once Ready: conditions %+v, want Ready True and no Reconciling", got.Status.Conditions)
	}
}

func TestRefusalStalls(t *testing.T) {
	steps := &fakeSteps{ready: metav1.ConditionFalse, outcome: Stalled("IncompatibleContract", "contract v1beta1 is not the core provider's v1beta2", time.Hour)}
	s, c, _, _ := newShell(t, steps, tenant())
	res, err := s.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != time.Hour {
		t.Fatalf("Reconcile = %v, %v", res, err)
	}
	got := get(t, c)
	st := apimeta.FindStatusCondition(got.Status.Conditions, StalledCondition)
	if st == nil || st.Status != metav1.ConditionTrue || st.Reason != "IncompatibleContract" || st.Message != "contract v1beta1 is not the core provider's v1beta2" {
		t.Errorf("Stalled = %+v, want True with the refusal's reason and message", st)
	}
	if apimeta.FindStatusCondition(got.Status.Conditions, ReconcilingCondition) != nil {
		t.Error("a stalled object must not be Reconciling (kstatus would call it in progress)")
	}

	// The spec is fixed: the stall goes.
	steps.outcome, steps.ready = Outcome{}, metav1.ConditionTrue
	if _, err := s.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c); apimeta.FindStatusCondition(got.Status.Conditions, StalledCondition) != nil {
		t.Errorf("Stalled stays after the refusal is lifted: %+v", got.Status.Conditions)
	}
}

func TestReconcileRequestIsPassedOnceAndAcknowledged(t *testing.T) {
	obj := tenant()
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "2026-11-24T10:00:00Z"}
	steps := &fakeSteps{ready: metav1.ConditionTrue}
	s, c, w, _ := newShell(t, steps, obj)
	for range 2 {
		if _, err := s.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if len(steps.requests) != 2 || steps.requests[0] != "2026-11-24T10:00:00Z" || steps.requests[1] != "" {
		t.Errorf("requests passed to the steps: %q, want the token once", steps.requests)
	}
	if got := get(t, c); got.Status.LastHandledReconcileAt != "2026-11-24T10:00:00Z" {
		t.Errorf("lastHandledReconcileAt = %q", got.Status.LastHandledReconcileAt)
	}
	if w.statusWrites != 1 {
		t.Errorf("%d status writes, want 1 (the second reconcile has nothing new)", w.statusWrites)
	}
}

func TestFinalizerIsAddedWithAnOptimisticLock(t *testing.T) {
	steps := &fakeSteps{ready: metav1.ConditionTrue}
	s, c, _, _ := newShell(t, steps, tenant())
	// Another controller adds its finalizer between the shell's read and
	// its patch: the patch conflicts instead of dropping it.
	inner := s.Client
	s.Client = interceptor.NewClient(inner.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			other := get(t, inner)
			other.Finalizers = append(other.Finalizers, "example.com/other")
			if err := inner.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			return cl.Patch(ctx, o, p, opts...)
		},
	})
	if _, err := s.Reconcile(context.Background(), req); !apierrors.IsConflict(err) {
		t.Fatalf("Reconcile = %v, want a conflict", err)
	}
	s.Client = inner
	if _, err := s.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c); len(got.Finalizers) != 2 {
		t.Errorf("finalizers %v, want both", got.Finalizers)
	}
}

func TestFinalizeDoneRemovesTheFinalizerOnly(t *testing.T) {
	obj := tenant()
	obj.Finalizers = []string{tenancyv1alpha1.Finalizer, "example.com/other"}
	now := metav1.Now()
	obj.DeletionTimestamp = &now
	steps := &fakeSteps{finalize: Outcome{Done: true}}
	s, c, _, _ := newShell(t, steps, obj)
	if _, err := s.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c); len(got.Finalizers) != 1 || got.Finalizers[0] != "example.com/other" {
		t.Errorf("finalizers %v, want only the other controller's", got.Finalizers)
	}
}

// A reconcile that reads the object as it was before the shell's own last
// write (a cache that has not caught up) does nothing and looks again
// shortly: the reconcile request is handled, and written, once.
func TestAReadOlderThanTheShellsWriteIsNotActedOn(t *testing.T) {
	ctx := context.Background()
	steps := &fakeSteps{ready: metav1.ConditionTrue}
	obj := tenant()
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
	s, c, w, _ := newShell(t, steps, obj)
	var first, stale *tenancyv1alpha1.Tenant
	s.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if stale != nil {
				stale.DeepCopyInto(o.(*tenancyv1alpha1.Tenant))
				return nil
			}
			err := c.Get(ctx, key, o, opts...)
			if first == nil {
				first = o.DeepCopyObject().(*tenancyv1alpha1.Tenant)
			}
			return err
		},
	})
	s.Written = &Written{}

	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The cache still has the object as the first reconcile read it,
	// before its finalizer and status writes.
	stale = first
	before := *w
	res, err := s.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if *w != before || len(steps.requests) != 1 {
		t.Errorf("a stale read was acted on: writes %+v → %+v, steps ran %d times", before, *w, len(steps.requests))
	}
	if res.RequeueAfter != staleRetry {
		t.Errorf("a stale read looks again after %s, want %s", res.RequeueAfter, staleRetry)
	}

	// Once the cache has the write, the request is seen as handled.
	stale = nil
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if *w != before {
		t.Errorf("a fresh read after the write wrote again: %+v → %+v", before, *w)
	}
	if got := steps.requests; len(got) != 2 || got[1] != "" {
		t.Errorf("requests passed to the steps: %q, want the request once", got)
	}
	if _, ok := s.Written.stale[obj.UID]; ok {
		t.Error("the record of the write outlived the cache catching up")
	}
}

// The record of writes keeps only versions older than a write that
// changed something.
func TestWrittenRecordsOnlyChangingWrites(t *testing.T) {
	var w Written
	w.wrote("a", "1", "1")
	if w.isStale("a", "1") {
		t.Error("a write that changed nothing made its version stale")
	}
	w.wrote("a", "1", "2")
	w.wrote("a", "2", "3")
	if !w.isStale("a", "1") || !w.isStale("a", "2") {
		t.Error("versions before the writes are not stale")
	}
	if w.isStale("a", "3") || w.isStale("a", "1") {
		t.Error("a read of the written version did not clear the record")
	}
	var none *Written
	none.wrote("a", "1", "2")
	if none.isStale("a", "1") {
		t.Error("a nil record found a stale read")
	}
}

// TestRewordingIsWrittenAtMostEveryInterval: while Flux works, its steps
// reword a condition within a second or two; such a status is written at
// most every progressEvery (the reconcile looks again when it is due),
// while a change of status or reason is written at once.
func TestRewordingIsWrittenAtMostEveryInterval(t *testing.T) {
	ctx := context.Background()
	steps := &fakeSteps{ready: metav1.ConditionFalse, message: "building artifact", outcome: Outcome{Result: reconcile.Result{RequeueAfter: time.Minute}}}
	s, c, w, _ := newShell(t, steps, tenant())
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return clock }
	s.Written = &Written{}
	message := func() string {
		return apimeta.FindStatusCondition(get(t, c).Status.Conditions, "Done").Message
	}

	if _, err := s.Reconcile(ctx, req); err != nil || w.statusWrites != 1 {
		t.Fatalf("first reconcile: %v, %d status writes; want 1", err, w.statusWrites)
	}

	steps.message = "stored artifact"
	clock = clock.Add(500 * time.Millisecond)
	res, err := s.Reconcile(ctx, req)
	if err != nil || w.statusWrites != 1 || message() != "building artifact" {
		t.Fatalf("rewording 0.5 s later: %v, %d status writes, message %q; want it not written yet", err, w.statusWrites, message())
	}
	if res.RequeueAfter != progressEvery-500*time.Millisecond {
		t.Errorf("rewording 0.5 s later: requeue after %v, want %v", res.RequeueAfter, progressEvery-500*time.Millisecond)
	}

	clock = clock.Add(progressEvery)
	if _, err := s.Reconcile(ctx, req); err != nil || w.statusWrites != 2 || message() != "stored artifact" {
		t.Fatalf("when due: %v, %d status writes, message %q; want the new wording written", err, w.statusWrites, message())
	}

	steps.ready = metav1.ConditionTrue
	clock = clock.Add(100 * time.Millisecond)
	if _, err := s.Reconcile(ctx, req); err != nil || w.statusWrites != 3 {
		t.Fatalf("Ready 0.1 s later: %v, %d status writes; want it written at once", err, w.statusWrites)
	}
}

// TestProgressFieldsAreWrittenWithTheWording: a change of a kind's
// ProgressFields alone waits like a rewording; the same change is written
// at once where the field is not one.
func TestProgressFieldsAreWrittenWithTheWording(t *testing.T) {
	ctx := context.Background()
	for _, progress := range [][]string{{"installingClusters"}, nil} {
		steps := &fakeSteps{ready: metav1.ConditionFalse, installing: 1, outcome: Outcome{Result: reconcile.Result{RequeueAfter: time.Minute}}}
		s, c, w, _ := newShell(t, steps, tenant())
		clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		s.Now = func() time.Time { return clock }
		s.Written = &Written{}
		s.ProgressFields = progress
		if _, err := s.Reconcile(ctx, req); err != nil || w.statusWrites != 1 {
			t.Fatalf("first reconcile: %v, %d status writes; want 1", err, w.statusWrites)
		}
		steps.installing = 2
		clock = clock.Add(500 * time.Millisecond)
		res, err := s.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, c).Status.InstallingClusters
		if progress != nil && (w.statusWrites != 1 || got != 1 || res.RequeueAfter != progressEvery-500*time.Millisecond) {
			t.Errorf("progress field changed 0.5 s later: %d status writes, installingClusters %d, requeue after %v; want 1, 1 and %v",
				w.statusWrites, got, res.RequeueAfter, progressEvery-500*time.Millisecond)
		}
		if progress == nil && (w.statusWrites != 2 || got != 2) {
			t.Errorf("a field that is not progress changed: %d status writes, installingClusters %d; want it written at once", w.statusWrites, got)
		}
	}
}

// A paused object that says so already is held: a new generation writes
// nothing, status included, and no event.
func TestHoldWritesNothing(t *testing.T) {
	ctx := context.Background()
	steps := &fakeSteps{ready: metav1.ConditionTrue}
	s, c, w, rec := newShell(t, steps, tenant())
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for len(rec.Events) > 0 {
		<-rec.Events
	}
	got := get(t, c)
	got.Spec.Suspend = true
	got.Generation = 2
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	*w = writes{}
	steps.outcome = Outcome{Hold: true}
	steps.ready = metav1.ConditionFalse
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if w.patches != 0 || w.statusWrites != 0 || len(rec.Events) != 0 {
		t.Fatalf("a held object: %d patches, %d status writes, %d events; want none", w.patches, w.statusWrites, len(rec.Events))
	}
	if got := get(t, c); got.Status.ObservedGeneration != 1 {
		t.Fatalf("a held object's observedGeneration moved to %d", got.Status.ObservedGeneration)
	}
}

// TestAStaleReadWakesWhenTheCacheCatchesUp: the object whose reconcile
// was skipped as stale is reconciled on the update that brings the cache
// past the shell's write, once; other objects' updates and the stale
// version itself wake nothing.
func TestAStaleReadWakesWhenTheCacheCatchesUp(t *testing.T) {
	var w Written
	p := w.CaughtUp()
	update := func(uid types.UID, rv string) bool {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
		return p.Update(event.UpdateEvent{ObjectOld: o.DeepCopy(), ObjectNew: o})
	}
	w.wrote("a", "1", "2")
	if update("a", "2") {
		t.Error("an update woke an object no reconcile waits for")
	}
	if !w.isStale("a", "1") {
		t.Fatal("the version before the write is not stale")
	}
	if update("a", "1") || update("b", "3") {
		t.Error("the stale version, or another object, woke the waiting reconcile")
	}
	if !update("a", "2") {
		t.Error("the cache caught up with the write and nothing woke the reconcile")
	}
	if update("a", "3") {
		t.Error("the reconcile was woken twice")
	}
	var none *Written
	if none.CaughtUp().Update(event.UpdateEvent{ObjectOld: &metav1.PartialObjectMetadata{}, ObjectNew: &metav1.PartialObjectMetadata{}}) {
		t.Error("a nil record woke a reconcile")
	}
}
