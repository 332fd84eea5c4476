package tenants

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// buildAndDiff checks, for a Tenant Ready on two clusters, that
// `capwright build` of the Tenant as a repository holds it, with the
// Clusters as `kubectl get clusters -o yaml` gives them, prints exactly
// the objects the manager applied (framework.AssertBuildMatchesManager),
// and that `capwright diff` against the plane shows nothing for it, then
// shows the one change a new stack timeout makes — without writing it.
func buildAndDiff(t *testing.T, ctx context.Context, c client.Client, tn *tenancyv1alpha1.Tenant) {
	cli := framework.CLI(t, ctx, env)
	dir := t.TempDir()
	live := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tn), live); err != nil {
		t.Fatal(err)
	}
	repo := framework.WriteRepository(t, filepath.Join(dir, "repo"), live)
	var clusters []client.Object
	for _, w := range workloads {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		u.SetKind("Cluster")
		if err := c.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: w.Name}, u); err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, u)
	}
	clusterFile := framework.WriteRepository(t, filepath.Join(dir, "clusters"), clusters...)
	sharding := fmt.Sprintf("--flux-sharding=%d", fluxShards)

	built, stderr := framework.Build(t, ctx, cli, nil, "-f", repo, "--cluster-file", clusterFile, sharding)
	n := framework.AssertBuildMatchesManager(t, ctx, c, []client.Object{live}, built)
	var stacks int
	for _, o := range built {
		if o.GetKind() == kustomizev1.KustomizationKind && o.GetLabels()[tenancyv1alpha1.TenantLabel] == tenantName {
			stacks++
		}
	}
	if stacks < 2 {
		t.Errorf("build printed %d Kustomizations for the tenant's two clusters:\n%s", stacks, stderr)
	}
	t.Logf("capwright build printed %d objects for Tenant %s on 2 clusters, each what the manager applied", n, tenantName)

	t.Run("capwright diff shows nothing for the live repository", func(t *testing.T) {
		out, code := diff(t, ctx, cli, "-f", repo, sharding)
		if code != 0 || out != "" {
			t.Errorf("capwright diff of what the manager applied: exit %d, want 0 and no output:\n%s", code, out)
		}
	})

	t.Run("capwright diff against a cluster without Capwright says so", func(t *testing.T) {
		out, code := diff(t, ctx, cli, "-f", repo, "--kubeconfig", workloads[0].KubeconfigPath)
		if code != 3 || !strings.Contains(out, "Capwright is not installed there") || !strings.Contains(out, "docs/install.md") {
			t.Errorf("capwright diff against workload cluster %s: exit %d, want 3 naming what is missing:\n%s", workloads[0].Name, code, out)
		}
	})

	t.Run("capwright diff shows a change without writing it", func(t *testing.T) {
		changed := live.DeepCopy()
		changed.Spec.Stack.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
		repo := framework.WriteRepository(t, filepath.Join(dir, "changed"), changed)
		stack := &kustomizev1.Kustomization{}
		key := client.ObjectKey{Namespace: clusterNamespace, Name: render.TenantClusterObjectName(tenantName, client.ObjectKey{Namespace: clusterNamespace, Name: workloads[0].Name})}
		if err := c.Get(ctx, key, stack); err != nil {
			t.Fatal(err)
		}
		generation := stack.Generation
		out, code := diff(t, ctx, cli, "-f", repo, sharding)
		if code != 1 {
			t.Fatalf("capwright diff of a new timeout: exit %d, want 1:\n%s", code, out)
		}
		for _, want := range []string{"--- live/kustomization/" + key.Namespace + "/" + key.Name, "-  timeout: 1m0s", "+  timeout: 3m0s"} {
			if !strings.Contains(out, want) {
				t.Errorf("capwright diff does not show %q:\n%s", want, out)
			}
		}
		if err := c.Get(ctx, key, stack); err != nil || stack.Generation != generation {
			t.Errorf("capwright diff changed %s: generation %d, was %d (%v)", key, stack.Generation, generation, err)
		}
	})
}

// diff runs capwright diff against the plane and returns its stdout and
// exit code.
func diff(t *testing.T, ctx context.Context, cli string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, cli, append([]string{"diff", "--kubeconfig", env.Kubeconfig}, args...)...) // a later --kubeconfig wins
	cmd.Env = os.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit):
		if exit.ExitCode() > 1 {
			t.Logf("capwright diff stderr:\n%s", stderr.String())
		}
		return stdout.String() + stderr.String(), exit.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}
