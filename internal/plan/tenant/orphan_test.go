package tenant

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// TestAStackWhoseClusterCannotBeReachedIsLetGoWithoutPruning: the Flux
// applier of a Cluster whose kubeconfig Secret is gone from the tenant's
// namespace (clusterctl move took it to another management cluster) is
// deleted leaving what it applied, since Flux could only retry a prune
// forever; one of a Cluster merely no longer selected, whose kubeconfig
// is there, is pruned as before, and so is one in a namespace the tenant
// no longer reads.
func TestAStackWhoseClusterCannotBeReachedIsLetGoWithoutPruning(t *testing.T) {
	tn := kustomizeTenant()
	moved := clusterKustomization(tn, "team-b-clusters", "moved")
	deselected := clusterKustomization(tn, "team-b-clusters", "deselected")
	elsewhere := clusterKustomization(tn, "old-namespace", "elsewhere")
	f := facts(tn, []clusterapi.Facts{ready("team-b-clusters", "kept", nil)})
	// The deselected Cluster's Secret is still there; the moved one's
	// went with it.
	f.Kubeconfigs.Insert(types.NamespacedName{Namespace: "team-b-clusters", Name: clusterapi.KubeconfigSecretName("deselected")})
	f.Existing = []render.ExistingObject{moved, deselected, elsewhere}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	key := func(e render.ExistingObject) string {
		return plan.ObservedKey(e.Kind, e.Object.GetNamespace(), e.Object.GetName())
	}
	pruned := map[string]bool{}
	for _, o := range d.Prune {
		pruned[plan.ObservedKey(plan.KindOf(o), o.GetNamespace(), o.GetName())] = true
	}
	for _, e := range []render.ExistingObject{moved, deselected, elsewhere} {
		if !pruned[key(e)] {
			t.Errorf("%s is not deleted", key(e))
		}
	}
	if !d.Orphan[key(moved)] {
		t.Errorf("%s, whose cluster's kubeconfig is gone, would wait for a prune Flux cannot make: orphans %v", key(moved), d.Orphan)
	}
	for _, e := range []render.ExistingObject{deselected, elsewhere} {
		if d.Orphan[key(e)] {
			t.Errorf("%s is let go without pruning; its cluster's stack must be uninstalled", key(e))
		}
	}
}

// clusterKustomization is t's Kustomization for Cluster ns/cluster, which
// applies with that Cluster's kubeconfig Secret.
func clusterKustomization(t *tenancyv1alpha1.Tenant, ns, cluster string) render.ExistingObject {
	m := owned(t, helmv2.HelmReleaseKind, ns, t.Name+"-"+cluster).Object.(*helmv2.HelmRelease).ObjectMeta
	m.Labels[tenancyv1alpha1.ClusterNameLabel] = cluster
	ks := &kustomizev1.Kustomization{ObjectMeta: m}
	ks.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: clusterapi.KubeconfigSecretName(cluster)}}
	return render.ExistingObject{Kind: kustomizev1.KustomizationKind, Object: ks}
}
