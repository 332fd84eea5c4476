package contract

import (
	"context"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/plan"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
	"github.com/capwright/capwright/internal/render"
)

// Deleting an object uninstalls its backend through Flux and waits until
// it is gone; a control plane then waits for its status object and
// removes the kubeconfig Secret it published.

// finalizeCluster uninstalls an infrastructure's backend.
func (r *ClusterReconciler) finalizeCluster(ctx context.Context, c *clustersv1alpha1.CapwrightCluster) (shell.Outcome, error) {
	_, pending, out, err := r.uninstall(ctx, clusterFacts(c))
	if out != nil || err != nil {
		return derefOutcome(out), err
	}
	if pending != "" {
		return deleting(c, pending), nil
	}
	return shell.Outcome{Done: true}, nil
}

// finalizeControlPlane uninstalls a control plane's backend through
// Flux, waits for its status object to go, then removes the kubeconfig
// Secret.
func (r *ControlPlaneReconciler) finalizeControlPlane(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane) (shell.Outcome, error) {
	owner, pending, out, err := r.uninstall(ctx, controlPlaneFacts(cp))
	if out != nil || err != nil {
		return derefOutcome(out), err
	}
	cluster := clusterName(cp)
	if pending == "" {
		pending, err = r.statusObjectLeft(ctx, cp, cluster, owner)
		if err != nil {
			return shell.Outcome{}, err
		}
	}
	if pending != "" {
		return deleting(cp, pending), nil
	}
	if cluster != "" {
		var secret corev1.Secret
		err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: cp.Namespace, Name: clusterapi.KubeconfigSecretName(cluster)}, &secret)
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

// uninstall is what deleting either kind starts with: a deletion held
// while paused (out is then the outcome), else the backend's Flux objects
// deleted, and what of them is still there (pending). It returns the
// owning Cluster when it is still there.
func (s *Shared) uninstall(ctx context.Context, f contractplan.Facts) (owner *clusterapi.Facts, pending string, out *shell.Outcome, err error) {
	owner, hold, err := s.holdDeletion(ctx, f)
	if err != nil || hold != nil {
		return owner, "", hold, err
	}
	pending, err = s.finalizeBackend(ctx, f)
	return owner, pending, nil, err
}

func derefOutcome(out *shell.Outcome) shell.Outcome {
	if out == nil {
		return shell.Outcome{}
	}
	return *out
}

// deleting says what the deletion waits for, and looks again soon.
func deleting(obj shell.Object, pending string) shell.Outcome {
	conditions.True(obj, clustersv1alpha1.DeletingCondition, clustersv1alpha1.DeletingReason, pending)
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: contractplan.PollWhileWaiting}}
}

// holdDeletion says whether a deletion waits for a pause to end (the
// object's annotation, or its Cluster's spec.paused: clusterctl move
// pauses before it moves): then the outcome to return, Paused set once
// and nothing written after. It returns the owning Cluster when it is
// still there.
func (s *Shared) holdDeletion(ctx context.Context, f contractplan.Facts) (*clusterapi.Facts, *shell.Outcome, error) {
	owner, err := s.ownerCluster(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	why := contractplan.PauseReason(f.Object, owner)
	if why == "" {
		return owner, nil, nil
	}
	obj := f.Object.(shell.Object)
	if conditions.IsTrue(obj, clustersv1alpha1.PausedCondition) {
		return owner, &shell.Outcome{Hold: true}, nil
	}
	conditions.True(obj, clustersv1alpha1.PausedCondition, clustersv1alpha1.PausedReason, why+": the deletion waits")
	return owner, &shell.Outcome{}, nil
}

// finalizeBackend deletes the backend's Flux objects, and tells what is
// still there: Flux uninstalls before they go. Then the status object
// must be gone too.
func (s *Shared) finalizeBackend(ctx context.Context, f contractplan.Facts) (pending string, err error) {
	name := render.ContractObjectName(f.Kind, f.Object.GetName())
	key := ctrl.ObjectKey{Namespace: f.Object.GetNamespace(), Name: name}
	var left []string
	// The applier first: it needs its source to uninstall.
	for _, o := range []ctrl.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &sourcev1.OCIRepository{}} {
		if err := s.Client.Get(ctx, key, o); err != nil {
			if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
				continue
			}
			return "", err
		}
		if !render.ControlledBy(o, f.Object.GetUID()) {
			continue
		}
		left = append(left, plan.KindOf(o)+" "+key.String())
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

// statusObjectLeft tells whether the backend's status object is still
// there (its operator is still tearing the control plane down).
func (r *ControlPlaneReconciler) statusObjectLeft(ctx context.Context, cp *clustersv1alpha1.CapwrightControlPlane, cluster string, owner *clusterapi.Facts) (string, error) {
	if cluster == "" {
		return "", nil
	}
	facts := clusterapi.Facts{Namespace: cp.Namespace, Name: cluster}
	if owner != nil {
		facts = *owner
	}
	name, err := contractplan.Substitute("spec.statusFrom.name", cp.Spec.StatusFrom.Name, contractplan.Variables(facts, cp.Spec.Version))
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
		if ref.Kind == clusterapi.ClusterGVK.Kind && strings.HasPrefix(ref.APIVersion, clusterapi.ClusterGVK.Group+"/") {
			return ref.Name
		}
	}
	return obj.GetLabels()[clusterapi.ClusterNameLabel]
}
