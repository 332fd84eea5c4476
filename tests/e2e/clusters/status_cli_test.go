package clusters

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// statusShowsBackends runs `capwright status` on a Ready
// CapwrightControlPlane (a chart: HelmRelease) and CapwrightCluster (a
// kustomize artifact: Kustomization) of key: each tree holds the Flux
// objects labelled as the object's backend, with what they applied, all
// Ready, exit code 0.
func statusShowsBackends(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) {
	cli := framework.CLI(t, ctx, env)
	for _, kind := range []string{clustersv1alpha1.ControlPlaneKind, clustersv1alpha1.ClusterKind} {
		arg := strings.ToLower(kind) + "/" + key.Name
		var diffs []string
		for try := 0; try < 5; try++ {
			stdout, stderr, code, err := framework.RunCLI(ctx, cli, "status", arg, "-n", key.Namespace, "-o", "json", "--kubeconfig", env.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			r, err := framework.ParseStatus(stdout)
			if err != nil {
				t.Fatal(err)
			}
			diffs = compareBackendTree(ctx, c, kind, key, r)
			if code != 0 {
				diffs = append(diffs, fmt.Sprintf("exit code %d: %s", code, stderr))
			}
			if len(diffs) == 0 {
				t.Logf("%s: %d Flux objects, all Ready", arg, len(r.Objects[0].Children))
				break
			}
			time.Sleep(time.Second)
		}
		for _, d := range diffs {
			t.Errorf("capwright status %s -n %s: %s", arg, key.Namespace, d)
		}
	}
}

func compareBackendTree(ctx context.Context, c client.Client, kind string, key client.ObjectKey, r *framework.StatusReport) []string {
	if len(r.Objects) != 1 {
		return []string{fmt.Sprintf("%d objects at the top, want the %s alone", len(r.Objects), kind)}
	}
	n := r.Objects[0]
	var (
		obj        client.Object
		conditions func() []metav1.Condition
	)
	if kind == clustersv1alpha1.ControlPlaneKind {
		cp := &clustersv1alpha1.CapwrightControlPlane{}
		obj, conditions = cp, func() []metav1.Condition { return cp.Status.Conditions }
	} else {
		infra := &clustersv1alpha1.CapwrightCluster{}
		obj, conditions = infra, func() []metav1.Condition { return infra.Status.Conditions }
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return []string{err.Error()}
	}
	var diffs []string
	ready := apimeta.FindStatusCondition(conditions(), clustersv1alpha1.ReadyCondition)
	if n.Ref() != kind+"/"+key.Namespace+"/"+key.Name || ready == nil || n.Ready != string(ready.Status) || n.Reason != ready.Reason {
		diffs = append(diffs, fmt.Sprintf("the %s's line says %s %s, the API %+v", kind, n.Ready, n.Reason, ready))
	}
	labels := client.MatchingLabels{clustersv1alpha1.BackendLabel: render.OwnerLabelValue(kind, key.Name)}
	want := 0
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{
		{sourcev1.OCIRepositoryKind, &sourcev1.OCIRepositoryList{}},
		{kustomizev1.KustomizationKind, &kustomizev1.KustomizationList{}},
		{helmv2.HelmReleaseKind, &helmv2.HelmReleaseList{}},
	} {
		if err := c.List(ctx, l.list, client.InNamespace(key.Namespace), labels); err != nil {
			return append(diffs, err.Error())
		}
		items, err := apimeta.ExtractList(l.list)
		if err != nil {
			return append(diffs, err.Error())
		}
		for _, item := range items {
			o := item.(client.Object)
			want++
			child := n.Child(l.kind, o.GetName())
			if child == nil {
				diffs = append(diffs, fmt.Sprintf("%s %s/%s is not in the tree", l.kind, o.GetNamespace(), o.GetName()))
				continue
			}
			diffs = append(diffs, framework.CheckFluxNode(ctx, c, child)...)
			for _, applied := range child.Children {
				if applied.Ready != string(metav1.ConditionTrue) {
					diffs = append(diffs, fmt.Sprintf("%s is %s %s: %s, but the %s is Ready", applied.Ref(), applied.Ready, applied.Reason, applied.Message, kind))
				}
			}
		}
	}
	if want == 0 || len(n.Children) != want {
		diffs = append(diffs, fmt.Sprintf("the tree has %d Flux objects under the %s, the API %d", len(n.Children), kind, want))
	}
	return diffs
}
