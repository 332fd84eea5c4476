package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/render"
)

// FieldOwner is the field manager of everything the controllers write,
// Capwright's one field manager.
const FieldOwner = "capwright"

// appliedHashAnnotation holds the hash of what was last applied to a Flux
// object of a backend (apply.IfChanged).
const appliedHashAnnotation = "clusters.capwright.io/applied-hash"

// PausedAnnotation pauses one object, as Cluster API's own do.
const PausedAnnotation = "cluster.x-k8s.io/paused"

// clusterGVK is Cluster API's Cluster, in the version Capwright reads.
var clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}

// Shared is what both controllers need.
type Shared struct {
	// Client reads the contract kinds and Flux objects from the cache,
	// and writes.
	Client ctrl.Client
	// Reader reads without the cache: Secrets, and status objects of
	// kinds the manager does not watch.
	Reader   ctrl.Reader
	Recorder kuberecorder.EventRecorder
	Metrics  *metrics.Recorder
	// Mirrors are the manager's registry mirror rules, applied to
	// backend URLs.
	Mirrors catalog.Mirrors
	// ResyncInterval is how often an unchanged object is looked at again.
	ResyncInterval time.Duration
	// ClusterAPIServed says whether Clusters are served now; once an
	// object of either kind exists, it is asked until they are, and they
	// are watched from then on. Without it they are watched from the
	// start.
	ClusterAPIServed func() (bool, error)
	// clusterWatch starts the Cluster watches (nil when they run from the
	// start).
	clusterWatch *shell.WhenServed

	exprs   expressionCache
	watches *statusWatches
}

func (s *Shared) resync() time.Duration {
	if s.ResyncInterval > 0 {
		return s.ResyncInterval
	}
	return 10 * time.Minute
}

// pollWhileWaiting is how soon an object waiting for something that is
// not watched (a status object of a kind the manager may not watch, a
// backend Secret) looks again.
const pollWhileWaiting = 15 * time.Second

// subject is a contract object as the common steps see it.
type subject struct {
	obj        shell.Object
	kind       string
	backend    *clustersv1alpha1.Backend
	statusFrom *clustersv1alpha1.StatusFrom
	// version is the Kubernetes version for ${KUBERNETES_VERSION}.
	version       func(clusterFacts) string
	backendStatus *[]clustersv1alpha1.BackendStatus
	// endpoint is the object's spec.controlPlaneEndpoint.
	endpoint *clustersv1alpha1.APIEndpoint
}

func (s subject) ref() string { return s.kind + " " + s.obj.GetNamespace() + "/" + s.obj.GetName() }

func (s subject) set(typ string, status metav1.ConditionStatus, reason, message string) {
	conds := s.obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: message, ObservedGeneration: s.obj.GetGeneration()})
	s.obj.SetConditions(conds)
}

func (s subject) condition(typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(s.obj.GetConditions(), typ)
}

// initConditions sets the conditions of types that are missing to
// Unknown, and Deleting to False on an object not being deleted.
func initConditions(s subject, types []string) {
	for _, t := range types {
		if s.condition(t) == nil {
			s.set(t, metav1.ConditionUnknown, clustersv1alpha1.ReconcilingReason, "not observed yet")
		}
	}
	if s.obj.GetDeletionTimestamp().IsZero() {
		s.set(clustersv1alpha1.DeletingCondition, metav1.ConditionFalse, clustersv1alpha1.NotDeletingReason, "")
	}
}

// prepared is what the common steps found and wrote.
type prepared struct {
	cluster clusterFacts
	vars    map[string]string
	// objects are the rendered Flux objects (nil without a backend).
	objects *render.ContractObjects
	// backend is the fold of the Flux objects.
	backend health.BackendResult
	// statusName is statusFrom.name, substituted.
	statusName string
	exprs      *expressions
	// stale is set when the cache has not seen the applier just written.
	stale bool
}

// halt is an outcome that ends the steps early.
type halt struct{ outcome shell.Outcome }

func (h *halt) Error() string { return "halted" }

// halted is the outcome of steps that end with err: a *halt's own outcome
// (conditions set, no error for the shell to retry), else err.
func halted(err error) (shell.Outcome, error) {
	var h *halt
	if errors.As(err, &h) {
		return h.outcome, nil
	}
	return shell.Outcome{}, err
}

// prepare runs the steps both kinds share: find the owning Cluster, honour
// a pause, render the backend, write its Flux objects and fold their
// health into BackendReady. A *halt error says the steps end here with
// its outcome (conditions set).
func (s *Shared) prepare(ctx context.Context, sub subject, request string) (*prepared, error) {
	cluster, err := s.ownerCluster(ctx, sub)
	if err != nil {
		return nil, err
	}
	if cluster == nil {
		msg := "waiting for a Cluster to refer to this " + sub.kind + " (Cluster API then sets itself as its owner)"
		s.waitAll(sub, clustersv1alpha1.WaitingForClusterReason, msg)
		sub.set(clustersv1alpha1.PausedCondition, metav1.ConditionFalse, clustersv1alpha1.NotPausedReason, "")
		return nil, &halt{shell.Outcome{Result: reconcile.Result{RequeueAfter: s.resync()}}}
	}
	if paused, why := isPaused(sub.obj, *cluster); paused {
		// Paused=True is written once; then nothing at all until the
		// pause ends, a new generation included.
		if c := sub.condition(clustersv1alpha1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
			return nil, &halt{shell.Outcome{Hold: true}}
		}
		sub.set(clustersv1alpha1.PausedCondition, metav1.ConditionTrue, clustersv1alpha1.PausedReason, why)
		return nil, &halt{shell.Outcome{}}
	}
	sub.set(clustersv1alpha1.PausedCondition, metav1.ConditionFalse, clustersv1alpha1.NotPausedReason, "")
	p := &prepared{cluster: *cluster, vars: cluster.variables(sub.version(*cluster))}
	if sub.backend == nil {
		return p, nil
	}
	backend, err := substituteBackend(*sub.backend, p.vars)
	if err != nil {
		return nil, s.invalid(sub, err)
	}
	if sub.statusFrom != nil {
		if p.statusName, err = substitute("spec.statusFrom.name", sub.statusFrom.Name, p.vars); err != nil {
			return nil, s.invalid(sub, err)
		}
		if p.exprs, err = s.exprs.compile(sub.statusFrom); err != nil {
			return nil, s.invalid(sub, err)
		}
	}
	url := backendURL(backend)
	if to, ok := s.Mirrors.Rewrite(strings.TrimPrefix(url, "oci://")); ok {
		url = "oci://" + to
	}
	p.objects, err = render.ContractBackend(render.ContractInput{Owner: sub.obj, Kind: sub.kind, Cluster: cluster.Name, Backend: backend, URL: url})
	if err != nil {
		return nil, s.invalid(sub, err)
	}
	for _, o := range p.objects.Objects() {
		err := apply.IfChanged(ctx, s.Client, s.Client, o, appliedHashAnnotation, FieldOwner, func(existing *unstructured.Unstructured) error {
			if !render.ControlledBy(existing, sub.obj.GetUID()) {
				return &conflictError{kind: existing.GetKind(), ref: apply.ObjectRef(existing)}
			}
			return nil
		})
		var conflict *conflictError
		if errors.As(err, &conflict) {
			msg := fmt.Sprintf("%s %s exists and is not this %s's: Capwright changes nothing; delete or rename it", conflict.kind, conflict.ref, sub.kind)
			sub.set(clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.ObjectConflictReason, msg)
			return nil, &halt{shell.Stalled(clustersv1alpha1.ObjectConflictReason, msg, s.resync())}
		}
		if err != nil {
			return nil, err
		}
		if request != "" {
			if err := apply.RequestReconcile(ctx, s.Client, o.DeepCopyObject().(ctrl.Object), request, FieldOwner); err != nil {
				return nil, err
			}
		}
	}
	source, applier, fresh, err := s.observe(ctx, p.objects)
	if err != nil {
		return nil, err
	}
	p.backend = health.FoldBackend(source, applier)
	if !fresh {
		// The cache has not seen what was just applied: its Ready would
		// describe the previous spec (a version not yet rendered).
		p.backend.Status, p.backend.Reason = metav1.ConditionUnknown, clustersv1alpha1.InstallingReason
		p.backend.Message = "waiting to see the new spec of " + applier.Kind + " " + applier.Namespace + "/" + applier.Name
		p.stale = true
	}
	*sub.backendStatus = p.backend.Objects
	sub.set(clustersv1alpha1.BackendReadyCondition, p.backend.Status, p.backend.Reason, p.backend.Message)
	return p, nil
}

type conflictError struct{ kind, ref string }

func (e *conflictError) Error() string { return e.kind + " " + e.ref + " is not Capwright's" }

// waitAll says on every condition of the steps that the object waits.
func (s *Shared) waitAll(sub subject, reason, message string) {
	for _, t := range []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.AvailableCondition} {
		if sub.condition(t) != nil {
			sub.set(t, metav1.ConditionFalse, reason, message)
		}
	}
}

// invalid refuses a spec that cannot be rendered: the message names the
// field; nothing is written.
func (s *Shared) invalid(sub subject, err error) error {
	msg := sub.ref() + ": " + err.Error()
	s.waitAll(sub, clustersv1alpha1.InvalidSpecReason, msg)
	return &halt{shell.Stalled(clustersv1alpha1.InvalidSpecReason, msg, s.resync())}
}

// ownerCluster is the Cluster that owns the object (Cluster API sets the
// owner reference when a Cluster refers to it), nil while there is none.
func (s *Shared) ownerCluster(ctx context.Context, sub subject) (*clusterFacts, error) {
	for _, ref := range sub.obj.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterGVK.Group || ref.Kind != clusterGVK.Kind {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(clusterGVK)
		if err := s.Client.Get(ctx, ctrl.ObjectKey{Namespace: sub.obj.GetNamespace(), Name: ref.Name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading Cluster %s/%s, the owner of %s: %w", sub.obj.GetNamespace(), ref.Name, sub.ref(), err)
		}
		f := clusterFactsFrom(u)
		return &f, nil
	}
	return nil, nil
}

// isPaused tells whether the object or its Cluster is paused, and why.
func isPaused(obj ctrl.Object, cluster clusterFacts) (bool, string) {
	if cluster.Paused {
		return true, "Cluster " + cluster.Namespace + "/" + cluster.Name + " is paused (spec.paused)"
	}
	if _, ok := obj.GetAnnotations()[PausedAnnotation]; ok {
		return true, "the object carries the " + PausedAnnotation + " annotation"
	}
	return false, ""
}

// substituteBackend is the backend with every variable substituted.
func substituteBackend(b clustersv1alpha1.Backend, vars map[string]string) (clustersv1alpha1.Backend, error) {
	out := *b.DeepCopy()
	if c := out.Chart; c != nil && c.Values != nil && len(c.Values.Raw) > 0 {
		var values any
		if err := json.Unmarshal(c.Values.Raw, &values); err != nil {
			return out, fmt.Errorf("spec.backend.chart.values: %w", err)
		}
		values, err := substituteValues("spec.backend.chart.values", values, vars)
		if err != nil {
			return out, err
		}
		if c.Values, err = render.ContractValues(values); err != nil {
			return out, err
		}
	}
	if k := out.Kustomize; k != nil {
		subst := map[string]string{}
		for name, value := range k.Substitute {
			v, err := substitute("spec.backend.kustomize.substitute."+name, value, vars)
			if err != nil {
				return out, err
			}
			subst[name] = v
		}
		for name, value := range vars {
			subst[name] = value
		}
		k.Substitute = subst
	}
	return out, nil
}

func backendURL(b clustersv1alpha1.Backend) string {
	if b.Chart != nil {
		return b.Chart.URL
	}
	return b.Kustomize.URL
}

// observe reads the backend's Flux objects from the cache; fresh says
// that the cached applier carries the spec just rendered.
func (s *Shared) observe(ctx context.Context, objs *render.ContractObjects) (source, applier health.Observation, fresh bool, err error) {
	want, err := apply.AsApplied(objs.Applier(), appliedHashAnnotation)
	if err != nil {
		return source, applier, false, err
	}
	hash := want.GetAnnotations()[appliedHashAnnotation]
	fresh = true
	current := func(o ctrl.Object) {
		if o.GetAnnotations()[appliedHashAnnotation] != hash {
			fresh = false
		}
	}
	key := ctrl.ObjectKeyFromObject(objs.Source)
	var repo sourcev1.OCIRepository
	switch err := s.Client.Get(ctx, key, &repo); {
	case apierrors.IsNotFound(err):
		source = health.Observation{Kind: sourcev1.OCIRepositoryKind, Name: key.Name, Namespace: key.Namespace, Missing: true}
	case err != nil:
		return source, applier, false, err
	default:
		source = health.ObserveOCIRepository(&repo)
	}
	switch {
	case objs.HelmRelease != nil:
		var hr helmv2.HelmRelease
		switch err := s.Client.Get(ctx, key, &hr); {
		case apierrors.IsNotFound(err):
			applier = health.Observation{Kind: helmv2.HelmReleaseKind, Name: key.Name, Namespace: key.Namespace, Missing: true}
			fresh = false
		case err != nil:
			return source, applier, false, err
		default:
			applier = health.ObserveHelmRelease(&hr)
			current(&hr)
		}
	default:
		var ks kustomizev1.Kustomization
		switch err := s.Client.Get(ctx, key, &ks); {
		case apierrors.IsNotFound(err):
			applier = health.Observation{Kind: kustomizev1.KustomizationKind, Name: key.Name, Namespace: key.Namespace, Missing: true}
			fresh = false
		case err != nil:
			return source, applier, false, err
		default:
			applier = health.ObserveKustomization(&ks)
			current(&ks)
		}
	}
	return source, applier, fresh, nil
}

// readView reads the status view of the backend: ok is false, with the
// reason and message why, while it cannot be read.
func (s *Shared) readView(ctx context.Context, sub subject, p *prepared) (v view, ok bool, reason, message string, retry time.Duration) {
	gvk := schema.FromAPIVersionAndKind(sub.statusFrom.APIVersion, sub.statusFrom.Kind)
	watched := s.watches.ensure(ctx, gvk)
	retry = s.resync()
	if !watched {
		retry = pollWhileWaiting
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	reader := ctrl.Reader(s.Reader)
	if watched {
		reader = s.Client
	}
	key := ctrl.ObjectKey{Namespace: sub.obj.GetNamespace(), Name: p.statusName}
	ref := fmt.Sprintf("%s %s/%s", gvk.Kind, key.Namespace, key.Name)
	if err := reader.Get(ctx, key, u); err != nil {
		if apierrors.IsForbidden(err) {
			return v, false, clustersv1alpha1.StatusObjectForbiddenReason,
				fmt.Sprintf("the manager may not read %s (spec.statusFrom): grant it get, list and watch on %s with a ClusterRole labelled clusters.capwright.io/aggregate-to-manager: \"true\"", ref, gvk.GroupKind()), pollWhileWaiting
		}
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return v, false, clustersv1alpha1.StatusObjectNotFoundReason,
				ref + " (spec.statusFrom) does not exist yet: the backend creates it; check that spec.statusFrom names what the backend creates", pollWhileWaiting
		}
		return v, false, clustersv1alpha1.StatusObjectNotFoundReason, fmt.Sprintf("reading %s (spec.statusFrom): %v", ref, err), pollWhileWaiting
	}
	v, err := p.exprs.evaluate(ctx, u)
	if err != nil {
		return v, false, clustersv1alpha1.StatusInvalidReason, ref + ": " + err.Error(), retry
	}
	return v, true, "", "", retry
}

// notReady is the reason and message of a backend view that is not
// ready: the backend's own when it gives them.
func notReady(v view, ref string) (string, string) {
	reason, message := v.Reason, v.Message
	if v.Stale {
		// What it says describes an older generation.
		reason = clustersv1alpha1.BackendNotReadyReason
	} else if !isConditionReason(reason) {
		if reason != "" {
			message = strings.TrimSpace(reason + ": " + message)
		}
		reason = clustersv1alpha1.BackendNotReadyReason
	}
	if v.Stale {
		message = strings.TrimSpace(ref + " has not observed its latest generation yet. " + message)
	}
	if message == "" {
		message = ref + " is not ready"
	}
	return reason, message
}

// isConditionReason tells whether s can be a condition reason.
func isConditionReason(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_' || r == ',' || r == ':'):
		default:
			return false
		}
	}
	return true
}

// holdDeletion says whether a deletion waits for a pause to end (the
// object's annotation, or its Cluster's spec.paused: clusterctl move
// pauses before it moves): then the outcome to return, Paused set once
// and nothing written after. It returns the owning Cluster when it is
// still there.
func (s *Shared) holdDeletion(ctx context.Context, sub subject) (*clusterFacts, *shell.Outcome, error) {
	owner, err := s.ownerCluster(ctx, sub)
	if err != nil {
		return nil, nil, err
	}
	facts := clusterFacts{}
	if owner != nil {
		facts = *owner
	}
	paused, why := isPaused(sub.obj, facts)
	if !paused {
		return owner, nil, nil
	}
	if c := sub.condition(clustersv1alpha1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return owner, &shell.Outcome{Hold: true}, nil
	}
	sub.set(clustersv1alpha1.PausedCondition, metav1.ConditionTrue, clustersv1alpha1.PausedReason, why+": the deletion waits")
	return owner, &shell.Outcome{}, nil
}

// finalizeBackend deletes the backend's Flux objects, and tells what is
// still there: Flux uninstalls before they go. Then the status object
// must be gone too.
func (s *Shared) finalizeBackend(ctx context.Context, sub subject) (pending string, err error) {
	name := render.ContractObjectName(sub.kind, sub.obj.GetName())
	key := ctrl.ObjectKey{Namespace: sub.obj.GetNamespace(), Name: name}
	var left []string
	// The applier first: it needs its source to uninstall.
	for _, o := range []ctrl.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &sourcev1.OCIRepository{}} {
		if err := s.Client.Get(ctx, key, o); err != nil {
			if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
				continue
			}
			return "", err
		}
		kind := fmt.Sprintf("%T", o)
		kind = kind[strings.LastIndex(kind, ".")+1:]
		if !render.ControlledBy(o, sub.obj.GetUID()) {
			continue
		}
		left = append(left, kind+" "+key.String())
		if _, isSource := o.(*sourcev1.OCIRepository); isSource && len(left) > 1 {
			continue
		}
		if o.GetDeletionTimestamp().IsZero() {
			if err := apply.DeleteExactly(ctx, s.Client, o); err != nil {
				return "", err
			}
		}
	}
	if len(left) > 0 {
		return "waiting for Flux to uninstall the backend: " + strings.Join(left, ", "), nil
	}
	return "", nil
}
