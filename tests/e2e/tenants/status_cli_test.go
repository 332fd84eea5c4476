package tenants

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// statusShowsTenant runs `capwright status tenant/NAME` and compares the
// tree with what the API server has: the Tenant's Ready condition, a line
// per cluster of status.clusters (phase, wave, stack revision), the
// tenant's OCIRepositories, and under each cluster its Flux object with
// exactly its inventory. wantCode is the exit code: 0 when the Tenant is
// Ready, 8, naming the Tenant's reason, when it is not.
func statusShowsTenant(t *testing.T, ctx context.Context, c client.Client, name string, wantCode int) {
	cli := framework.CLI(t, ctx, env)
	var diffs []string
	for try := 0; try < 5; try++ {
		stdout, stderr, code, err := framework.RunCLI(ctx, cli, "status", "tenant/"+name, "-o", "json", "--kubeconfig", env.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		r, err := framework.ParseStatus(stdout)
		if err != nil {
			t.Fatal(err)
		}
		diffs = compareTenantTree(ctx, c, name, r)
		tn := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
			t.Fatal(err)
		}
		ready := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		switch {
		case code != wantCode:
			diffs = append(diffs, fmt.Sprintf("exit code %d, want %d: %s", code, wantCode, stderr))
		case wantCode == 8 && !strings.Contains(stderr, "Tenant/"+name+" is not Ready ("+ready.Reason):
			diffs = append(diffs, fmt.Sprintf("stderr does not name the Tenant's reason %s: %s", ready.Reason, stderr))
		}
		if len(diffs) == 0 {
			t.Logf("capwright status tenant/%s: %d clusters, exit code %d", name, len(tn.Status.Clusters), code)
			break
		}
		time.Sleep(time.Second)
	}
	for _, d := range diffs {
		t.Errorf("capwright status tenant/%s: %s", name, d)
	}

	// The tree as text names each cluster with its wave.
	stdout, _, _, err := framework.RunCLI(ctx, cli, "status", "tnt/"+name, "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tn := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
		t.Fatal(err)
	}
	for _, l := range tn.Status.Clusters {
		if !strings.Contains(stdout, "Cluster/"+l.Namespace+"/"+l.Name) || (l.Wave != "" && !strings.Contains(stdout, "wave "+l.Wave)) {
			t.Errorf("the tree has no line for cluster %s/%s in wave %s:\n%s", l.Namespace, l.Name, l.Wave, stdout)
		}
	}
}

func compareTenantTree(ctx context.Context, c client.Client, name string, r *framework.StatusReport) []string {
	tn := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
		return []string{err.Error()}
	}
	if len(r.Objects) != 1 {
		return []string{fmt.Sprintf("%d objects at the top, want the Tenant alone", len(r.Objects))}
	}
	n := r.Objects[0]
	var diffs []string
	ready := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if n.Ref() != "Tenant/"+name || ready == nil || n.Ready != string(ready.Status) || n.Reason != ready.Reason {
		diffs = append(diffs, fmt.Sprintf("the Tenant's line says %s %s, the API %+v", n.Ready, n.Reason, ready))
	}
	// The tenant's sources, found as the manager labels them.
	sources := &sourcev1.OCIRepositoryList{}
	if err := c.List(ctx, sources, client.MatchingLabels{tenancyv1alpha1.TenantLabel: name}); err != nil {
		return append(diffs, err.Error())
	}
	for _, s := range sources.Items {
		child := n.Child(sourcev1.OCIRepositoryKind, s.Name)
		if child == nil || child.Namespace != s.Namespace {
			diffs = append(diffs, fmt.Sprintf("OCIRepository %s/%s is not under the Tenant", s.Namespace, s.Name))
			continue
		}
		diffs = append(diffs, framework.CheckFluxNode(ctx, c, child)...)
	}
	var clusters []string
	for _, child := range n.Children {
		if child.Kind == "Cluster" {
			clusters = append(clusters, child.Namespace+"/"+child.Name)
		}
	}
	var want []string
	for _, l := range tn.Status.Clusters {
		want = append(want, l.Namespace+"/"+l.Name)
		var line *framework.StatusNode
		for _, child := range n.Children {
			if child.Kind == "Cluster" && child.Namespace == l.Namespace && child.Name == l.Name {
				line = child
			}
		}
		if line == nil {
			continue
		}
		if line.Phase != string(l.Phase) || line.Reason != l.Reason || line.Wave != l.Wave || line.StackRevision != l.Revision || line.Revision != l.AppliedRevision {
			diffs = append(diffs, fmt.Sprintf("cluster %s/%s: the tree says %+v, status.clusters %+v", l.Namespace, l.Name, *line, l))
		}
		if l.FluxObject == nil {
			continue
		}
		flux := line.Child(l.FluxObject.Kind, l.FluxObject.Name)
		if flux == nil {
			diffs = append(diffs, fmt.Sprintf("cluster %s/%s: %s %s is not under its line", l.Namespace, l.Name, l.FluxObject.Kind, l.FluxObject.Name))
			continue
		}
		diffs = append(diffs, framework.CheckFluxNode(ctx, c, flux)...)
		if len(flux.Children) > 0 && !strings.Contains(flux.Note, "health not read") {
			diffs = append(diffs, fmt.Sprintf("%s applies on a workload cluster, but the tree does not say its objects' health was not read: %q", flux.Ref(), flux.Note))
		}
	}
	if !slices.Equal(clusters, want) {
		diffs = append(diffs, fmt.Sprintf("cluster lines %v, status.clusters %v", clusters, want))
	}
	return diffs
}

// statusOnAWorkloadCluster runs `capwright status` against a workload
// cluster, which has none of Capwright's CRDs: a clear error, exit code 3.
func statusOnAWorkloadCluster(t *testing.T, ctx context.Context) {
	cli := framework.CLI(t, ctx, env)
	_, stderr, code, err := framework.RunCLI(ctx, cli, "status", "--kubeconfig", workloads[0].KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"does not serve coreproviders.providers.capwright.io", "Capwright is not installed there", "docs/install.md"} {
		if code != 3 || !strings.Contains(stderr, want) {
			t.Errorf("capwright status on a workload cluster: exit code %d, stderr %q; want 3 saying %q", code, stderr, want)
		}
	}
}
