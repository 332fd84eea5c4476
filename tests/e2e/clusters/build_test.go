package clusters

import (
	"context"
	"path/filepath"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
)

// buildMatchesManager writes owners — a Tenant, a CapwrightCluster and a
// CapwrightControlPlane, all Ready — and their Cluster as a repository
// holds them (no owner references: Cluster API sets those, and build
// finds the Cluster whose spec refers to each), and checks that
// `capwright build` prints exactly the objects the manager applied for
// them, the control plane's HelmRelease among them.
func buildMatchesManager(t *testing.T, ctx context.Context, c client.Client, owners []client.Object, cluster client.Object) {
	for _, o := range append([]client.Object{cluster}, owners...) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	repo := framework.WriteRepository(t, filepath.Join(t.TempDir(), "repo"), append(owners, cluster)...)
	built, stderr := framework.Build(t, ctx, framework.CLI(t, ctx, env), nil, "-f", repo)
	n := framework.AssertBuildMatchesManager(t, ctx, c, owners, built)
	var releases int
	for _, o := range built {
		if o.GetKind() == helmv2.HelmReleaseKind {
			releases++
		}
	}
	if releases != 1 {
		t.Errorf("build printed %d HelmReleases, want the control plane's:\n%s", releases, stderr)
	}
	t.Logf("capwright build printed %d objects for a Tenant, a CapwrightCluster and a CapwrightControlPlane, each what the manager applied; stderr:\n%s", n, stderr)
}
