// Package plan is the vocabulary every kind's plan speaks, and nothing
// else: what a reconcile wants written (Desired: ordered Writes, what to
// prune, observe and nudge), what a sync saw (Result), and why a
// reconcile stops before it writes anything new (Refusal). It imports no
// controller-runtime package, so the plan of every kind — the pure step
// from gathered facts to desired Flux objects, shared by the manager and
// the CLI — can be built and tested without a client.
//
// The four stages of a controller, each with one home:
//   - facts (I/O, per kind, internal/controller/<kind>/facts.go): read the
//     CR's inputs into the kind's Facts;
//   - plan (pure, internal/plan/<kind>): Plan(Facts) (Desired, error),
//     refusals included;
//   - sync (shared I/O, internal/controller/apply.Syncer): write Desired,
//     observe what Flux made of it;
//   - fold (pure, internal/plan/<kind>): what the sync observed → the
//     CR's conditions and status, once, at the end of every reconcile.
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what a plan writes, observes or prunes: a Kubernetes object
// with metadata (controller-runtime's client.Object has the same method
// set, so each converts to the other).
type Object interface {
	metav1.Object
	runtime.Object
}

// Owner is a Capwright object a fold sets conditions on.
type Owner interface {
	Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// Next is when a reconcile looks again, as a fold decides it: after
// RequeueAfter (0: not before something changes), or, with Hold, nothing
// is written at all this time.
type Next struct {
	RequeueAfter time.Duration
	Hold         bool
}

// FieldOwner is Capwright's one field manager: of every object its
// controllers apply, of the annotations they set on Flux objects, and of
// their own status.
const FieldOwner = "capwright"

// HashAnnotation holds, on every object Capwright applies, the hash of
// what it last applied (AsApplied), so a resync with nothing changed writes
// nothing, and a field it stopped setting is still removed by the next
// apply.
const HashAnnotation = "capwright.io/applied-hash"

// Write is one object of a Desired set.
type Write struct {
	Object Object
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
	// Batch, when set, applies the write side by side with the writes
	// next to it of the same Batch (objects that do not need each other,
	// such as a ServiceAccount and the binding that names it), each
	// still skipped by a conflict before the batch.
	Batch string
}

// Artifact is an ExternalArtifact's packed content.
type Artifact struct {
	Data []byte
	// Of says what it holds, for the ExternalArtifact's Ready message
	// ("stored revision sha256:… of <Of>", as `flux get` shows it).
	Of string
}

// Nudge asks Flux to reconcile an object now (apply.RequestReconcile), once per
// Token.
type Nudge struct {
	Object Object
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
	Owned func(existing *unstructured.Unstructured, desired Object) error
	// Request is the reconcile.fluxcd.io/requestedAt token the owner got,
	// passed on to the writes that ask for it ("" for none).
	Request string
	// Prune are objects the owner no longer wants, as they were read:
	// each is deleted by UID (apply.DeleteExactly), after the writes.
	Prune []Object
	// PruneNeeds are groups whose conflict skips the pruning (an owner
	// whose own namespace is someone else's deletes nothing).
	PruneNeeds []string
	// Orphan are those of Prune, by ObservedKey, whose deletion leaves
	// what they applied in place: a Flux applier whose target cannot be
	// reached any more (its cluster's kubeconfig Secret is gone), so that
	// Flux's finalizer, which could only retry a prune forever, lets it
	// go. It is suspended before it is deleted.
	Orphan map[string]bool
	// Observe are the objects read back once everything is written
	// (empty objects of their kind, with namespace and name): the fold
	// works from them.
	Observe []Object
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
	Pruned []Object
}

// Observed are objects read back after a sync, by kind and reference; a
// missing object has no entry.
type Observed map[string]Object

// ObservedKey is the key of obj in Observed.
func ObservedKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// Get is the observed object of kind namespace/name, nil when it is
// missing.
func (o Observed) Get(kind, namespace, name string) Object {
	return o[ObservedKey(kind, namespace, name)]
}

// AsApplied is obj as it will be applied: unstructured, without status and
// creationTimestamp, its hash in the annotation hashAnnotation.
func AsApplied(obj Object, hashAnnotation string) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	want := &unstructured.Unstructured{Object: u}
	delete(want.Object, "status")
	unstructured.RemoveNestedField(want.Object, "metadata", "creationTimestamp")
	claimSuspend(want)
	claimFinalizer(want)
	data, err := json.Marshal(want.Object)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	annotations := want.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[hashAnnotation] = hex.EncodeToString(sum[:8])
	want.SetAnnotations(annotations)
	return want, nil
}

// claimSuspend makes a Flux object's spec.suspend explicit when it is
// false (Go drops it as empty): applied, Capwright then owns the field, so
// a person or a tenant who suspends a generated Flux object sees it
// resumed at once, instead of Flux silently leaving it alone.
func claimSuspend(want *unstructured.Unstructured) {
	if !strings.HasSuffix(want.GroupVersionKind().Group, ".toolkit.fluxcd.io") {
		return
	}
	spec, ok := want.Object["spec"].(map[string]any)
	if !ok {
		return
	}
	if _, set := spec["suspend"]; set {
		return
	}
	switch want.GetKind() {
	case "OCIRepository", "Kustomization", "HelmRelease":
		spec["suspend"] = false
	}
}

// fluxFinalizer is the finalizer source-, kustomize- and helm-controller
// put on the objects they reconcile (sourcev1.SourceFinalizer,
// kustomizev1.KustomizationFinalizer, helmv2.HelmReleaseFinalizer).
const fluxFinalizer = "finalizers.fluxcd.io"

// claimFinalizer creates a Flux object with its controller's finalizer.
// Source-, kustomize- and helm-controller add finalizers.fluxcd.io on their
// first reconcile of an object and then requeue it through their rate
// limiter (--min-retry-delay, 750 ms by default) before doing any work;
// created with it, a provider's artifact is fetched, and its Kustomization
// applied, at once. Flux removes it on deletion as always, after its
// clean-up (a Kustomization's prune).
func claimFinalizer(want *unstructured.Unstructured) {
	if !strings.HasSuffix(want.GroupVersionKind().Group, ".toolkit.fluxcd.io") {
		return
	}
	switch want.GetKind() {
	case "OCIRepository", "Kustomization", "HelmRelease":
		want.SetFinalizers([]string{fluxFinalizer})
	}
}

// ObjectRef is namespace/name, or name for a cluster-scoped object.
func ObjectRef(o interface {
	GetNamespace() string
	GetName() string
}) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// kindOf is obj's kind, from its GVK or, for a typed object without one,
// its Go type's name.
func kindOf(obj Object) string {
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
func KindOf(obj Object) string { return kindOf(obj) }

// Refusal is why a reconcile stops before it writes anything new: the
// one way every kind refuses (as source-controller's internal/error
// Stalling, Waiting and Generic errors). It names the condition it sets,
// with what status, reason and message, and when to look again. A kind
// returns it from its facts or its plan; its fold puts it on the
// condition, and the shell turns it into the outcome (Stalled or a
// requeue) without logging it as an error.
type Refusal struct {
	// Condition is the kind's condition the refusal is about.
	Condition string
	// Status is False for a problem, Unknown while waiting.
	Status          metav1.ConditionStatus
	Reason, Message string
	// RetryAfter is when to look again; 0 leaves it to the kind's resync.
	RetryAfter time.Duration
	// Stalls: the refusal cannot lift itself (only a change of the spec,
	// or of what it references, can): kstatus calls the object Failed.
	Stalls bool
}

func (r *Refusal) Error() string { return r.Message }

// Stalling is a refusal only a change of the spec, or of what it
// references, lifts: the condition False, the object Stalled.
func Stalling(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionFalse, Reason: reason, Message: message, RetryAfter: retry, Stalls: true}
}

// Failing is a problem that may pass by itself (a registry down,
// credentials refused): the condition False, the object Reconciling, and
// looked at again after retry.
func Failing(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionFalse, Reason: reason, Message: message, RetryAfter: retry}
}

// Waiting is nothing wrong yet: the object waits for another one. The
// condition Unknown, the object Reconciling.
func Waiting(condition, reason, message string, retry time.Duration) *Refusal {
	return &Refusal{Condition: condition, Status: metav1.ConditionUnknown, Reason: reason, Message: message, RetryAfter: retry}
}

// Waits tells whether the refusal only waits.
func (r *Refusal) Waits() bool { return r.Status == metav1.ConditionUnknown }

// AsRefusal is the refusal err is or wraps.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}
