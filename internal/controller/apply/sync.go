package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/plan"
)

// ConflictError is an object that exists and is not the owner's.
type ConflictError struct {
	Kind, Ref string
	Err       error
}

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// Syncer writes plan.Desired sets: one field owner, one hash annotation.
type Syncer struct {
	// Client reads the watched kinds from the cache and writes.
	Client ctrl.Client
	// Reader reads without the cache.
	Reader ctrl.Reader
	// Artifacts stores and serves ExternalArtifacts' content; nil refuses
	// a write with an plan.Artifact.
	Artifacts *fluxartifact.Storage
	// Cached tells, for an Uncached write, whether its kind is in
	// Client's cache (watched): an object the cache shows unchanged is
	// then not read again (SkipCachedUnchanged), and only a write is
	// decided on an uncached read. nil reads every Uncached write
	// without the cache.
	Cached func(plan.Object) bool
	// Now is the clock of stored artifacts; nil is time.Now.
	Now func() time.Time
}

// Sync writes d in order: each object applied if it changed, an
// ExternalArtifact's content stored once it is applied, the reconcile
// request passed on, then what is no longer wanted deleted, then the
// objects to observe read back, then Flux nudged where it waits. An
// existing object the owner does not own is never written: the conflict
// is reported, and what needs it is skipped. Any other error stops the
// sync.
func (s Syncer) Sync(ctx context.Context, d plan.Desired) (plan.Result, error) {
	res := plan.Result{Conflicts: map[string]string{}}
	var requests []ctrl.Object
	for i := 0; i < len(d.Writes); {
		// A batch: consecutive writes with the same Batch, applied side
		// by side; any other write is a batch of its own.
		n := 1
		for b := d.Writes[i].Batch; b != "" && i+n < len(d.Writes) && d.Writes[i+n].Batch == b; n++ {
		}
		batch := d.Writes[i : i+n]
		i += n
		errs := make([]error, len(batch))
		var g errgroup.Group
		for j, w := range batch {
			if skipped(res.Conflicts, w) {
				errs[j] = errSkipped
				continue
			}
			if len(batch) == 1 {
				errs[j] = s.apply(ctx, w, d.Owned)
				continue
			}
			g.Go(func() error { errs[j] = s.apply(ctx, w, d.Owned); return nil })
		}
		_ = g.Wait()
		for j, w := range batch {
			err := errs[j]
			if err == errSkipped {
				continue
			}
			var conflict *ConflictError
			if errors.As(err, &conflict) {
				key := w.Group
				if key == "" {
					key = conflict.Kind + " " + conflict.Ref
				}
				res.Conflicts[key] = conflict.Error()
				continue
			}
			if err != nil {
				res.Failed = &w
				return res, err
			}
			if w.Artifact != nil {
				if err := s.storeArtifact(ctx, w.Object, w.Artifact); err != nil {
					res.Failed = &w
					return res, err
				}
			}
			if w.Request && d.Request != "" {
				requests = append(requests, w.Object)
			}
		}
	}
	for _, o := range requests {
		if err := RequestReconcile(ctx, s.Client, o.DeepCopyObject().(ctrl.Object), d.Request, plan.FieldOwner); err != nil {
			return res, err
		}
	}
	for _, o := range d.Prune {
		if anyConflict(res.Conflicts, d.PruneNeeds) {
			break
		}
		if d.Orphan[plan.ObservedKey(plan.KindOf(o), o.GetNamespace(), o.GetName())] {
			if err := suspendForDeletion(ctx, s.Client, o); err != nil {
				return res, fmt.Errorf("suspending %s %s before deleting it: %w", plan.KindOf(o), plan.ObjectRef(o), err)
			}
		}
		if err := DeleteExactly(ctx, s.Client, o); err != nil {
			return res, fmt.Errorf("deleting %s %s: %w", plan.KindOf(o), plan.ObjectRef(o), err)
		}
		res.Pruned = append(res.Pruned, o)
	}
	res.Observed = s.Observe(ctx, d.Observe)
	if d.Nudges != nil {
		for _, n := range d.Nudges(res.Observed) {
			if anyConflict(res.Conflicts, n.Needs) {
				continue
			}
			if err := RequestReconcile(ctx, s.Client, n.Object, n.Token, plan.FieldOwner); err != nil {
				return res, &NudgeError{Err: err}
			}
		}
	}
	return res, nil
}

// NudgeError is a nudge that failed: everything was written and read
// back; only asking Flux to look again now did not happen.
type NudgeError struct{ Err error }

func (e *NudgeError) Error() string { return e.Err.Error() }
func (e *NudgeError) Unwrap() error { return e.Err }

// errSkipped marks a write of a batch that a conflict before it skipped.
var errSkipped = errors.New("skipped")

func skipped(conflicts map[string]string, w plan.Write) bool {
	if _, bad := conflicts[w.Group]; w.Group != "" && bad {
		return true
	}
	return anyConflict(conflicts, w.Needs)
}

// anyConflict tells whether one of groups conflicted.
func anyConflict(conflicts map[string]string, groups []string) bool {
	for _, g := range groups {
		if _, bad := conflicts[g]; bad {
			return true
		}
	}
	return false
}

// apply applies one write if it changed, refusing someone else's object.
func (s Syncer) apply(ctx context.Context, w plan.Write, owned func(*unstructured.Unstructured, plan.Object) error) error {
	reader := ctrl.Reader(s.Client)
	if w.Uncached && s.Reader != nil {
		if s.Cached != nil && s.Cached(w.Object) && CachedUnchanged(ctx, s.Client, w.Object, plan.HashAnnotation) {
			return nil
		}
		reader = s.Reader
	}
	err := IfChanged(ctx, reader, s.Client, w.Object, plan.HashAnnotation, plan.FieldOwner, func(existing *unstructured.Unstructured) error {
		if owned == nil {
			return nil
		}
		if err := owned(existing, w.Object); err != nil {
			return &ConflictError{Kind: existing.GetKind(), Ref: plan.ObjectRef(existing), Err: err}
		}
		return nil
	})
	if apimeta.IsNoMatchError(err) {
		return fmt.Errorf("the API %s is not served on this cluster; for a Flux kind, install Flux (source, kustomize and helm controllers): %w",
			w.Object.GetObjectKind().GroupVersionKind(), err)
	}
	return err
}

// Observe reads objs (empty objects of their kind, with namespace and
// name) through the cache; a missing one, or one that cannot be read, has
// no entry.
func (s Syncer) Observe(ctx context.Context, objs []plan.Object) plan.Observed {
	out := plan.Observed{}
	for _, o := range objs {
		kind := plan.KindOf(o)
		got := o.DeepCopyObject().(ctrl.Object)
		if err := s.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), got); err != nil {
			continue
		}
		out[plan.ObservedKey(kind, o.GetNamespace(), o.GetName())] = got
	}
	return out
}

// storeArtifact stores an ExternalArtifact's content, if it is not stored
// yet, and points the object's status at it, Ready.
func (s Syncer) storeArtifact(ctx context.Context, obj ctrl.Object, a *plan.Artifact) error {
	if s.Artifacts == nil {
		return fmt.Errorf("ExternalArtifact %s: the manager runs without artifact storage (--artifact-storage-path)", plan.ObjectRef(obj))
	}
	key := ctrl.ObjectKeyFromObject(obj)
	current := &sourcev1.ExternalArtifact{}
	if err := s.Client.Get(ctx, key, current); err != nil {
		if !apierrors.IsNotFound(err) || s.Reader == nil {
			return fmt.Errorf("reading ExternalArtifact %s: %w", key, err)
		}
		// Created a moment ago: the cache has not seen it yet.
		if err := s.Reader.Get(ctx, key, current); err != nil {
			return fmt.Errorf("reading ExternalArtifact %s: %w", key, err)
		}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	art, err := s.Artifacts.Artifact(sourcev1.ExternalArtifactKind, key.Namespace, key.Name, a.Data, now())
	if err != nil {
		return err
	}
	if old := current.Status.Artifact; old != nil && old.Digest == art.Digest && old.URL == art.URL {
		art.LastUpdateTime = old.LastUpdateTime
	}
	if !s.Artifacts.Exists(art) {
		if err := s.Artifacts.Store(art, a.Data); err != nil {
			return fmt.Errorf("storing the artifact of ExternalArtifact %s: %w", key, err)
		}
	}
	want := current.DeepCopy()
	want.Status.Artifact = &art
	apimeta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: current.Generation,
		Message: fmt.Sprintf("stored revision %s of %s", art.Revision, a.Of),
	})
	if equality.Semantic.DeepEqual(current.Status, want.Status) {
		return nil
	}
	if err := s.Client.Status().Patch(ctx, want, ctrl.MergeFrom(current), ctrl.FieldOwner(plan.FieldOwner)); err != nil {
		return fmt.Errorf("updating the status of ExternalArtifact %s: %w", key, err)
	}
	return nil
}

// suspendForDeletion sets spec.suspend on a Flux applier about to be
// deleted: kustomize-controller and helm-controller then let it go
// without pruning or uninstalling what it applied.
func suspendForDeletion(ctx context.Context, c ctrl.Client, o plan.Object) error {
	obj, ok := o.DeepCopyObject().(ctrl.Object)
	if !ok {
		return fmt.Errorf("%T is not an object", o)
	}
	err := c.Patch(ctx, obj, ctrl.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)), ctrl.FieldOwner(plan.FieldOwner))
	return ctrl.IgnoreNotFound(err)
}
