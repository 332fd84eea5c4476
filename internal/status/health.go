package status

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/apis/meta"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/fluxobjects"
)

// inventoryReaders bounds the objects read at once for their health.
const inventoryReaders = 8

// inventoryItem is an applied object whose health is to be read.
type inventoryItem struct {
	node    *Node
	applied fluxobjects.Applied
}

// setReady sets n's readiness from its Ready condition, for its current
// generation only: a condition of an older generation says nothing of
// the spec as it is.
func setReady(n *Node, who string, generation, observed int64, conditions []metav1.Condition) {
	cond := apimeta.FindStatusCondition(conditions, meta.ReadyCondition)
	switch {
	case cond == nil:
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "NoReadyCondition", who+" has not reported on it yet"
	case observed != 0 && observed != generation, cond.ObservedGeneration != 0 && cond.ObservedGeneration != generation:
		n.Ready, n.Reason = metav1.ConditionUnknown, "Progressing"
		n.Message = fmt.Sprintf("%s has not handled generation %d yet (last: %s %s: %s)", who, generation, cond.Status, cond.Reason, cond.Message)
	default:
		n.Ready, n.Reason, n.Message = cond.Status, cond.Reason, cond.Message
	}
}

// readHealth reads each applied object and computes its kstatus, a few at
// a time.
func readHealth(ctx context.Context, c client.Client, items []inventoryItem) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(inventoryReaders)
	for _, it := range items {
		eg.Go(func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(it.applied.GroupVersionKind)
			err := c.Get(ctx, client.ObjectKey{Namespace: it.applied.Namespace, Name: it.applied.Name}, u)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			healthOf(it.node, u, err)
			return nil
		})
	}
	return eg.Wait()
}

// healthOf sets an applied object's readiness from kstatus, the health
// Flux's own checks use.
func healthOf(n *Node, u *unstructured.Unstructured, err error) {
	switch {
	case apierrors.IsNotFound(err), fluxobjects.NotServed(err):
		n.Ready, n.Reason, n.Message = metav1.ConditionFalse, "NotFound", "Flux applied it, but it is not there now (Flux applies it again on its next run)"
		return
	case apierrors.IsForbidden(err):
		n.Note = "health not read: reading it is forbidden to you"
		return
	case err != nil:
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "ReadFailed", err.Error()
		return
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "StatusUnknown", err.Error()
		return
	}
	n.Reason, n.Message = string(res.Status), res.Message
	switch res.Status {
	case kstatus.CurrentStatus:
		n.Ready = metav1.ConditionTrue
	case kstatus.FailedStatus, kstatus.NotFoundStatus:
		n.Ready = metav1.ConditionFalse
	default:
		n.Ready = metav1.ConditionUnknown
	}
}
