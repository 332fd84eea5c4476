package contract

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/shell"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
)

// The facts stage: what a reconcile reads before it plans — the owning
// Cluster, the object's own pause, its status expressions parsed.

func controlPlaneFacts(cp *clustersv1alpha1.CapwrightControlPlane) contractplan.Facts {
	return contractplan.Facts{Object: cp, Kind: clustersv1alpha1.ControlPlaneKind,
		Backend: &cp.Spec.Backend, StatusFrom: &cp.Spec.StatusFrom,
		Version: cp.Spec.Version, Kubeconfig: &cp.Spec.Kubeconfig}
}

func clusterFacts(c *clustersv1alpha1.CapwrightCluster) contractplan.Facts {
	return contractplan.Facts{Object: c, Kind: clustersv1alpha1.ClusterKind,
		Backend: c.Spec.Backend, StatusFrom: c.Spec.StatusFrom, VersionOfTopology: true}
}

// readFacts completes a kind's facts: the owning Cluster, whether Paused
// is said already, the status expressions (parsed; a parse error is
// kept for the plan to refuse), and the manager's settings.
func (s *Shared) readFacts(ctx context.Context, f contractplan.Facts, request string) (contractplan.Facts, *expressions, error) {
	obj := f.Object.(shell.Object)
	cluster, err := s.ownerCluster(ctx, f)
	if err != nil {
		return f, nil, err
	}
	f.Cluster = cluster
	f.PausedSaid = conditions.IsTrue(obj, clustersv1alpha1.PausedCondition)
	f.Mirrors, f.InsecureRegistries, f.Request, f.Resync = s.Mirrors, s.InsecureRegistries, request, s.resync()
	var exprs *expressions
	if f.Backend != nil && f.StatusFrom != nil {
		exprs, f.StatusFromInvalid = s.exprs.compile(f.StatusFrom)
	}
	return f, exprs, nil
}

// ownerCluster is the Cluster that owns the object (Cluster API sets the
// owner reference when a Cluster refers to it), nil while there is none.
// It is read uncached: Clusters may be watched late, or not at all.
func (s *Shared) ownerCluster(ctx context.Context, f contractplan.Facts) (*clusterapi.Facts, error) {
	for _, ref := range f.Object.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterapi.ClusterGVK.Group || ref.Kind != clusterapi.ClusterGVK.Kind {
			continue
		}
		c := clusterapi.NewCluster()
		if err := s.Reader.Get(ctx, ctrl.ObjectKey{Namespace: f.Object.GetNamespace(), Name: ref.Name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading Cluster %s/%s, the owner of %s: %w", f.Object.GetNamespace(), ref.Name, f.Ref(), err)
		}
		facts := clusterapi.FactsOf(c)
		return &facts, nil
	}
	return nil, nil
}

// Facts gathers what the plan of obj (a CapwrightControlPlane or a
// CapwrightCluster) needs, as a reconcile does: `capwright build` plans
// from them what the manager would write.
func (s *Shared) Facts(ctx context.Context, obj ctrl.Object) (contractplan.Facts, error) {
	var f contractplan.Facts
	switch o := obj.(type) {
	case *clustersv1alpha1.CapwrightControlPlane:
		f = controlPlaneFacts(o)
	case *clustersv1alpha1.CapwrightCluster:
		f = clusterFacts(o)
	default:
		return f, fmt.Errorf("%T is not a contract kind", obj)
	}
	f, _, err := s.readFacts(ctx, f, "")
	return f, err
}
