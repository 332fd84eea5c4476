package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// stackFiles is the tenant's kustomize artifact: no kustomization.yaml
// (kustomize-controller generates one), a Namespace that kustomize renames
// to the target namespace, and a Deployment of zero replicas — the
// workload clusters have no nodes, and kstatus counts a scaled-to-zero
// Deployment that its controller observed as healthy.
var stackFiles = map[string][]byte{
	"namespace.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: stack
`),
	"configmap.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: stack-config
  namespace: stack
data:
  greeting: hello
`),
	"deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: stack-app
  namespace: stack
spec:
  replicas: 0
  selector:
    matchLabels: {app: stack-app}
  template:
    metadata:
      labels: {app: stack-app}
    spec:
      containers:
      - name: app
        image: registry.example.com/stack-app:1.0.0
`),
}

// quotaConfigMaps is the ConfigMap quota of the tenant's namespace.
const quotaConfigMaps = 3

const (
	tenantName   = "acme"
	selectLabel  = "tenancy.example.com/team"
	targetNS     = tenantName // the default stack.targetNamespace
	managementNS = tenancyv1alpha1.DefaultNamespacePrefix + tenantName
)

func TestTenantLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	remote := make([]client.Client, len(workloads))
	for i, w := range workloads {
		remote[i] = newClient(t, w.Config)
	}

	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/stack", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workloads {
		setClusterLabel(t, ctx, c, w.Name, selectLabel, tenantName)
	}
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: tenantName},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{selectLabel: tenantName}},
				Namespaces: []string{clusterNamespace},
			},
			Stack: tenancyv1alpha1.StackSpec{
				Kustomize: &tenancyv1alpha1.KustomizeStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true},
					Tag:                 art.Tag,
				},
				Timeout: &metav1.Duration{Duration: time.Minute},
			},
			Management: &tenancyv1alpha1.ManagementSpec{Quota: &corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{"count/configmaps": resource.MustParse(fmt.Sprint(quotaConfigMaps))},
			}},
		},
	}
	start := time.Now()
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	tn = waitTenant(t, ctx, c, tenantName, 3*time.Minute, "Tenant Ready on both clusters", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 2
	})
	t.Logf("Tenant Ready on 2 clusters %s after it was created", time.Since(start).Round(time.Millisecond))
	for _, line := range tn.Status.Clusters {
		if !strings.HasPrefix(line.AppliedRevision, art.Tag+"@") {
			t.Errorf("cluster %s: appliedRevision %q, want %s@…", line.Name, line.AppliedRevision, art.Tag)
		}
	}
	for i := range workloads {
		assertStackInstalled(t, ctx, remote[i], workloads[i].Name)
	}
	assertManagementObjects(t, ctx, c)
	t.Run("the namespace enforces the tenant's Pod Security level", func(t *testing.T) { assertPodSecurity(t, ctx, c) })
	t.Run("the manager writes namespaces and RBAC only in Tenants' namespaces", func(t *testing.T) { assertManagerConfined(t, ctx, c) })

	t.Run("the quota is enforced and the tenant cannot change it", func(t *testing.T) {
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: managementNS, Name: render.TenantObjectName}}
		// The API server admits nothing under a quota until
		// kube-controller-manager has counted what the namespace holds.
		eventually(t, time.Minute, "quota counted", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(quota), quota)
			_, counted := quota.Status.Used["count/configmaps"]
			return err == nil && counted, fmt.Sprint(err, quota.Status)
		})
		// As the tenant's ServiceAccount, which its Flux Kustomizations
		// impersonate.
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + managementNS + ":" + tenantName}
		as := newClient(t, cfg)
		var refused error
		var created []client.Object
		for i := range quotaConfigMaps + 1 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: managementNS, Name: fmt.Sprintf("quota-probe-%d", i)}}
			if refused = as.Create(ctx, cm); refused != nil {
				break
			}
			created = append(created, cm)
		}
		if !apierrors.IsForbidden(refused) || !strings.Contains(refused.Error(), "exceeded quota") {
			t.Errorf("creating more ConfigMaps than the quota allows: %v, want the quota to refuse", refused)
		}
		quota.Spec.Hard["count/configmaps"] = resource.MustParse("1000")
		if err := as.Update(ctx, quota); !apierrors.IsForbidden(err) {
			t.Errorf("the tenant's ServiceAccount changed its quota: %v", err)
		}
		// Leave room for the ConfigMap a later step creates.
		for _, o := range created {
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, time.Minute, "quota released", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(quota), quota)
			used := quota.Status.Used["count/configmaps"]
			return err == nil && used.Value() < quotaConfigMaps, fmt.Sprint(err, quota.Status)
		})
	})

	t.Run("a deleted management object is put back at once", func(t *testing.T) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: managementNS, Name: tenantName}}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sa), sa); err != nil {
			t.Fatal(err)
		}
		old := sa.UID
		if err := c.Delete(ctx, sa); err != nil {
			t.Fatal(err)
		}
		// Well within the manager's 30 s resync: the watch must bring it back.
		eventually(t, 10*time.Second, "ServiceAccount put back", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(sa), sa)
			return err == nil && sa.UID != old, fmt.Sprint(err)
		})
	})

	t.Run("capwright build prints what the manager applied, and diff what would change", func(t *testing.T) { buildAndDiff(t, ctx, c, tn) })

	t.Run("a resync with nothing changed writes nothing", func(t *testing.T) {
		since := time.Now()
		if err := framework.Poke(ctx, c, tn); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if lines := writesSince(t, since); len(lines) > 0 {
			t.Fatalf("a resync with nothing changed made %d writes:\n%s", len(lines), strings.Join(lines, "\n"))
		}
	})

	t.Run("a new tag reaches every cluster", func(t *testing.T) {
		files := map[string][]byte{}
		for k, v := range stackFiles {
			files[k] = v
		}
		files["configmap.yaml"] = []byte(strings.Replace(string(stackFiles["configmap.yaml"]), "greeting: hello", "greeting: hello-again", 1))
		next, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/stack", "v1.1.0", files, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		updateTenant(t, ctx, c, tenantName, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Stack.Kustomize.Tag = next.Tag })
		waitTenant(t, ctx, c, tenantName, 2*time.Minute, "Ready at "+next.Tag+" on both clusters", func(tn *tenancyv1alpha1.Tenant) bool {
			ok := isReady(tn) && tn.Status.ReadyClusters == 2
			for _, l := range tn.Status.Clusters {
				ok = ok && strings.HasPrefix(l.AppliedRevision, next.Tag+"@")
			}
			return ok
		})
		t.Logf("tag %s Ready on 2 clusters %s after the Tenant was changed", next.Tag, time.Since(start).Round(time.Millisecond))
		for i, w := range workloads {
			var cm corev1.ConfigMap
			if err := remote[i].Get(ctx, client.ObjectKey{Namespace: targetNS, Name: "stack-config"}, &cm); err != nil || cm.Data["greeting"] != "hello-again" {
				t.Errorf("%s: ConfigMap %s/stack-config: %v %v, want greeting hello-again", w.Name, targetNS, cm.Data, err)
			}
		}
	})

	t.Run("relabelling a Cluster moves it out of the selection and back", func(t *testing.T) {
		w := workloads[1]
		setClusterLabel(t, ctx, c, w.Name, selectLabel, "someone-else")
		start := time.Now()
		waitTenant(t, ctx, c, tenantName, time.Minute, "one cluster selected", func(tn *tenancyv1alpha1.Tenant) bool {
			return tn.Status.TotalClusters == 1 && clusterLine(tn, w.Name) == nil && isReady(tn)
		})
		// Uninstalled means pruned down to the target Namespace, which the
		// workload cluster's controller-manager finalizes.
		eventually(t, 2*time.Minute, "stack uninstalled from "+w.Name, func() (bool, string) {
			err := remote[1].Get(ctx, client.ObjectKey{Name: targetNS}, &corev1.Namespace{})
			return apierrors.IsNotFound(err), "Namespace " + targetNS + " still there"
		})
		t.Logf("stack uninstalled from %s %s after the Cluster was relabelled", w.Name, time.Since(start).Round(time.Millisecond))
		assertStackInstalled(t, ctx, remote[0], workloads[0].Name)

		setClusterLabel(t, ctx, c, w.Name, selectLabel, tenantName)
		start = time.Now()
		waitTenant(t, ctx, c, tenantName, 3*time.Minute, "Ready on both clusters again", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2
		})
		t.Logf("stack back on %s %s after the Cluster was relabelled back", w.Name, time.Since(start).Round(time.Millisecond))
		assertStackInstalled(t, ctx, remote[1], w.Name)
	})

	t.Run("a broken kubeconfig fails that cluster only", func(t *testing.T) {
		w := workloads[1]
		secret := &corev1.Secret{}
		key := client.ObjectKey{Namespace: clusterNamespace, Name: render.KubeconfigSecretName(w.Name)}
		if err := c.Get(ctx, key, secret); err != nil {
			t.Fatal(err)
		}
		secret.Data["value"] = closedPortKubeconfig(t, w.Kubeconfig)
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		// Flux does not watch kubeconfig Secrets; a user would run
		// `flux reconcile` (or wait for spec.stack.interval).
		requestReconcile(t, ctx, c, clusterKustomization(t, ctx, c, w.Name))
		tn := waitTenant(t, ctx, c, tenantName, 2*time.Minute, w.Name+" Failed", func(tn *tenancyv1alpha1.Tenant) bool {
			l := clusterLine(tn, w.Name)
			return l != nil && l.Phase == tenancyv1alpha1.ClusterPhaseFailed
		})
		if l := clusterLine(tn, workloads[0].Name); l == nil || l.Phase != tenancyv1alpha1.ClusterPhaseReady {
			t.Errorf("the other cluster is not Ready: %s", tenantState(tn))
		}
		if tn.Status.ReadyClusters != 1 || tn.Status.FailedClusters != 1 || isReady(tn) {
			t.Errorf("want 1 Ready, 1 Failed and the Tenant not Ready: %s", tenantState(tn))
		}
		t.Logf("broken cluster's line: %+v", *clusterLine(tn, w.Name))
		eventually(t, 30*time.Second, "a Warning event on the Tenant names the failed cluster", func() (bool, string) {
			var events corev1.EventList
			if err := c.List(ctx, &events); err != nil {
				return false, err.Error()
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == tenancyv1alpha1.TenantKind && e.InvolvedObject.Name == tenantName && e.Type == corev1.EventTypeWarning &&
					strings.Contains(e.Message, "cluster "+clusterNamespace+"/"+w.Name+" Failed") {
					return true, ""
				}
			}
			return false, "no such event"
		})

		secret.Data["value"] = w.Kubeconfig
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		requestReconcile(t, ctx, c, clusterKustomization(t, ctx, c, w.Name))
		waitTenant(t, ctx, c, tenantName, 2*time.Minute, "Ready on both clusters after the repair", func(tn *tenancyv1alpha1.Tenant) bool {
			return isReady(tn) && tn.Status.ReadyClusters == 2
		})
	})

	t.Run("deleting the Tenant removes what it installed and nothing else", func(t *testing.T) {
		user := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: managementNS, Name: "user-notes"}, Data: map[string]string{"a": "b"}}
		if err := c.Create(ctx, user); err != nil {
			t.Fatal(err)
		}
		current := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: tenantName}, current); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Delete(ctx, current); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "Tenant gone", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Name: tenantName}, &tenancyv1alpha1.Tenant{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			return false, tenantState(current)
		})
		t.Logf("Tenant deleted %s after the delete request", time.Since(start).Round(time.Millisecond))
		labelled := client.MatchingLabels{tenancyv1alpha1.TenantLabel: tenantName}
		var kss kustomizev1.KustomizationList
		var repos sourcev1.OCIRepositoryList
		if err := c.List(ctx, &kss, labelled); err != nil || len(kss.Items) > 0 {
			t.Errorf("Kustomizations left: %d (%v)", len(kss.Items), err)
		}
		if err := c.List(ctx, &repos, labelled); err != nil || len(repos.Items) > 0 {
			t.Errorf("OCIRepositories left: %d (%v)", len(repos.Items), err)
		}
		for i, w := range workloads {
			for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
				name := "stack-config"
				if _, ok := obj.(*appsv1.Deployment); ok {
					name = "stack-app"
				}
				err := remote[i].Get(ctx, client.ObjectKey{Namespace: targetNS, Name: name}, obj)
				if !apierrors.IsNotFound(err) {
					t.Errorf("%s: %T %s/%s still there after the Tenant was deleted (%v)", w.Name, obj, targetNS, name, err)
				}
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: managementNS}, &corev1.Namespace{}); err != nil {
			t.Errorf("the management Namespace %s is gone: %v", managementNS, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(user), &corev1.ConfigMap{}); err != nil {
			t.Errorf("the user's ConfigMap is gone: %v", err)
		}
		eventually(t, time.Minute, "ServiceAccount and RoleBinding garbage-collected", func() (bool, string) {
			errSA := c.Get(ctx, client.ObjectKey{Namespace: managementNS, Name: tenantName}, &corev1.ServiceAccount{})
			errRB := c.Get(ctx, client.ObjectKey{Namespace: managementNS, Name: render.TenantObjectName}, &rbacv1.RoleBinding{})
			return apierrors.IsNotFound(errSA) && apierrors.IsNotFound(errRB), "still there"
		})
	})
}

// assertStackInstalled checks the stack's objects on a workload cluster,
// in the target namespace and labelled for the tenant.
func assertStackInstalled(t *testing.T, ctx context.Context, c client.Client, cluster string) {
	t.Helper()
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: targetNS}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "stack-config"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "stack-app"}}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("%s: %T %s: %v", cluster, obj, client.ObjectKeyFromObject(obj), err)
			continue
		}
		if got := obj.GetLabels()[tenancyv1alpha1.TenantLabel]; got != tenantName {
			t.Errorf("%s: %T %s has %s=%q, want %q", cluster, obj, client.ObjectKeyFromObject(obj), tenancyv1alpha1.TenantLabel, got, tenantName)
		}
	}
}

// assertManagementObjects checks the tenant's namespace, ServiceAccount
// and RoleBinding on the management cluster.
func assertManagementObjects(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	var rb rbacv1.RoleBinding
	if err := c.Get(ctx, client.ObjectKey{Namespace: managementNS, Name: render.TenantObjectName}, &rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Name != tenancyv1alpha1.TenantClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != tenantName {
		t.Errorf("RoleBinding %s/%s: roleRef %s, subjects %v", managementNS, rb.Name, rb.RoleRef.Name, rb.Subjects)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: managementNS, Name: tenantName}, &corev1.ServiceAccount{}); err != nil {
		t.Error(err)
	}
	var quota corev1.ResourceQuota
	if err := c.Get(ctx, client.ObjectKey{Namespace: managementNS, Name: render.TenantObjectName}, &quota); err != nil {
		t.Fatalf("ResourceQuota of spec.management.quota: %v", err)
	}
	if got := quota.Spec.Hard["count/configmaps"]; got.Value() != quotaConfigMaps {
		t.Errorf("ResourceQuota %s/%s: hard %v, want count/configmaps %d", managementNS, quota.Name, quota.Spec.Hard, quotaConfigMaps)
	}
}

// clusterKustomization is the tenant's stack Kustomization for one
// cluster (not the one creating its target namespace).
func clusterKustomization(t *testing.T, ctx context.Context, c client.Client, cluster string) *kustomizev1.Kustomization {
	t.Helper()
	ks := &kustomizev1.Kustomization{}
	key := client.ObjectKey{Namespace: clusterNamespace, Name: render.TenantClusterObjectName(tenantName, types.NamespacedName{Namespace: clusterNamespace, Name: cluster})}
	if err := c.Get(ctx, key, ks); err != nil {
		t.Fatalf("the stack Kustomization of cluster %s: %v", cluster, err)
	}
	return ks
}

// closedPortKubeconfig is kubeconfig with every server moved to a port
// nothing listens on.
func closedPortKubeconfig(t *testing.T, kubeconfig []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://127.0.0.1:1"
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
