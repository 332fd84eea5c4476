package contract

import (
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
)

// Observed is what the sync of a contract object wrote and saw, as far
// as it got: the fold folds only what is there.
type Observed struct {
	// Synced is set once the backend's Flux objects are written and read
	// back (Flux).
	Synced bool
	// Conflict, when set, is why a Flux object of the backend is not the
	// object's: nothing more was written or read.
	Conflict string
	// Flux are the backend's Flux objects as read after the writes.
	Flux plan.Observed
	// View is the backend's status view; nil when it was not read.
	View *ViewRead
	// Kubeconfig is what publishing a control plane's kubeconfig found;
	// nil until that step is done.
	Kubeconfig *KubeconfigSeen
}

// View is a backend's normalized status, as statusFrom's expressions
// read it.
type View struct {
	Ready    bool
	Endpoint clustersv1alpha1.APIEndpoint
	Version  string
	Reason   string
	Message  string
	// Stale is set when the object's status.observedGeneration is behind
	// its generation: it is not ready whatever it says.
	Stale bool
}

// ViewRead is a status view read: OK is false, with the reason and
// message why, while it cannot be read; Retry is when to look again.
type ViewRead struct {
	View
	OK              bool
	Reason, Message string
	Retry           time.Duration
}

// Up tells whether the view was read and says ready.
func (v *ViewRead) Up() bool { return v != nil && v.OK && v.Ready }

// KubeconfigSeen is the outcome of publishing the kubeconfig once the
// view is up: Reason says why it is not published ("" when it is).
type KubeconfigSeen struct {
	Reason, Message string
}

// BackendOf folds the backend's Flux objects as the sync read them back
// (health.FoldBackend), previous being the object's status.backend before
// this fold. stale says the cache has not seen the applier
// just written: its Ready would describe the previous spec (a version not
// yet rendered), so BackendReady is Unknown until it has.
func BackendOf(d Desired, flux plan.Observed, previous []clustersv1alpha1.BackendStatus) (res health.BackendResult, stale bool) {
	ns, name := d.Objects.Source.Namespace, d.Objects.Source.Name
	source := health.Observe(flux.Get(sourcev1.OCIRepositoryKind, ns, name), sourcev1.OCIRepositoryKind, ns, name)
	kind := kustomizev1.KustomizationKind
	if d.Objects.HelmRelease != nil {
		kind = helmv2.HelmReleaseKind
	}
	obj := flux.Get(kind, ns, name)
	applier := health.Observe(obj, kind, ns, name)
	fresh := obj != nil && obj.GetAnnotations()[plan.HashAnnotation] == d.AppliedHash
	res = health.FoldBackend(source, applier, previous)
	res.Message += pinHint(d, res)
	if !fresh {
		res.Status, res.Reason = metav1.ConditionUnknown, clustersv1alpha1.InstallingReason
		res.Message = "waiting to see the new spec of " + applier.Kind + " " + applier.Namespace + "/" + applier.Name
	}
	return res, !fresh
}

// pinHint says what to do when the source fails because the registry
// does not hold the digest the backend pins (spec.backend.*.digest):
// Flux's message names the registry's answer, not the field to fix.
// Nothing for any other failure, or without a pin.
func pinHint(d Desired, res health.BackendResult) string {
	src := d.Objects.Source
	if src.Spec.Reference == nil || src.Spec.Reference.Digest == "" || res.Status != metav1.ConditionFalse ||
		res.Reason != sourcev1.OCIPullFailedReason || !strings.Contains(res.Message, src.Spec.Reference.Digest) {
		return ""
	}
	lower := strings.ToLower(res.Message)
	if !strings.Contains(lower, "manifest unknown") && !strings.Contains(lower, "manifest_unknown") && !strings.Contains(lower, "not found") {
		return ""
	}
	field, ref := "spec.backend.kustomize.digest", src.Spec.URL+":"+src.Spec.Reference.Tag
	if d.Objects.HelmRelease != nil {
		field = "spec.backend.chart.digest"
	}
	return fmt.Sprintf("; %s pins %s, which %s does not hold: set it to the digest of the manifest to install (`crane digest %s`), or remove it to follow the tag",
		field, src.Spec.Reference.Digest, src.Spec.URL, strings.TrimPrefix(ref, "oci://"))
}

// refusedConditions are the conditions a refusal of the plan sets, where
// the kind has them.
var refusedConditions = []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.AvailableCondition}

// folded is the part of a fold both kinds share: the plan's refusals and
// pause, Paused, a conflict, and BackendReady with each Flux object's
// state. done says the fold ends there, with out and err.
type folded struct {
	backend health.BackendResult
	stale   bool
	out     plan.Next
	err     error
	done    bool
}

func foldShared(obj plan.Owner, backendStatus *[]clustersv1alpha1.BackendStatus, f Facts, d *Desired, o Observed, err error) folded {
	resync := plan.Next{RequeueAfter: f.Resync}
	if d == nil {
		// The facts could not be read, or the plan refused.
		r, refused := plan.AsRefusal(err)
		if !refused {
			return folded{err: err, done: true}
		}
		for _, t := range refusedConditions {
			if conditions.Get(obj, t) != nil {
				conditions.Set(obj, t, r.Status, r.Reason, r.Message)
			}
		}
		conditions.False(obj, clustersv1alpha1.PausedCondition, clustersv1alpha1.NotPausedReason, "")
		return folded{out: resync, err: err, done: true}
	}
	if d.Pause != nil {
		if d.Pause.Hold {
			return folded{out: plan.Next{Hold: true}, done: true}
		}
		conditions.True(obj, clustersv1alpha1.PausedCondition, clustersv1alpha1.PausedReason, d.Pause.Message)
		return folded{done: true}
	}
	conditions.False(obj, clustersv1alpha1.PausedCondition, clustersv1alpha1.NotPausedReason, "")
	if d.Objects == nil {
		return folded{err: err, done: err != nil}
	}
	if o.Conflict != "" {
		r := plan.Stalling(clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.ObjectConflictReason, o.Conflict, 0)
		conditions.Set(obj, r.Condition, r.Status, r.Reason, r.Message)
		return folded{out: resync, err: r, done: true}
	}
	if !o.Synced {
		return folded{err: err, done: true}
	}
	res := folded{err: err}
	res.backend, res.stale = BackendOf(*d, o.Flux, *backendStatus)
	*backendStatus = res.backend.Objects
	conditions.Set(obj, clustersv1alpha1.BackendReadyCondition, res.backend.Status, res.backend.Reason, res.backend.Message)
	return res
}

// FoldCluster sets a CapwrightCluster's conditions and contract fields
// from its facts, its plan and what the sync saw, and says what the
// shell does next. It runs once at the end of every reconcile, err being
// what stopped it early (a refusal included).
func FoldCluster(c *clustersv1alpha1.CapwrightCluster, f Facts, d *Desired, o Observed, err error) (plan.Next, error) {
	s := foldShared(c, &c.Status.Backend, f, d, o, err)
	if s.done {
		return s.out, s.err
	}
	requeue := f.Resync
	if d.Objects == nil {
		conditions.True(c, clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.SucceededReason,
			"no backend: the infrastructure is provided with the control plane")
		c.Status.Initialization.Provisioned = ptr.To(true)
		return plan.Next{RequeueAfter: requeue}, nil
	}
	ready := s.backend.Status == metav1.ConditionTrue
	if v := o.View; ready && c.Spec.StatusFrom != nil && v != nil {
		requeue = min(requeue, v.Retry)
		reason, message := v.Reason, v.Message
		if v.OK && !v.Ready {
			reason, message = notReady(v.View, statusRef(f, *d))
		}
		if !v.Up() {
			ready = false
			conditions.False(c, clustersv1alpha1.BackendReadyCondition, reason, message)
		}
	}
	if err != nil {
		return plan.Next{}, err
	}
	if ready {
		c.Status.Initialization.Provisioned = ptr.To(true)
	} else {
		requeue = min(requeue, PollWhileWaiting)
	}
	if s.stale {
		requeue = min(requeue, time.Second)
	}
	return plan.Next{RequeueAfter: requeue}, nil
}

// FoldControlPlane sets a CapwrightControlPlane's conditions and
// contract fields (initialization, version) from its facts, its plan and
// what the sync saw — the backend, its status view, the kubeconfig, the
// endpoint it wrote — and says what the shell does next. It runs once
// at the end of every reconcile, err being what stopped it early (a
// refusal included).
func FoldControlPlane(cp *clustersv1alpha1.CapwrightControlPlane, f Facts, d *Desired, o Observed, err error) (plan.Next, error) {
	s := foldShared(cp, &cp.Status.Backend, f, d, o, err)
	if s.done {
		return s.out, s.err
	}
	v := o.View
	if v == nil {
		v = &ViewRead{Retry: f.Resync}
	}
	requeue := min(f.Resync, v.Retry)
	reason, message := v.Reason, v.Message
	if v.OK && !v.Ready {
		reason, message = notReady(v.View, statusRef(f, *d))
	}
	backendUp := s.backend.Status == metav1.ConditionTrue

	// The kubeconfig: copied once the backend is ready, kept while it is
	// not (a control plane that is upgrading still serves).
	published := false
	if k := o.Kubeconfig; k == nil {
		// Publishing it failed: err says why.
	} else if v.Up() {
		if k.Reason == "" {
			published = true
			conditions.True(cp, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.SucceededReason,
				"Secret "+cp.Namespace+"/"+clusterapi.KubeconfigSecretName(d.Cluster.Name)+" holds the kubeconfig of Secret "+cp.Namespace+"/"+d.KubeconfigSecret)
		} else {
			requeue = min(requeue, PollWhileWaiting)
			conditions.False(cp, clustersv1alpha1.KubeconfigReadyCondition, k.Reason, k.Message)
		}
	} else if c := conditions.Get(cp, clustersv1alpha1.KubeconfigReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		conditions.Unknown(cp, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.WaitingForBackendReason,
			"waiting for the backend to be ready before reading Secret "+cp.Namespace+"/"+d.KubeconfigSecret)
	} else {
		published = true
		conditions.Put(cp, *c)
	}
	if err != nil {
		return plan.Next{}, err
	}

	// The endpoint is the backend's (the sync wrote it into the spec).
	initialized := ptr.Deref(cp.Status.Initialization.ControlPlaneInitialized, false)
	if !initialized && backendUp && v.Up() && !cp.Spec.ControlPlaneEndpoint.IsZero() && published {
		cp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		initialized = true
	}
	// The version follows once the backend is ready at it: Flux applied
	// the generation that carries it, and the backend says it runs it (or
	// says nothing of versions).
	if backendUp && v.Up() && (v.Version == "" || sameVersion(v.Version, cp.Spec.Version)) {
		cp.Status.Version = cp.Spec.Version
	}
	// Cluster API v1.14's contract prefers status.versions; one entry,
	// the version the control plane runs, as status.version says.
	cp.Status.Versions = nil
	if cp.Status.Version != "" {
		cp.Status.Versions = []clustersv1alpha1.StatusVersion{{Version: cp.Status.Version}}
	}

	switch {
	case !v.OK && s.backend.Status == metav1.ConditionFalse:
		// Flux failed: that explains a missing or unreadable view.
		conditions.False(cp, clustersv1alpha1.AvailableCondition, s.backend.Reason, s.backend.Message)
	case !v.OK, !v.Ready:
		conditions.False(cp, clustersv1alpha1.AvailableCondition, reason, message)
	case !initialized:
		conditions.False(cp, clustersv1alpha1.AvailableCondition, clustersv1alpha1.WaitingForBackendReason,
			waitingMessage(cp, backendUp, published, s.backend.Message))
	case cp.Status.Version != cp.Spec.Version:
		conditions.True(cp, clustersv1alpha1.AvailableCondition, clustersv1alpha1.UpgradingReason,
			fmt.Sprintf("the control plane serves at %s while it is upgraded from %s to %s", endpointString(cp.Spec.ControlPlaneEndpoint), orNone(cp.Status.Version), cp.Spec.Version))
	default:
		conditions.True(cp, clustersv1alpha1.AvailableCondition, clustersv1alpha1.AvailableReason,
			fmt.Sprintf("the control plane serves Kubernetes %s at %s", cp.Status.Version, endpointString(cp.Spec.ControlPlaneEndpoint)))
	}
	if !backendUp || !v.Up() {
		requeue = min(requeue, PollWhileWaiting)
	}
	if s.stale {
		requeue = min(requeue, time.Second)
	}
	return plan.Next{RequeueAfter: requeue}, nil
}

// statusRef is "<statusFrom kind> <namespace>/<name>".
func statusRef(f Facts, d Desired) string {
	return fmt.Sprintf("%s %s/%s", f.StatusFrom.Kind, f.Object.GetNamespace(), d.StatusName)
}

func waitingMessage(cp *clustersv1alpha1.CapwrightControlPlane, backendUp, published bool, backendMessage string) string {
	switch {
	case !backendUp:
		return "waiting for Flux: " + backendMessage
	case cp.Spec.ControlPlaneEndpoint.IsZero():
		return "the backend is ready but reports no endpoint (spec.statusFrom.endpoint)"
	case !published:
		return "waiting for the kubeconfig (KubeconfigReady)"
	}
	return "waiting for the backend"
}

// notReady is the reason and message of a backend view that is not
// ready: the backend's own when it gives them.
func notReady(v View, ref string) (string, string) {
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

// sameVersion compares Kubernetes versions without a leading v and
// without build metadata (a backend may report v1.31.1+k3s1).
func sameVersion(a, b string) bool {
	core := func(v string) string {
		v = strings.TrimPrefix(v, "v")
		if i := strings.IndexByte(v, '+'); i >= 0 {
			v = v[:i]
		}
		return v
	}
	return core(a) == core(b)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func endpointString(e clustersv1alpha1.APIEndpoint) string {
	return fmt.Sprintf("%s:%d", e.Host, e.Port)
}
