package airgap

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestTenantStackAndBackendFromTheMirror mirrors a Tenant's stack and a
// CapwrightCluster's backend (Flux artifacts, as `flux push artifact`
// makes them) with the CLI from registry A into the plane's registry,
// shuts A down, and applies the Tenant and the CapwrightCluster exactly as
// at a connected site, naming A over HTTPS: the manager, given the rules
// file the CLI wrote and --insecure-registry for the mirror, has Flux pull
// both from the mirror, and the stack lands on a workload cluster.
func TestTenantStackAndBackendFromTheMirror(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	source, err := plane.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = source.Close() }()
	plainHTTP := artifact.Access{PlainHTTP: true, UserAgent: "capwright-e2e"}
	stack := artifact.Reference{Host: source.Host, Repository: "stacks/acme", Tag: "v1.0.0"}
	mirrortest.PushFluxArtifact(t, plainHTTP, stack, map[string][]byte{
		"config.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: acme-settings\ndata:\n  team: acme\n"),
	})
	network := artifact.Reference{Host: source.Host, Repository: "backends/network", Tag: "v0.1.0"}
	mirrortest.PushFluxArtifact(t, plainHTTP, network, map[string][]byte{
		"network.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-network\ndata:\n  ready: \"true\"\n"),
	})

	target := env.Registry.Host + "/airgap-stacks"
	rulesFile := filepath.Join(t.TempDir(), "mirror-rules.conf")
	if _, err := runCLI(t, ctx, "XDG_CACHE_HOME="+t.TempDir(), "mirror", "--plain-http", "--to", target, "--rules-file", rulesFile,
		stack.URL()+":"+stack.Tag, network.URL()+":"+network.Tag); err != nil {
		t.Fatalf("capwright mirror: %v", err)
	}
	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := source.Close(); err != nil {
		t.Fatal(err)
	}

	// A workload cluster, registered as Cluster API would after
	// provisioning it.
	start := time.Now()
	w, err := env.StartWorkloadCluster(ctx, "airgap-1", plane.WorkloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "airgap-team"
	cluster, err := env.RegisterWorkloadCluster(ctx, w, ns, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workload cluster started and registered in %s", time.Since(start).Round(time.Millisecond))

	manager, err := env.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{
		"--registry-mirror-file=" + rulesFile,
		"--insecure-registry=" + env.Registry.Host,
		"--resync-interval=30s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Stop()

	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{tenancyv1alpha1.AddToScheme, clustersv1alpha1.AddToScheme, helmv2.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}

	// Both name A, over HTTPS, as at a connected site.
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "airgap-acme"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{"alpha"}, Namespaces: []string{ns}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: stack.URL()}, Tag: stack.Tag}},
		},
	}
	infra := &clustersv1alpha1.CapwrightCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha",
			// Cluster API sets itself as the owner.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: cluster.GetAPIVersion(), Kind: cluster.GetKind(), Name: cluster.GetName(), UID: cluster.GetUID()}}},
		Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
			Backend: &clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: network.URL()}, Tag: network.Tag}},
			StatusFrom: &clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-network", Ready: `data.ready == "true"`},
		}},
	}
	start = time.Now()
	for _, o := range []client.Object{tenant, infra} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, o := range []client.Object{tenant, infra} {
			if err := c.Delete(context.Background(), o); err != nil {
				t.Error(err)
			}
			framework.WaitGone(t, context.Background(), c, o, 2*time.Minute)
		}
	}()

	remote, err := framework.NewClient(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 3*time.Minute, "the stack on the workload cluster and the backend provisioned", func() (bool, string) {
		var why []string
		var cm corev1.ConfigMap
		if err := remote.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: "acme-settings"}, &cm); err != nil {
			_ = c.Get(ctx, client.ObjectKeyFromObject(tenant), tenant)
			why = append(why, "stack: "+err.Error()+"; Tenant: "+conditionMessages(tenant.Status.Conditions))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(infra), infra); err != nil {
			return false, err.Error()
		}
		if !ptr.Deref(infra.Status.Initialization.Provisioned, false) {
			why = append(why, "CapwrightCluster not provisioned: "+conditionMessages(infra.Status.Conditions))
		}
		return len(why) == 0, strings.Join(why, "\n")
	})
	t.Logf("stack and backend installed from the mirror %s after they were applied", time.Since(start).Round(time.Millisecond))

	// Every source of the two pulls from the mirror, over plain HTTP.
	var repos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &repos, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{rewrite(t, rules, stack).URL(): false, rewrite(t, rules, network).URL(): false}
	for _, repo := range repos.Items {
		if _, ok := want[repo.Spec.URL]; !ok || !repo.Spec.Insecure {
			t.Errorf("OCIRepository %s/%s pulls %s (insecure %v), want one of the mirror's %v over plain HTTP", ns, repo.Name, repo.Spec.URL, repo.Spec.Insecure, want)
			continue
		}
		want[repo.Spec.URL] = true
		if !apimeta.IsStatusConditionTrue(repo.Status.Conditions, "Ready") {
			t.Errorf("OCIRepository %s/%s not Ready", ns, repo.Name)
		}
	}
	for url, seen := range want {
		if !seen {
			t.Errorf("no OCIRepository in %s pulls %s", ns, url)
		}
	}
	if !strings.HasPrefix(rewrite(t, rules, stack).URL(), "oci://"+target+"/") {
		t.Errorf("the rules send %s to %s, not under the mirror %s", stack, rewrite(t, rules, stack), target)
	}
}

// eventually polls check every half second until it holds or timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ok, why := check()
		if ok {
			return
		}
		last = why
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not after %s: %s", what, timeout, last)
}

func conditionMessages(conds []metav1.Condition) string {
	var out []string
	for _, c := range conds {
		out = append(out, c.Type+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
	}
	return strings.Join(out, "; ")
}
