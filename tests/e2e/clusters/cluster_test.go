package clusters

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// TestACommittedClusterGetsTheTeamsStack is the whole loop: a team's
// Tenant, then a Cluster whose control plane is the simulated operator's
// chart (Flux installs it, hcpsim starts a real API server) and whose
// infrastructure is a kustomize artifact with a CEL status view; Cluster
// API marks the Cluster Available through the contract fields Capwright
// sets, the kubeconfig Secret works with a client, and the Tenant's stack
// lands on the new cluster. Pausing the Cluster stops every write;
// deleting it uninstalls the backends and leaves nothing behind.
func TestACommittedClusterGetsTheTeamsStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)

	// The team's Tenant, with a stack of plain manifests (no Namespace).
	stack, err := framework.PushFiles(ctx, env.Registry.Host, "stacks/acme", "v1.0.0", map[string][]byte{
		"config.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: acme-settings\ndata:\n  team: acme\n"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "acme"}}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: stack.URL, Insecure: true}, Tag: stack.Tag}},
		},
	}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	ns := "tenant-acme"
	eventually(t, ctx, time.Minute, "the tenant's namespace", func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return err == nil, "namespace tenant-acme not there yet"
	})

	// The infrastructure: a kustomize artifact whose ConfigMap is its
	// status object, read with CEL.
	network, err := framework.PushFiles(ctx, env.Registry.Host, "backends/network", "v0.1.0", map[string][]byte{
		"network.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-network\ndata:\n  ready: \"true\"\n  cluster: ${CLUSTER_NAME}\n"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	infra := &clustersv1alpha1.CapwrightCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha"},
		Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
			Backend: &clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: network.URL, Insecure: true}, Tag: network.Tag}},
			StatusFrom: &clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-network",
				Ready: `data.ready == "true"`, Message: `"network of " + data.cluster`},
		}},
	}
	cp := controlPlane(ns, "alpha", "v1.31.0", nil)
	for _, o := range []client.Object{infra, cp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Without a Cluster, both wait for one.
	cpCondition(t, ctx, c, client.ObjectKeyFromObject(cp), clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.WaitingForClusterReason, time.Minute)

	cluster := newCluster(ns, "alpha", map[string]string{"team": "acme"})
	start := time.Now()
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "alpha"}
	cpCondition(t, ctx, c, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	cpReady := time.Since(start)
	if err := c.Get(ctx, key, cp); err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(cp.Status.Initialization.ControlPlaneInitialized, false) || cp.Status.Version != "v1.31.0" || !ptr.Deref(cp.Status.ExternalManagedControlPlane, false) {
		t.Fatalf("contract status: %+v", cp.Status)
	}
	sim, ok := env.HCPSimWorkloadCluster(ns, "alpha")
	if !ok {
		t.Fatal("hcpsim runs no control plane for SimulatedControlPlane tenant-acme/alpha")
	}
	if got := cp.Spec.ControlPlaneEndpoint; got.Host == "" || got.Port == 0 || !strings.Contains(sim.Config.Host, got.Host) {
		t.Fatalf("spec.controlPlaneEndpoint = %+v, the backend serves at %s", got, sim.Config.Host)
	}
	if err := c.Get(ctx, key, infra); err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(infra.Status.Initialization.Provisioned, false) {
		t.Fatalf("CapwrightCluster not provisioned: %+v", infra.Status)
	}

	// Cluster API's own view.
	clusterCondition(t, ctx, c, key, "ControlPlaneInitialized", metav1.ConditionTrue, 2*time.Minute)
	clusterCondition(t, ctx, c, key, "Available", metav1.ConditionTrue, 2*time.Minute)
	available := time.Since(start)
	t.Run("capwright status shows both backends and what Flux applied", func(t *testing.T) { statusShowsBackends(t, ctx, c, key) })

	// The kubeconfig Secret reaches the new cluster.
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alpha-kubeconfig"}, &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != "cluster.x-k8s.io/secret" || secret.Labels["cluster.x-k8s.io/cluster-name"] != "alpha" {
		t.Fatalf("kubeconfig Secret type %s labels %v", secret.Type, secret.Labels)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	workload, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workload.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("the kubeconfig in Secret %s/alpha-kubeconfig does not reach the cluster: %v", ns, err)
	}

	// The team's stack on it.
	eventually(t, ctx, 3*time.Minute, "the tenant's stack on cluster alpha", func(ctx context.Context) (bool, string) {
		cm, err := workload.CoreV1().ConfigMaps("acme").Get(ctx, "acme-settings", metav1.GetOptions{})
		if err != nil {
			var tn tenancyv1alpha1.Tenant
			_ = c.Get(ctx, client.ObjectKey{Name: "acme"}, &tn)
			return false, err.Error() + "; tenant clusters: " + clusterLines(tn)
		}
		return cm.Data["team"] == "acme", "wrong data"
	})
	var stackReady time.Time
	eventually(t, ctx, time.Minute, "Tenant acme Ready on 1/1 cluster", func(ctx context.Context) (bool, string) {
		var tn tenancyv1alpha1.Tenant
		if err := c.Get(ctx, client.ObjectKey{Name: "acme"}, &tn); err != nil {
			return false, err.Error()
		}
		if len(tn.Status.Clusters) == 1 {
			stackReady = tn.Status.Clusters[0].LastTransitionTime.Time
		}
		return tn.Status.ReadyClusters == 1 && tn.Status.TotalClusters == 1, clusterLines(tn)
	})
	// The cluster line's transition is in whole seconds.
	t.Logf("Cluster applied → CapwrightControlPlane Ready %s, the team's stack Ready on it %s (the line's transition, ±1s), Cluster API's Available %s",
		cpReady.Round(100*time.Millisecond), stackReady.Sub(start.Truncate(time.Second)), available.Round(100*time.Millisecond))

	// Nothing changes: nothing is written, across a resync (30s) and
	// Cluster API's own status updates.
	since := time.Now()
	time.Sleep(32 * time.Second)
	framework.NoManagerWrites(t, env, since, "the manager while nothing changed")

	t.Run("capwright build prints what the manager applied", func(t *testing.T) {
		buildMatchesManager(t, ctx, c, []client.Object{tenant, infra, cp}, cluster)
	})

	// Paused: Paused=True once, then no write at all, and a spec change
	// waits.
	if err := c.Get(ctx, key, cluster); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	_ = unstructured.SetNestedField(cluster.Object, true, "spec", "paused")
	if err := c.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	cpCondition(t, ctx, c, key, clustersv1alpha1.PausedCondition, metav1.ConditionTrue, clustersv1alpha1.PausedReason, time.Minute)
	time.Sleep(2 * time.Second) // the Paused write of the other kind
	since = time.Now()
	if err := c.Get(ctx, key, cp); err != nil {
		t.Fatal(err)
	}
	cp.Spec.Version = "v1.31.1"
	if err := c.Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	time.Sleep(35 * time.Second) // more than a resync (30s)
	framework.NoManagerWrites(t, env, since, "the manager while Cluster tenant-acme/alpha is paused")
	var hr helmv2.HelmRelease
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "controlplane-alpha"}, &hr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hr.Spec.Values.Raw), "v1.31.1") {
		t.Fatalf("the HelmRelease took the new version while the Cluster is paused: %s", hr.Spec.Values.Raw)
	}
	if err := c.Get(ctx, key, cluster); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(cluster.DeepCopy())
	unstructured.RemoveNestedField(cluster.Object, "spec", "paused")
	if err := c.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	cpCondition(t, ctx, c, key, clustersv1alpha1.PausedCondition, metav1.ConditionFalse, "", time.Minute)
	eventually(t, ctx, 2*time.Minute, "the control plane at v1.31.1 after the pause", func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, key, cp); err != nil {
			return false, err.Error()
		}
		return cp.Status.Version == "v1.31.1", "status.version " + cp.Status.Version
	})

	// Deleting: the Tenant first (its stack goes through the kubeconfig),
	// then the Cluster: the backends are uninstalled by Flux, the control
	// plane stops, the kubeconfig Secret goes, and nothing else is left.
	if err := c.Delete(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, tenant, 2*time.Minute)
	pids := env.HCPSimPIDs(ns, "alpha")
	if len(pids) == 0 {
		t.Fatal("no processes of the simulated control plane")
	}
	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, ctx, c, cluster, 3*time.Minute)
	if env.HCPSimRunning(ns, "alpha") {
		t.Fatal("the simulated control plane still runs after its Cluster was deleted")
	}
	for _, check := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&clustersv1alpha1.CapwrightControlPlane{}, key},
		{&clustersv1alpha1.CapwrightCluster{}, key},
		{&helmv2.HelmRelease{}, client.ObjectKey{Namespace: ns, Name: "controlplane-alpha"}},
		{&sourcev1.OCIRepository{}, client.ObjectKey{Namespace: ns, Name: "controlplane-alpha"}},
		{&kustomizev1.Kustomization{}, client.ObjectKey{Namespace: ns, Name: "infrastructure-alpha"}},
		{&sourcev1.OCIRepository{}, client.ObjectKey{Namespace: ns, Name: "infrastructure-alpha"}},
		{&corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: "alpha-kubeconfig"}},
		{&corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: "alpha-admin-kubeconfig"}},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: ns, Name: "alpha-network"}},
	} {
		if err := c.Get(ctx, check.key, check.obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left after the Cluster was deleted (err %v)", check.obj, check.key, err)
		}
	}
	sims := &unstructured.UnstructuredList{}
	sims.SetGroupVersionKind(hcpsim.GVK.GroupVersion().WithKind(hcpsim.Kind + "List"))
	if err := c.List(ctx, sims, client.InNamespace(ns)); err != nil || len(sims.Items) != 0 {
		t.Errorf("SimulatedControlPlanes left: %d (err %v)", len(sims.Items), err)
	}
}

func clusterLines(tn tenancyv1alpha1.Tenant) string {
	var lines []string
	for _, cl := range tn.Status.Clusters {
		lines = append(lines, cl.Namespace+"/"+cl.Name+" "+string(cl.Phase)+": "+cl.Message)
	}
	return strings.Join(lines, "; ")
}
