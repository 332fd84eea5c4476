package contract

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/render"
)

// Cluster API's kubeconfig Secret (sigs.k8s.io/cluster-api util/secret).
const (
	kubeconfigSuffix     = "-kubeconfig"
	kubeconfigKey        = "value"
	kubeconfigSecretType = corev1.SecretType("cluster.x-k8s.io/secret")
	clusterNameLabel     = "cluster.x-k8s.io/cluster-name"
)

// ControlPlaneReconciler reconciles CapwrightControlPlanes.
type ControlPlaneReconciler struct {
	*Shared
	written shell.Written
}

// Reconcile runs the reconcile shell with the control plane's steps.
func (r *ControlPlaneReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// An object exists: it needs Clusters watched.
	r.clusterWatch.Want()
	return (&shell.Reconciler[*clustersv1alpha1.CapwrightControlPlane]{
		Client:     r.Client,
		Kind:       clustersv1alpha1.ControlPlaneKind,
		New:        func() *clustersv1alpha1.CapwrightControlPlane { return &clustersv1alpha1.CapwrightControlPlane{} },
		Finalizer:  clustersv1alpha1.Finalizer,
		FieldOwner: FieldOwner,
		Steps:      cpSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

func cpSubject(cp *clustersv1alpha1.CapwrightControlPlane) subject {
	return subject{
		obj: cp, kind: clustersv1alpha1.ControlPlaneKind,
		backend: &cp.Spec.Backend, statusFrom: &cp.Spec.StatusFrom,
		version:       func(clusterFacts) string { return cp.Spec.Version },
		backendStatus: &cp.Status.Backend,
		endpoint:      &cp.Spec.ControlPlaneEndpoint,
	}
}

var cpConditions = []string{
	clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition,
	clustersv1alpha1.AvailableCondition, clustersv1alpha1.PausedCondition,
}

type cpSteps struct{ r *ControlPlaneReconciler }

var _ shell.Steps[*clustersv1alpha1.CapwrightControlPlane] = cpSteps{}

func (s cpSteps) Init(cp *clustersv1alpha1.CapwrightControlPlane) {
	initConditions(cpSubject(cp), cpConditions)
	cp.Status.ExternalManagedControlPlane = ptr.To(true)
}

func (s cpSteps) Reconcile(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, request string) (shell.Outcome, error) {
	return s.r.reconcile(ctx, cp, request)
}

func (s cpSteps) Finalize(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane) (shell.Outcome, error) {
	return s.r.finalize(ctx, cp)
}

func (s cpSteps) Summarize(cp *clustersv1alpha1.CapwrightControlPlane) {
	cp.Status.ObservedGeneration = cp.Generation
	apimeta.SetStatusCondition(&cp.Status.Conditions, health.ControlPlaneSummary(cp.Generation, cp.Status.Conditions, metav1.Now()))
}

func (s cpSteps) Status(cp *clustersv1alpha1.CapwrightControlPlane) *meta.ReconcileRequestStatus {
	return &cp.Status.ReconcileRequestStatus
}

// Events: the control plane initialized, and each new version it runs.
func (s cpSteps) Events(before, after *clustersv1alpha1.CapwrightControlPlane) []events.Event {
	var out []events.Event
	if !ptr.Deref(before.Status.Initialization.ControlPlaneInitialized, false) && ptr.Deref(after.Status.Initialization.ControlPlaneInitialized, false) {
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: "Initialized",
			Message: fmt.Sprintf("control plane initialized at %s:%d", after.Spec.ControlPlaneEndpoint.Host, after.Spec.ControlPlaneEndpoint.Port)})
	}
	if before.Status.Version != "" && after.Status.Version != before.Status.Version {
		out = append(out, events.Event{Type: corev1.EventTypeNormal, Reason: "Upgraded",
			Message: "control plane upgraded from " + before.Status.Version + " to " + after.Status.Version})
	}
	return out
}

func (s cpSteps) EventMetadata(cp *clustersv1alpha1.CapwrightControlPlane) map[string]string {
	for _, b := range cp.Status.Backend {
		if b.Kind != "OCIRepository" && b.Revision != "" {
			return map[string]string{clustersv1alpha1.GroupVersion.Group + "/" + eventv1.MetaRevisionKey: b.Revision}
		}
	}
	return nil
}

func (s cpSteps) Warning(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse && c.Type != clustersv1alpha1.PausedCondition && c.Type != clustersv1alpha1.DeletingCondition
}

func (s cpSteps) State(cp *clustersv1alpha1.CapwrightControlPlane) metrics.ObjectState {
	st := metrics.ObjectState{Kind: clustersv1alpha1.ControlPlaneKind, Namespace: cp.Namespace, Name: cp.Name,
		Ready: metav1.ConditionUnknown, Version: cp.Status.Version}
	if c := apimeta.FindStatusCondition(cp.Status.Conditions, clustersv1alpha1.ReadyCondition); c != nil {
		st.Ready, st.Reason = c.Status, c.Reason
	}
	if c := apimeta.FindStatusCondition(cp.Status.Conditions, clustersv1alpha1.PausedCondition); c != nil {
		st.Suspended = c.Status == metav1.ConditionTrue
	}
	return st
}

// reconcile reads as the data flow: Cluster → backend written and folded →
// status view → kubeconfig → endpoint, initialization, version,
// Available.
func (r *ControlPlaneReconciler) reconcile(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, request string) (shell.Outcome, error) {
	sub := cpSubject(cp)
	p, err := r.prepare(ctx, sub, request)
	if err != nil {
		return halted(err)
	}
	requeue := r.resync()
	statusRef := fmt.Sprintf("%s %s/%s", cp.Spec.StatusFrom.Kind, cp.Namespace, p.statusName)
	v, ok, reason, message, retry := r.readView(ctx, sub, p)
	requeue = min(requeue, retry)
	if ok && !v.Ready {
		reason, message = notReady(v, statusRef)
	}
	backendUp := p.backend.Status == metav1.ConditionTrue

	// The kubeconfig: copied once the backend is ready, kept while it is
	// not (a control plane that is upgrading still serves).
	kubeconfig, err := substitute("spec.kubeconfig.secretName", cp.Spec.Kubeconfig.SecretName, p.vars)
	if err != nil {
		return halted(r.invalid(sub, err))
	}
	published := false
	if ok && v.Ready {
		kreason, kmessage, err := r.publishKubeconfig(ctx, cp, p.cluster, kubeconfig)
		if err != nil {
			return shell.Outcome{}, err
		}
		if kreason == "" {
			published = true
			cp.SetConditions(setCond(cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason,
				"Secret "+cp.Namespace+"/"+p.cluster.Name+kubeconfigSuffix+" holds the kubeconfig of Secret "+cp.Namespace+"/"+kubeconfig))
		} else {
			requeue = min(requeue, pollWhileWaiting)
			cp.SetConditions(setCond(cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionFalse, kreason, kmessage))
		}
	} else if c := sub.condition(clustersv1alpha1.KubeconfigReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		cp.SetConditions(setCond(cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionUnknown, clustersv1alpha1.WaitingForBackendReason,
			"waiting for the backend to be ready before reading Secret "+cp.Namespace+"/"+kubeconfig))
	} else {
		published = true
		c.ObservedGeneration = cp.Generation
	}

	// The endpoint, from the backend's view.
	if ok && !v.Endpoint.IsZero() && v.Endpoint != cp.Spec.ControlPlaneEndpoint {
		if err := r.setEndpoint(ctx, cp, v.Endpoint); err != nil {
			return shell.Outcome{}, err
		}
	}
	initialized := ptr.Deref(cp.Status.Initialization.ControlPlaneInitialized, false)
	if !initialized && backendUp && ok && v.Ready && !cp.Spec.ControlPlaneEndpoint.IsZero() && published {
		cp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		initialized = true
	}
	// The version follows once the backend is ready at it: Flux applied
	// the generation that carries it, and the backend says it runs it (or
	// says nothing of versions).
	if backendUp && ok && v.Ready && (v.Version == "" || sameVersion(v.Version, cp.Spec.Version)) {
		cp.Status.Version = cp.Spec.Version
	}

	switch {
	case !ok && p.backend.Status == metav1.ConditionFalse:
		// Flux failed: that explains a missing or unreadable view.
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, p.backend.Reason, p.backend.Message))
	case !ok:
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, reason, message))
	case !v.Ready:
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, reason, message))
	case !initialized:
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.WaitingForBackendReason,
			waitingMessage(cp, backendUp, published, p.backend.Message)))
	case cp.Status.Version != cp.Spec.Version:
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionTrue, clustersv1alpha1.UpgradingReason,
			fmt.Sprintf("the control plane serves at %s while it is upgraded from %s to %s", endpointString(cp.Spec.ControlPlaneEndpoint), orNone(cp.Status.Version), cp.Spec.Version)))
	default:
		cp.SetConditions(setCond(cp, clustersv1alpha1.AvailableCondition, metav1.ConditionTrue, clustersv1alpha1.AvailableReason,
			fmt.Sprintf("the control plane serves Kubernetes %s at %s", cp.Status.Version, endpointString(cp.Spec.ControlPlaneEndpoint))))
	}
	if !backendUp || !ok || !v.Ready {
		requeue = min(requeue, pollWhileWaiting)
	}
	if p.stale {
		requeue = min(requeue, time.Second)
	}
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: requeue}}, nil
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

func setCond(obj shell.Object, typ string, status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration()})
	return conds
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

// setEndpoint writes spec.controlPlaneEndpoint (a merge patch of a copy:
// the status computed so far stays as it is).
func (r *ControlPlaneReconciler) setEndpoint(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, e clustersv1alpha1.APIEndpoint) error {
	patched := cp.DeepCopy()
	patch := ctrl.MergeFrom(cp.DeepCopy())
	patched.Spec.ControlPlaneEndpoint = e
	if err := r.Client.Patch(ctx, patched, patch, ctrl.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("setting spec.controlPlaneEndpoint of %s %s/%s: %w", clustersv1alpha1.ControlPlaneKind, cp.Namespace, cp.Name, err)
	}
	cp.Spec.ControlPlaneEndpoint = e
	cp.ResourceVersion = patched.ResourceVersion
	return nil
}

// publishKubeconfig copies the backend's kubeconfig to
// `<cluster>-kubeconfig`. A reason says why it cannot (yet); the Secret's
// content never reaches a message.
func (r *ControlPlaneReconciler) publishKubeconfig(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, cluster clusterFacts, from string) (reason, message string, err error) {
	key := cp.Spec.Kubeconfig.Key
	if key == "" {
		key = kubeconfigKey
	}
	var src corev1.Secret
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: from}, &src); err != nil {
		if apierrors.IsNotFound(err) {
			return clustersv1alpha1.KubeconfigSecretNotFoundReason, fmt.Sprintf("Secret %s/%s (spec.kubeconfig.secretName) does not exist: the backend writes it; check that spec.kubeconfig names the Secret the backend creates", cp.Namespace, from), nil
		}
		return "", "", fmt.Errorf("reading Secret %s/%s: %w", cp.Namespace, from, err)
	}
	data := src.Data[key]
	if len(data) == 0 {
		keys := make([]string, 0, len(src.Data))
		for k := range src.Data {
			keys = append(keys, k)
		}
		return clustersv1alpha1.KubeconfigKeyMissingReason, fmt.Sprintf("Secret %s/%s has no key %q (spec.kubeconfig.key); its keys are [%s]", cp.Namespace, from, key, strings.Join(sortStrings(keys), " ")), nil
	}
	name := cluster.Name + kubeconfigSuffix
	var existing corev1.Secret
	err = r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: name}, &existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", "", fmt.Errorf("reading Secret %s/%s: %w", cp.Namespace, name, err)
	default:
		if !render.ControlledBy(&existing, cp.UID) {
			return clustersv1alpha1.ObjectConflictReason, fmt.Sprintf("Secret %s/%s exists and is not this control plane's: Capwright changes nothing; delete it if nothing else writes it", cp.Namespace, name), nil
		}
		if bytes.Equal(existing.Data[kubeconfigKey], data) && existing.Labels[clusterNameLabel] == cluster.Name && existing.Type == kubeconfigSecretType {
			return "", "", nil
		}
	}
	want := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cp.Namespace, Name: name,
			Labels: map[string]string{clusterNameLabel: cluster.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clustersv1alpha1.GroupVersion.String(), Kind: clustersv1alpha1.ControlPlaneKind,
				Name: cp.Name, UID: cp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Type: kubeconfigSecretType,
		Data: map[string][]byte{kubeconfigKey: data},
	}
	if existing.Name != "" && existing.Type != kubeconfigSecretType {
		// A Secret's type cannot change.
		return clustersv1alpha1.ObjectConflictReason, fmt.Sprintf("Secret %s/%s has type %s, not %s: delete it and Capwright writes it again", cp.Namespace, name, existing.Type, kubeconfigSecretType), nil
	}
	u, err := toUnstructured(want)
	if err != nil {
		return "", "", err
	}
	if err := r.Client.Apply(ctx, ctrl.ApplyConfigurationFromUnstructured(u), ctrl.FieldOwner(FieldOwner), ctrl.ForceOwnership); err != nil {
		return "", "", fmt.Errorf("writing Secret %s/%s: %w", cp.Namespace, name, err)
	}
	return "", "", nil
}

// finalize uninstalls the backend through Flux, waits for its status
// object to go, then removes the kubeconfig Secret.
func (r *ControlPlaneReconciler) finalize(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane) (shell.Outcome, error) {
	sub := cpSubject(cp)
	owner, hold, err := r.holdDeletion(ctx, sub)
	if err != nil {
		return shell.Outcome{}, err
	}
	if hold != nil {
		return *hold, nil
	}
	pending, err := r.finalizeBackend(ctx, sub)
	if err != nil {
		return shell.Outcome{}, err
	}
	cluster := clusterName(cp)
	if pending == "" {
		pending, err = r.statusObjectLeft(ctx, cp, cluster, owner)
		if err != nil {
			return shell.Outcome{}, err
		}
	}
	if pending != "" {
		sub.set(clustersv1alpha1.DeletingCondition, metav1.ConditionTrue, clustersv1alpha1.DeletingReason, pending)
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: pollWhileWaiting}}, nil
	}
	if cluster != "" {
		var secret corev1.Secret
		err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: cluster + kubeconfigSuffix}, &secret)
		if err == nil && render.ControlledBy(&secret, cp.UID) {
			if err := r.Client.Delete(ctx, &secret, ctrl.Preconditions{UID: &secret.UID}); err != nil && !apierrors.IsNotFound(err) {
				return shell.Outcome{}, fmt.Errorf("deleting Secret %s/%s: %w", cp.Namespace, secret.Name, err)
			}
		} else if err != nil && !apierrors.IsNotFound(err) {
			return shell.Outcome{}, err
		}
	}
	return shell.Outcome{Done: true}, nil
}

// statusObjectLeft tells whether the backend's status object is still
// there (its operator is still tearing the control plane down).
func (r *ControlPlaneReconciler) statusObjectLeft(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, cluster string, owner *clusterFacts) (string, error) {
	if cluster == "" {
		return "", nil
	}
	facts := clusterFacts{Namespace: cp.Namespace, Name: cluster}
	if owner != nil {
		facts = *owner
	}
	name, err := substitute("spec.statusFrom.name", cp.Spec.StatusFrom.Name, facts.variables(cp.Spec.Version))
	if err != nil {
		// The Cluster (and its topology variables) is gone: nothing can
		// say which object to wait for; the backend's Flux objects are.
		return "", nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(cp.Spec.StatusFrom.APIVersion, cp.Spec.StatusFrom.Kind))
	switch err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: name}, u); {
	case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err), apierrors.IsForbidden(err):
		return "", nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("waiting for %s %s/%s to be deleted by the backend", u.GetKind(), cp.Namespace, name), nil
}

// clusterName is the name of the Cluster the object serves: its owner's,
// else Cluster API's cluster-name label.
func clusterName(obj metav1.Object) string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == clusterGVK.Kind && strings.HasPrefix(ref.APIVersion, clusterGVK.Group+"/") {
			return ref.Name
		}
	}
	return obj.GetLabels()[clusterNameLabel]
}
