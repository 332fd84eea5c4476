package lockdown

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// capiManagerUser is the ServiceAccount of Cluster API's released core
// components, which the plane runs its manager as.
const capiManagerUser = "system:serviceaccount:capi-system:capi-manager"

var clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}

// testContractKinds: the workload cluster becomes Cluster
// clusters/lockdown-1, its control plane a CapwrightControlPlane whose
// kustomize backend (a status ConfigMap and a Secret with the workload
// cluster's kubeconfig) names a backend.serviceAccountName, its
// infrastructure a CapwrightCluster without backend. Under the lockdown
// Flux installs the backend as that ServiceAccount: refused, with a
// condition naming it and what to grant, until a Role grants it; the
// audit log shows the ServiceAccount wrote the backend. Cluster API's
// manager runs as its own ServiceAccount, so it reads and patches the
// contract objects only through Capwright's ClusterRole aggregated into
// its role (capwright-cluster-api-contract): the Cluster's
// InfrastructureReady, ControlPlaneAvailable and Available are Cluster
// API's own view of them. The Cluster stays for the tenant stacks.
func testContractKinds(ctx context.Context, t *testing.T, c client.Client) {
	const installer = "backend-installer"
	name := workload.Name
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: installer}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	endpoint, err := url.Parse(workload.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	art, err := framework.PushFiles(ctx, env.Registry.Host, "backends/lockdown-control-plane", "v1.0.0", map[string][]byte{
		"status.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-control-plane\ndata:\n  ready: \"true\"\n  endpoint: %q\n", endpoint.Host),
		"kubeconfig.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${CLUSTER_NAME}-admin\ntype: Opaque\ndata:\n  value: %s\n",
			base64.StdEncoding.EncodeToString(workload.Kubeconfig)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := &clustersv1alpha1.CapwrightControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name},
		Spec: clustersv1alpha1.CapwrightControlPlaneSpec{Version: "v1.36.3", CapwrightControlPlaneResourceSpec: clustersv1alpha1.CapwrightControlPlaneResourceSpec{
			Backend: clustersv1alpha1.Backend{
				Kustomize: &clustersv1alpha1.KustomizeBackend{
					OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true}, Tag: art.Tag},
				ServiceAccountName: installer,
				Timeout:            &metav1.Duration{Duration: 30 * time.Second},
			},
			StatusFrom: clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-control-plane",
				Ready: `data.ready == "true"`, Endpoint: `data.endpoint`},
			Kubeconfig: clustersv1alpha1.KubeconfigSource{SecretName: "${CLUSTER_NAME}-admin"},
		}},
	}
	infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: name}}
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	cluster.SetNamespace(clusterNamespace)
	cluster.SetName(name)
	// The labels the guide's ClusterResourceSet selects, for the stacks.
	cluster.SetLabels(stackIdentityClusterLabels(t))
	_ = unstructured.SetNestedMap(cluster.Object, map[string]any{"apiGroup": clustersv1alpha1.GroupVersion.Group, "kind": clustersv1alpha1.ControlPlaneKind, "name": name}, "spec", "controlPlaneRef")
	_ = unstructured.SetNestedMap(cluster.Object, map[string]any{"apiGroup": clustersv1alpha1.GroupVersion.Group, "kind": clustersv1alpha1.ClusterKind, "name": name}, "spec", "infrastructureRef")
	start := time.Now()
	for _, o := range []client.Object{cp, infra} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatal(err)
	}

	// The ServiceAccount may not create the backend's objects yet.
	user := "system:serviceaccount:" + clusterNamespace + ":" + installer
	cond := waitControlPlane(ctx, t, c, 2*time.Minute, clustersv1alpha1.BackendReadyCondition, "the backend refused to "+user, func(cond *metav1.Condition) bool {
		return cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "forbidden: User \""+user+"\"") &&
			strings.Contains(cond.Message, "Flux installs the backend as that ServiceAccount (spec.backend.serviceAccountName")
	})
	t.Logf("backend before the grant: %s: %s", cond.Reason, cond.Message)
	// Cluster API's view of the infrastructure, read from the
	// CapwrightCluster it owns.
	waitClusterCondition(ctx, t, c, "InfrastructureReady", 2*time.Minute)

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: installer}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
	}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: installer},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: installer},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: clusterNamespace, Name: installer}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: "controlplane-" + name}, ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.ServiceAccountName != installer {
		t.Errorf("the backend's Kustomization impersonates %q, want %q", ks.Spec.ServiceAccountName, installer)
	}
	requestReconcile(ctx, t, c, ks)
	waitControlPlane(ctx, t, c, 2*time.Minute, clustersv1alpha1.ReadyCondition, "Ready with the grant", func(cond *metav1.Condition) bool {
		return cond.Status == metav1.ConditionTrue
	})
	checkInstallerWrites(t, clusterNamespace, installer, start, "configmaps "+name+"-control-plane", "secrets "+name+"-admin")

	// Cluster API's view of the control plane, and of the cluster it
	// reaches through the kubeconfig Secret Capwright wrote.
	for _, typ := range []string{"ControlPlaneInitialized", "ControlPlaneAvailable", "Available"} {
		waitClusterCondition(ctx, t, c, typ, 2*time.Minute)
	}
	t.Logf("Cluster %s/%s Available %s after it was created", clusterNamespace, name, time.Since(start).Round(time.Millisecond))
	writes, err := env.Writes(capiManagerUser, start)
	if err != nil {
		t.Fatal(err)
	}
	patched := map[string]bool{}
	for _, w := range writes {
		if w.Code < 300 && w.ImpersonatedBy == "" {
			patched[w.Resource+" "+w.Name] = true
		}
	}
	for _, want := range []string{"capwrightcontrolplanes " + name, "capwrightclusters " + name} {
		if !patched[want] {
			t.Errorf("Cluster API's manager, as %s, did not write %s (through capwright-cluster-api-contract)", capiManagerUser, want)
		}
	}
}

func waitControlPlane(ctx context.Context, t *testing.T, c client.Client, timeout time.Duration, typ, what string, ok func(*metav1.Condition) bool) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	key := client.ObjectKey{Namespace: clusterNamespace, Name: workload.Name}
	poll(ctx, t, timeout, fmt.Sprintf("CapwrightControlPlane %s: %s", key, what), func() (bool, string) {
		cp := &clustersv1alpha1.CapwrightControlPlane{}
		if err := c.Get(ctx, key, cp); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(cp.Status.Conditions, typ)
		if cond == nil || cond.ObservedGeneration != cp.Generation {
			return false, fmt.Sprintf("no %s of this generation: %+v", typ, cp.Status.Conditions)
		}
		got = *cond
		return ok(cond), fmt.Sprintf("%s=%s %s: %s", typ, cond.Status, cond.Reason, cond.Message)
	})
	return got
}

// waitClusterCondition waits until Cluster API says typ is True on the
// workload's Cluster.
func waitClusterCondition(ctx context.Context, t *testing.T, c client.Client, typ string, timeout time.Duration) {
	t.Helper()
	key := client.ObjectKey{Namespace: clusterNamespace, Name: workload.Name}
	poll(ctx, t, timeout, fmt.Sprintf("Cluster %s %s=True", key, typ), func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(clusterGVK)
		if err := c.Get(ctx, key, u); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, x := range conds {
			if m, _ := x.(map[string]any); m["type"] == typ {
				return m["status"] == "True", fmt.Sprint(m)
			}
		}
		return false, fmt.Sprintf("no %s; conditions %v", typ, conds)
	})
}

// startCAPIManager runs Cluster API's core manager, which the core
// provider installed, as the ServiceAccount its Deployment names.
func startCAPIManager(ctx context.Context, t *testing.T) *plane.CAPIManager {
	t.Helper()
	m, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system", ServiceAccount: "capi-manager"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
