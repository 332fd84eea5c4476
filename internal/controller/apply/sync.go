package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/fluxartifact"
)

// FieldOwner is Capwright's one field manager: of every object its
// controllers apply, of the annotations they set on Flux objects, and of
// their own status.
const FieldOwner = "capwright"

// HashAnnotation holds, on every object Capwright applies, the hash of
// what it last applied (Desired), so a resync with nothing changed writes
// nothing, and a field it stopped setting is still removed by the next
// apply.
const HashAnnotation = "capwright.io/applied-hash"

// Write is one object of a Desired set.
type Write struct {
	Object ctrl.Object
	// Uncached reads the existing object without the cache: a kind the
	// manager does not watch (a Namespace, a ServiceAccount).
	Uncached bool
	// Artifact, for an ExternalArtifact, is what is stored and served for
	// it once it is applied; its status then points Flux at it.
	Artifact *Artifact
	// Group names who the write is for (a cluster, a namespace's source):
	// when the existing object is not the owner's, the conflict is
	// reported under Group, and every later write that Needs it is
	// skipped. "" reports the conflict under the object's own reference.
	Group string
	// Needs are groups whose conflict skips this write (a cluster's stack
	// needs its namespace's source). A write always needs its own Group.
	Needs []string
	// Request passes Desired.Request on to the object once it is written.
	Request bool
}

// Artifact is an ExternalArtifact's packed content.
type Artifact struct {
	Data []byte
	// Of says what it holds, for the ExternalArtifact's Ready message
	// ("stored revision sha256:… of <Of>", as `flux get` shows it).
	Of string
}

// Nudge asks Flux to reconcile an object now (RequestReconcile), once per
// Token.
type Nudge struct {
	Object ctrl.Object
	Token  string
	// Needs are groups whose conflict skips the nudge (an object that is
	// someone else's is not asked for anything).
	Needs []string
}

// Desired is what one reconcile wants written, in order.
type Desired struct {
	Writes []Write
	// Owned refuses an existing object the owner did not create; nil
	// accepts every object.
	Owned func(existing *unstructured.Unstructured, desired ctrl.Object) error
	// Request is the reconcile.fluxcd.io/requestedAt token the owner got,
	// passed on to the writes that ask for it ("" for none).
	Request string
	// Prune are objects the owner no longer wants, as they were read:
	// each is deleted by UID (DeleteExactly), after the writes.
	Prune []ctrl.Object
	// PruneNeeds are groups whose conflict skips the pruning (an owner
	// whose own namespace is someone else's deletes nothing).
	PruneNeeds []string
	// Observe are the objects read back once everything is written
	// (empty objects of their kind, with namespace and name): the fold
	// works from them.
	Observe []ctrl.Object
	// Nudges, given what was observed, are the Flux objects to ask for a
	// reconcile now (a dependency turned Ready that Flux would only see
	// at its next poll). Asked last.
	Nudges func(Observed) []Nudge
}

// Result is what a Sync did and saw.
type Result struct {
	// Conflicts are the groups (or object references) whose object exists
	// and is not the owner's, with why; nothing of them was written.
	Conflicts map[string]string
	// Observed holds Desired.Observe as read after the writes.
	Observed Observed
	// Failed is the write whose error stopped the sync; nil when none did.
	Failed *Write
	// Pruned are the objects of Desired.Prune deleted (or found gone).
	Pruned []ctrl.Object
}

// Observed are objects read back after a sync, by kind and reference; a
// missing object has no entry.
type Observed map[string]ctrl.Object

// ObservedKey is the key of obj in Observed.
func ObservedKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// Get is the observed object of kind namespace/name, nil when it is
// missing.
func (o Observed) Get(kind, namespace, name string) ctrl.Object {
	return o[ObservedKey(kind, namespace, name)]
}

// ConflictError is an object that exists and is not the owner's.
type ConflictError struct {
	Kind, Ref string
	Err       error
}

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// Syncer writes Desired sets: one field owner, one hash annotation.
type Syncer struct {
	// Client reads the watched kinds from the cache and writes.
	Client ctrl.Client
	// Reader reads without the cache.
	Reader ctrl.Reader
	// Artifacts stores and serves ExternalArtifacts' content; nil refuses
	// a write with an Artifact.
	Artifacts *fluxartifact.Storage
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
func (s Syncer) Sync(ctx context.Context, d Desired) (Result, error) {
	res := Result{Conflicts: map[string]string{}}
	var requests []ctrl.Object
	for _, w := range d.Writes {
		if skipped(res.Conflicts, w) {
			continue
		}
		err := s.apply(ctx, w, d.Owned)
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
	for _, o := range requests {
		if err := RequestReconcile(ctx, s.Client, o.DeepCopyObject().(ctrl.Object), d.Request, FieldOwner); err != nil {
			return res, err
		}
	}
	for _, o := range d.Prune {
		if anyConflict(res.Conflicts, d.PruneNeeds) {
			break
		}
		if err := DeleteExactly(ctx, s.Client, o); err != nil {
			return res, fmt.Errorf("deleting %s %s: %w", kindOf(o), ObjectRef(o), err)
		}
		res.Pruned = append(res.Pruned, o)
	}
	res.Observed = s.Observe(ctx, d.Observe)
	if d.Nudges != nil {
		for _, n := range d.Nudges(res.Observed) {
			if anyConflict(res.Conflicts, n.Needs) {
				continue
			}
			if err := RequestReconcile(ctx, s.Client, n.Object, n.Token, FieldOwner); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func skipped(conflicts map[string]string, w Write) bool {
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
func (s Syncer) apply(ctx context.Context, w Write, owned func(*unstructured.Unstructured, ctrl.Object) error) error {
	reader := ctrl.Reader(s.Client)
	if w.Uncached && s.Reader != nil {
		reader = s.Reader
	}
	err := IfChanged(ctx, reader, s.Client, w.Object, HashAnnotation, FieldOwner, func(existing *unstructured.Unstructured) error {
		if owned == nil {
			return nil
		}
		if err := owned(existing, w.Object); err != nil {
			return &ConflictError{Kind: existing.GetKind(), Ref: ObjectRef(existing), Err: err}
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
func (s Syncer) Observe(ctx context.Context, objs []ctrl.Object) Observed {
	out := Observed{}
	for _, o := range objs {
		kind := kindOf(o)
		got := o.DeepCopyObject().(ctrl.Object)
		if err := s.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), got); err != nil {
			continue
		}
		out[ObservedKey(kind, o.GetNamespace(), o.GetName())] = got
	}
	return out
}

// kindOf is obj's kind, from its GVK or, for a typed object without one,
// its Go type's name.
func kindOf(obj ctrl.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", obj)
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' {
			return t[i+1:]
		}
	}
	return t
}

// KindOf is obj's kind (its GVK's, else its Go type's name).
func KindOf(obj ctrl.Object) string { return kindOf(obj) }

// storeArtifact stores an ExternalArtifact's content, if it is not stored
// yet, and points the object's status at it, Ready.
func (s Syncer) storeArtifact(ctx context.Context, obj ctrl.Object, a *Artifact) error {
	if s.Artifacts == nil {
		return fmt.Errorf("ExternalArtifact %s: the manager runs without artifact storage (--artifact-storage-path)", ObjectRef(obj))
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
	if err := s.Client.Status().Patch(ctx, want, ctrl.MergeFrom(current), ctrl.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("updating the status of ExternalArtifact %s: %w", key, err)
	}
	return nil
}
