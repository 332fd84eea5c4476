package clusters

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
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
// lands on the new cluster. The stack and the infrastructure come from the
// team's private registry (TLS from its own CA, basic auth, named by
// secretRef and certSecretRef), whose password is rotated once all is
// installed; the contract objects' events reach the team's webhook through
// notification-controller. Pausing the Cluster stops every write;
// deleting it uninstalls the backends and leaves nothing behind.
func TestACommittedClusterGetsTheTeamsStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newClient(t)

	// The team's stack and its clusters' network backend live in the
	// team's private registry: TLS from its own CA, basic auth.
	private := framework.StartPrivateRegistry(t, "team-robot")
	secretRef, certSecretRef := privateAccess()

	// The team's Tenant, with a stack of plain manifests (no Namespace).
	stack := private.Push(t, ctx, "stacks/acme", "v1.0.0", acmeStack("acme"))
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "acme"}}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: stack.URL, SecretRef: secretRef, CertSecretRef: certSecretRef}, Tag: stack.Tag}},
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
	private.CreateSecrets(t, ctx, c, ns)

	// The infrastructure: a kustomize artifact whose ConfigMap is its
	// status object, read with CEL, from the private registry, signed
	// there with the cosign CLI and verified by source-controller before
	// anything of it is applied.
	network := private.Push(t, ctx, "backends/network", "v0.1.0", map[string][]byte{
		"network.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-network\ndata:\n  ready: \"true\"\n  cluster: ${CLUSTER_NAME}\n"),
	})
	signer, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.CosignSignPrivate(ctx, strings.TrimPrefix(network.URL, "oci://")+"@"+network.Digest, signer, private.DockerConfig(t), private.CACertPEM); err != nil {
		t.Fatal(err)
	}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "network-cosign"}, Data: map[string][]byte{"cosign.pub": signer.PublicPEM}}
	if err := c.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	infra := &clustersv1alpha1.CapwrightCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha"},
		Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
			Backend: &clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: network.URL, SecretRef: secretRef, CertSecretRef: certSecretRef,
					Verify: &providersv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: keys.Name}}},
				Tag: network.Tag}},
			StatusFrom: &clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-network",
				Ready: `data.ready == "true"`, Message: `"network of " + data.cluster`},
		}},
	}
	cp := controlPlane(ns, "alpha", "v1.31.0", nil)
	// The platform team's Alert for the contract kinds in this namespace.
	hook := applyContractAlert(t, ctx, ns)
	for _, o := range []client.Object{infra, cp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Without a Cluster, both wait for one.
	cpCondition(t, ctx, c, client.ObjectKeyFromObject(cp), clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.WaitingForClusterReason, time.Minute)

	cluster := framework.ContractCluster(ns, "alpha", map[string]string{"team": "acme"})
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
	var networkSource sourcev1.OCIRepository
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "infrastructure-alpha"}, &networkSource); err != nil {
		t.Fatal(err)
	}
	if v := apimeta.FindStatusCondition(networkSource.Status.Conditions, sourcev1.SourceVerifiedCondition); v == nil || v.Status != metav1.ConditionTrue {
		t.Fatalf("OCIRepository %s/%s installed without a verified signature: SourceVerified %+v", ns, networkSource.Name, v)
	}

	// Their events reach the team's webhook through notification-controller.
	e := waitAlerted(t, ctx, hook, clustersv1alpha1.ControlPlaneKind, ns, "alpha", "Initialized", func(e eventv1.Event) bool {
		return e.Reason == "Initialized" && e.Severity == eventv1.EventSeverityInfo
	})
	if want := fmt.Sprintf("%s:%d", cp.Spec.ControlPlaneEndpoint.Host, cp.Spec.ControlPlaneEndpoint.Port); !strings.Contains(e.Message, want) {
		t.Errorf("the Initialized event %q does not name the endpoint %s", e.Message, want)
	}
	if rev := e.Metadata[eventv1.MetaRevisionKey]; !strings.Contains(rev, "sha256:") {
		t.Errorf("the Initialized event's revision %q, want the digest of the chart installed (metadata %v)", rev, e.Metadata)
	}
	waitAlerted(t, ctx, hook, clustersv1alpha1.ClusterKind, ns, "alpha", "Ready=True", func(e eventv1.Event) bool {
		return strings.HasPrefix(e.Message, "Ready=True") && e.Severity == eventv1.EventSeverityInfo
	})

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

	t.Run("a rotated registry password fails the pulls until the Secret has it", func(t *testing.T) {
		rotatedPassword(t, ctx, c, private, ns, workload, tenant)
	})
	t.Run("a network tag not signed by the trusted key is refused and what was applied stays", func(t *testing.T) {
		unsignedNetwork(t, ctx, c, private, key)
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

// unsignedNetwork moves the network backend, verified with cosign, to a
// tag that is not signed and to one signed with another key: each is
// refused by source-controller (BackendReady=False VerificationError,
// naming the OCIRepository and how to sign), and the network ConfigMap
// Flux applied stays as it was. Back on the signed tag it is Ready again.
func unsignedNetwork(t *testing.T, ctx context.Context, c client.Client, private *framework.PrivateRegistry, key client.ObjectKey) {
	otherKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	infra := &clustersv1alpha1.CapwrightCluster{}
	if err := c.Get(ctx, key, infra); err != nil {
		t.Fatal(err)
	}
	signedTag := infra.Spec.Backend.Kustomize.Tag
	setTag := func(tag string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, key, infra); err != nil {
				return err
			}
			infra.Spec.Backend.Kustomize.Tag = tag
			return c.Update(ctx, infra)
		}); err != nil {
			t.Fatal(err)
		}
	}
	network := client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-network"}
	for tag, signer := range map[string]*framework.CosignKey{"v0.2.0": nil, "v0.3.0": otherKey} {
		pushed := private.Push(t, ctx, "backends/network", tag, map[string][]byte{
			"network.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-network\ndata:\n  ready: \"true\"\n  cluster: ${CLUSTER_NAME}\n  tag: " + tag + "\n"),
		})
		what := "not signed"
		if signer != nil {
			what = "signed with another key"
			if err := framework.CosignSignPrivate(ctx, strings.TrimPrefix(pushed.URL, "oci://")+"@"+pushed.Digest, signer, private.DockerConfig(t), private.CACertPEM); err != nil {
				t.Fatal(err)
			}
		}
		setTag(tag)
		cond := condition(t, ctx, c, &clustersv1alpha1.CapwrightCluster{}, key, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, sourcev1.VerificationError, 2*time.Minute)
		for _, want := range []string{"OCIRepository " + key.Namespace + "/infrastructure-" + key.Name, "cosign sign --key", "verify.secretRef"} {
			if !strings.Contains(cond.Message, want) {
				t.Errorf("BackendReady of %s %s says %q; want %q in it", tag, what, cond.Message, want)
			}
		}
		t.Logf("%s, %s, refused: %s", tag, what, cond.Message)
		var cm corev1.ConfigMap
		if err := c.Get(ctx, network, &cm); err != nil {
			t.Fatalf("the network ConfigMap after %s was refused: %v", tag, err)
		}
		if _, changed := cm.Data["tag"]; changed {
			t.Errorf("ConfigMap %s has %v after %s was refused; want the signed v0.1.0's data", network, cm.Data, tag)
		}
	}
	setTag(signedTag)
	condition(t, ctx, c, &clustersv1alpha1.CapwrightCluster{}, key, clustersv1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
}

// rotatedPassword changes the private registry's password under the
// installed stack and network backend: both their OCIRepositories fail to
// pull, and what was installed stays; once the Secret holds the new
// password both pull again, and a new stack version reaches the cluster.
func rotatedPassword(t *testing.T, ctx context.Context, c client.Client, private *framework.PrivateRegistry, ns string, workload kubernetes.Interface, tenant *tenancyv1alpha1.Tenant) {
	sources := privateSources(t, ctx, c, private, ns, 2)
	private.Rotate(t)
	for i := range sources {
		if err := framework.RequestReconcile(ctx, c, &sources[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, msg := range waitSources(t, ctx, c, sources, metav1.ConditionFalse, time.Minute) {
		t.Logf("with the old password: %s", msg)
		if !strings.Contains(strings.ToLower(msg), "unauthorized") && !strings.Contains(msg, "401") {
			t.Errorf("OCIRepository %s, want the registry's refusal of the credentials", msg)
		}
	}
	if cm, err := workload.CoreV1().ConfigMaps("acme").Get(ctx, "acme-settings", metav1.GetOptions{}); err != nil || cm.Data["team"] != "acme" {
		t.Errorf("the stack installed before the rotation is gone (%v)", err)
	}

	updated := time.Now()
	private.UpdateCredentials(t, ctx, c, ns)
	for i := range sources {
		if err := framework.RequestReconcile(ctx, c, &sources[i]); err != nil {
			t.Fatal(err)
		}
	}
	waitSources(t, ctx, c, sources, metav1.ConditionTrue, time.Minute)
	if accepted, refused := fluxPulls(private, updated); accepted == 0 || refused > 0 {
		t.Errorf("after the Secret was updated the registry let in %d requests of source-controller and refused %d; want some let in, none refused", accepted, refused)
	}

	// A new version of the stack, pulled with the new password.
	next := private.Push(t, ctx, "stacks/acme", "v1.0.1", acmeStack("acme-rotated"))
	var tn tenancyv1alpha1.Tenant
	if err := c.Get(ctx, client.ObjectKeyFromObject(tenant), &tn); err != nil {
		t.Fatal(err)
	}
	tn.Spec.Stack.Kustomize.Tag = next.Tag
	if err := c.Update(ctx, &tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 2*time.Minute, "the stack's new version on cluster alpha", func(ctx context.Context) (bool, string) {
		cm, err := workload.CoreV1().ConfigMaps("acme").Get(ctx, "acme-settings", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["team"] == "acme-rotated", "team " + cm.Data["team"]
	})

	// No password in the Tenant's or the CapwrightCluster's status, nor
	// in the events of the namespace.
	var texts []string
	var infra clustersv1alpha1.CapwrightCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alpha"}, &infra); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tenant), &tn); err != nil {
		t.Fatal(err)
	}
	for _, cond := range append(infra.Status.Conditions, tn.Status.Conditions...) {
		texts = append(texts, "condition "+cond.Type+": "+cond.Message)
	}
	for _, line := range tn.Status.Clusters {
		texts = append(texts, "cluster line "+line.Name+": "+line.Message)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		texts = append(texts, "event "+e.Reason+": "+e.Message)
	}
	private.AssertNotShown(t, []string{env.LogPath("capwright-manager"), env.LogPath("source-controller")}, texts...)
}

// acmeStack is the team's stack: plain manifests (no Namespace).
func acmeStack(team string) map[string][]byte {
	return map[string][]byte{"config.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: acme-settings\ndata:\n  team: " + team + "\n")}
}

func clusterLines(tn tenancyv1alpha1.Tenant) string {
	var lines []string
	for _, cl := range tn.Status.Clusters {
		lines = append(lines, cl.Namespace+"/"+cl.Name+" "+string(cl.Phase)+": "+cl.Message)
	}
	return strings.Join(lines, "; ")
}
