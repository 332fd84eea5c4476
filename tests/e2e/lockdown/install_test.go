package lockdown

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// stackIdentityExample is the guide's ClusterResourceSet that grants a
// tenant stack's identity on workload clusters (docs/security.md).
const stackIdentityExample = "docs/examples/lockdown-stack-identity.yaml"

// TestCapwrightInstallsUnderLockdown: with Flux locked down, providers
// install through their installer ServiceAccount (the audit log shows
// it, not Flux, wrote their objects), a kind outside the installer role
// is refused until a ClusterRole aggregated into it allows it, and a
// deleted provider is pruned with the same identity before its binding
// goes. Cluster API's manager then runs as its own ServiceAccount: a
// Cluster of Capwright's contract kinds, whose backend installs as the
// ServiceAccount it names, becomes the workload cluster (contract_test.go),
// and Tenants' stacks, kustomize and chart, are refused on it until the
// guide's ClusterResourceSet, applied by that manager, grants the identity
// Flux impersonates there.
func TestCapwrightInstallsUnderLockdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	if !t.Run("providers", func(t *testing.T) { testProviders(ctx, t, c) }) {
		return
	}
	manager := startCAPIManager(ctx, t)
	defer manager.Stop()
	if !t.Run("contract kinds", func(t *testing.T) { testContractKinds(ctx, t, c) }) {
		return
	}
	t.Run("tenant stacks", func(t *testing.T) { testTenantStacks(ctx, t, c) })
}

func testTenantStacks(ctx context.Context, t *testing.T, c client.Client) {
	files := map[string][]byte{
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stack-config\n  namespace: stack\ndata:\n  greeting: hello\n"),
	}
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/globex", "v1.0.0", files, nil)
	if err != nil {
		t.Fatal(err)
	}
	chartURL, err := framework.PushChart(ctx, env.Registry.Host, "tenants/charts/initech", "initech", "0.1.0", map[string][]byte{
		"templates/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stack-config\ndata:\n  greeting: {{ .Values.greeting }}\n"),
		"values.yaml":              []byte("greeting: hello\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	selector := tenancyv1alpha1.ClusterSelector{Names: []string{workload.Name}, Namespaces: []string{clusterNamespace}}
	tenants := []*tenancyv1alpha1.Tenant{
		{ObjectMeta: metav1.ObjectMeta{Name: "globex"}, Spec: tenancyv1alpha1.TenantSpec{Clusters: selector, Stack: tenancyv1alpha1.StackSpec{
			Kustomize: &tenancyv1alpha1.KustomizeStack{OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true}, Tag: art.Tag},
			Timeout:   &metav1.Duration{Duration: 30 * time.Second},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "initech"}, Spec: tenancyv1alpha1.TenantSpec{Clusters: selector, Stack: tenancyv1alpha1.StackSpec{
			Chart:   &tenancyv1alpha1.ChartStack{OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: chartURL, Insecure: true}, Version: "0.1.0"},
			Timeout: &metav1.Duration{Duration: 30 * time.Second},
		}}},
	}
	for _, tn := range tenants {
		if err := c.Create(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	deleted := false
	defer func() {
		if !deleted {
			for _, tn := range tenants {
				_ = c.Delete(context.Background(), tn)
			}
		}
	}()

	// Flux impersonates the Cluster namespace's default ServiceAccount on
	// the workload cluster, which grants it nothing yet.
	user := "system:serviceaccount:" + clusterNamespace + ":default"
	for _, tn := range tenants {
		line := waitClusterLine(ctx, t, c, tn.Name, 2*time.Minute, "the stack refused on the workload cluster", func(l *tenancyv1alpha1.TenantClusterStatus) bool {
			return l.Phase != tenancyv1alpha1.ClusterPhaseReady && strings.Contains(l.Message, "forbidden") && strings.Contains(l.Message, user) &&
				strings.Contains(l.Message, "grant that ServiceAccount what the stack installs on the workload cluster")
		})
		t.Logf("Tenant %s before the binding: %s %s: %s", tn.Name, line.Phase, line.Reason, line.Message)
	}

	// The guide's ClusterResourceSet: Cluster API's manager hands the
	// workload cluster the binding its ConfigMap carries.
	applyStackIdentity(ctx, t, c)
	remote := newClient(t, workload.Config)
	binding := stackIdentityBinding(t)
	poll(ctx, t, 2*time.Minute, "the ClusterResourceSet applied and its binding on the workload cluster", func() (bool, string) {
		err := remote.Get(ctx, client.ObjectKeyFromObject(binding), &rbacv1.ClusterRoleBinding{})
		applied, state := crsApplied(ctx, t, c)
		return err == nil && applied, fmt.Sprintf("ClusterRoleBinding %s: %v; ClusterResourceSet: %s", binding.Name, err, state)
	})
	for _, tn := range tenants {
		requestStackReconcile(ctx, t, c, tn.Name)
	}
	for _, tn := range tenants {
		waitClusterLine(ctx, t, c, tn.Name, 2*time.Minute, "the stack Ready with the binding", func(l *tenancyv1alpha1.TenantClusterStatus) bool {
			return l.Phase == tenancyv1alpha1.ClusterPhaseReady
		})
		// Both stacks install into the Tenant's namespace (kustomize
		// renames the artifact's Namespace to it).
		cm := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: tn.Name, Name: "stack-config"}
		if err := remote.Get(ctx, key, cm); err != nil || cm.Data["greeting"] != "hello" {
			t.Fatalf("Tenant %s: the stack's ConfigMap %s on the workload cluster: %v %v", tn.Name, key, err, cm.Data)
		}
	}

	// Deleting the Tenants prunes the stacks, as the same identity.
	for _, tn := range tenants {
		if err := c.Delete(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	deleted = true
	poll(ctx, t, 2*time.Minute, "Tenants gone and their stacks pruned from the workload cluster", func() (bool, string) {
		for _, tn := range tenants {
			if err := c.Get(ctx, client.ObjectKeyFromObject(tn), &tenancyv1alpha1.Tenant{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("Tenant %s: %v", tn.Name, err)
			}
		}
		for _, tn := range tenants {
			key := client.ObjectKey{Namespace: tn.Name, Name: "stack-config"}
			if err := remote.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("stack ConfigMap %s: %v", key, err)
			}
		}
		return true, ""
	})
}

// stackIdentityBinding reads the guide's example: a ConfigMap carrying a
// ClusterRoleBinding of the stack identity for the Clusters of
// clusterNamespace, and a ClusterResourceSet that hands exactly that
// ConfigMap to Clusters of the same namespace. It returns the binding.
func stackIdentityBinding(t *testing.T) *rbacv1.ClusterRoleBinding {
	t.Helper()
	cm, crs := stackIdentityExampleObjects(t)
	resources, _, _ := unstructured.NestedSlice(crs.Object, "spec", "resources")
	if crs.GetNamespace() != cm.Namespace || cm.Namespace != clusterNamespace || len(resources) != 1 ||
		fmt.Sprint(resources[0]) != fmt.Sprint(map[string]any{"kind": "ConfigMap", "name": cm.Name}) {
		t.Fatalf("%s: the ClusterResourceSet %s/%s hands out %v; want ConfigMap %s of the Clusters' namespace %s", stackIdentityExample, crs.GetNamespace(), crs.GetName(), resources, cm.Name, clusterNamespace)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	if err := sigsyaml.UnmarshalStrict([]byte(cm.Data["binding.yaml"]), binding); err != nil {
		t.Fatalf("%s: binding.yaml: %v", stackIdentityExample, err)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Namespace != clusterNamespace || binding.Subjects[0].Name != "default" {
		t.Fatalf("%s: the binding grants %+v; want the default ServiceAccount of %s (kustomize-controller's --default-service-account)", stackIdentityExample, binding.Subjects, clusterNamespace)
	}
	return binding
}

// stackIdentityClusterLabels are the labels the guide's
// ClusterResourceSet selects Clusters by.
func stackIdentityClusterLabels(t *testing.T) map[string]string {
	t.Helper()
	_, crs := stackIdentityExampleObjects(t)
	labels, _, err := unstructured.NestedStringMap(crs.Object, "spec", "clusterSelector", "matchLabels")
	if err != nil || len(labels) == 0 {
		t.Fatalf("%s: the ClusterResourceSet selects no Clusters by label (%v)", stackIdentityExample, err)
	}
	return labels
}

// stackIdentityExampleObjects are the ConfigMap and the
// ClusterResourceSet of the guide's example.
func stackIdentityExampleObjects(t *testing.T) (*corev1.ConfigMap, *unstructured.Unstructured) {
	t.Helper()
	var cm *corev1.ConfigMap
	var crs *unstructured.Unstructured
	for _, u := range stackIdentityObjects(t) {
		switch u.GetKind() {
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
				t.Fatal(err)
			}
		case "ClusterResourceSet":
			crs = u
		}
	}
	if cm == nil || crs == nil {
		t.Fatalf("%s: want a ConfigMap and a ClusterResourceSet", stackIdentityExample)
	}
	return cm, crs
}

// applyStackIdentity creates the objects of the guide's example as they
// are, with strict field validation, against the real Cluster API CRDs
// the core provider installed and the real manager's webhooks.
func applyStackIdentity(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, u := range stackIdentityObjects(t) {
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Create(ctx, u.DeepCopy(), client.FieldValidation("Strict"))
			if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
				return false, nil // the webhook router catches up
			}
			return true, err
		})
		if err != nil {
			t.Fatalf("%s: %s %s/%s: %v", stackIdentityExample, u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
}

// crsApplied tells whether Cluster API says the guide's
// ClusterResourceSet applied its resources (ResourcesApplied), and its
// conditions.
func crsApplied(ctx context.Context, t *testing.T, c client.Client) (bool, string) {
	_, crs := stackIdentityExampleObjects(t)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crs.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(crs), u); err != nil {
		return false, err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if m, _ := x.(map[string]any); m["type"] == "ResourcesApplied" && m["status"] == "True" {
			return true, fmt.Sprint(conds)
		}
	}
	return false, fmt.Sprint(conds)
}

// stackIdentityObjects are the objects of the guide's example.
func stackIdentityObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Join(env.RepoRoot(), stackIdentityExample))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	objs, err := plane.DecodeYAML(f)
	if err != nil {
		t.Fatalf("%s: %v", stackIdentityExample, err)
	}
	return objs
}

func waitClusterLine(ctx context.Context, t *testing.T, c client.Client, tenant string, timeout time.Duration, what string, ok func(*tenancyv1alpha1.TenantClusterStatus) bool) tenancyv1alpha1.TenantClusterStatus {
	t.Helper()
	var got tenancyv1alpha1.TenantClusterStatus
	poll(ctx, t, timeout, what, func() (bool, string) {
		tn := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: tenant}, tn); err != nil {
			return false, err.Error()
		}
		for _, l := range tn.Status.Clusters {
			if l.Name == workload.Name {
				got = l
				return ok(&l), fmt.Sprintf("%s %s: %s", l.Phase, l.Reason, l.Message)
			}
		}
		return false, fmt.Sprintf("no line for %s: %+v", workload.Name, tn.Status)
	})
	return got
}

// requestStackReconcile asks kustomize-controller to try the tenant's
// stack Kustomization again now, as `flux reconcile ks` would, instead of
// waiting out its retry interval.
func requestStackReconcile(ctx context.Context, t *testing.T, c client.Client, tenant string) {
	t.Helper()
	var list kustomizev1.KustomizationList
	var releases helmv2.HelmReleaseList
	for _, l := range []client.ObjectList{&list, &releases} {
		if err := c.List(ctx, l, client.InNamespace(clusterNamespace), client.MatchingLabels{tenancyv1alpha1.TenantLabel: tenant}); err != nil {
			t.Fatal(err)
		}
	}
	if len(list.Items)+len(releases.Items) == 0 {
		t.Fatalf("no Kustomization or HelmRelease of Tenant %s in %s", tenant, clusterNamespace)
	}
	for i := range list.Items {
		requestReconcile(ctx, t, c, &list.Items[i])
	}
	for i := range releases.Items {
		requestReconcile(ctx, t, c, &releases.Items[i])
	}
}

func requestReconcile(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
	if err := c.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
}

func testProviders(ctx context.Context, t *testing.T, c client.Client) {
	fixtures := filepath.Dir(env.CAPIComponentsPath(plane.CAPIVersion, "metadata.yaml"))
	coreURL, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, fixtures, v1alpha1.CoreProviderType, "cluster-api", plane.CAPIVersion)
	if err != nil {
		t.Fatal(err)
	}
	bootstrapURL, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, fixtures, v1alpha1.BootstrapProviderType, "kubeadm", plane.CAPIVersion)
	if err != nil {
		t.Fatal(err)
	}
	// A provider packaged as a chart: helm-controller applies it as the
	// installer too.
	chartURL, err := framework.PushChart(ctx, env.Registry.Host, "charts/addon-helmtest", "addon-helmtest", "v0.1.0", map[string][]byte{
		"templates/deployment.yaml": []byte(framework.ProviderChartDeployment),
		"values.yaml":               []byte("replicas: 1\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	const coreNS, bootstrapNS, chartNS = "capi-system", "capi-kubeadm-bootstrap-system", "helmtest-system"
	for _, ns := range []string{coreNS, bootstrapNS, chartNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// The bootstrap provider's additional manifests hold a kind the
	// installer role does not list.
	extra := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: bootstrapNS, Name: "extra"}, Data: map[string]string{
		"manifests": "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: capi-bootstrap-critical\nvalue: 1000000\n",
	}}
	if err := c.Create(ctx, extra); err != nil {
		t.Fatal(err)
	}
	src := func(url string) *v1alpha1.ProviderSource {
		return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}
	}
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: coreNS, Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: plane.CAPIVersion, Source: src(coreURL)}}
	bootstrap := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: bootstrapNS, Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: plane.CAPIVersion, Source: src(bootstrapURL),
			AdditionalManifests: &v1alpha1.ConfigMapReference{Name: extra.Name}}}
	chart := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: chartNS, Name: "helmtest"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: chartURL, Insecure: true}}}}}
	start := time.Now()
	for _, p := range []client.Object{core, bootstrap, chart} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitProvider(ctx, t, c, core, 5*time.Minute, "Ready", func(cond *metav1.Condition) bool { return cond.Status == metav1.ConditionTrue })
	t.Logf("CoreProvider Ready under the lockdown %s after it was created", time.Since(start).Round(time.Millisecond))

	installer := render.InstallerServiceAccountName(v1alpha1.CoreProviderType, "cluster-api")
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKey{Namespace: coreNS, Name: render.ObjectName(v1alpha1.CoreProviderType, "cluster-api")}, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.ServiceAccountName != installer {
		t.Errorf("the core Kustomization's serviceAccountName is %q, want %q", ks.Spec.ServiceAccountName, installer)
	}
	checkInstallerWrites(t, coreNS, installer, start, "deployments capi-controller-manager", "clusterroles capi-manager-role", "customresourcedefinitions clusters.cluster.x-k8s.io")
	checkInstallerLimits(ctx, t, c, coreNS, installer)
	waitProvider(ctx, t, c, chart, 3*time.Minute, "Ready", func(cond *metav1.Condition) bool { return cond.Status == metav1.ConditionTrue })
	checkInstallerWrites(t, chartNS, render.InstallerServiceAccountName(v1alpha1.AddonProviderType, "helmtest"), start,
		"deployments helmtest-controller-manager", "secrets sh.helm.release.v1.addon-helmtest.v1")

	// The additional manifests' PriorityClass is refused, by Flux's
	// message on the provider's Ready, until the guide's ClusterRole,
	// aggregated into the installer role, allows it.
	cond := waitProvider(ctx, t, c, bootstrap, 3*time.Minute, "the PriorityClass refused", func(cond *metav1.Condition) bool {
		return cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "priorityclasses") && strings.Contains(cond.Message, "forbidden") &&
			strings.Contains(cond.Message, v1alpha1.AggregateToInstallerLabel)
	})
	t.Logf("BootstrapProvider before the extra role: %s: %s", cond.Reason, cond.Message)
	extraRole := guideInstallerRole(t)
	if err := c.Create(ctx, extraRole); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(context.Background(), extraRole) }()
	additional := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: bootstrapNS, Name: render.ObjectName(v1alpha1.BootstrapProviderType, "kubeadm") + "-additional"}, additional); err != nil {
		t.Fatal(err)
	}
	requestReconcile(ctx, t, c, additional)
	waitProvider(ctx, t, c, bootstrap, 3*time.Minute, "Ready with the extra role", func(cond *metav1.Condition) bool { return cond.Status == metav1.ConditionTrue })

	// Deleting the bootstrap provider: Flux prunes as the installer (the
	// binding is still there), then the binding and ServiceAccount go.
	bootstrapInstaller := render.InstallerServiceAccountName(v1alpha1.BootstrapProviderType, "kubeadm")
	bindingName := render.InstallerBindingName(bootstrap)
	deleteStart := time.Now()
	if err := c.Delete(ctx, bootstrap); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, 3*time.Minute, "BootstrapProvider gone with its installer", func() (bool, string) {
		var state []string
		for _, o := range []client.Object{
			&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: bootstrapNS, Name: "kubeadm"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: bootstrapNS, Name: bootstrapInstaller}},
		} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				state = append(state, fmt.Sprintf("%T %s: %v", o, o.GetName(), err))
			}
		}
		return len(state) == 0, strings.Join(state, "; ")
	})
	pruned := map[string]bool{}
	writes, err := env.Writes("system:serviceaccount:"+bootstrapNS+":"+bootstrapInstaller, deleteStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.Verb == "delete" && w.Code < 300 {
			pruned[w.Resource+" "+w.Name] = true
		}
	}
	for _, want := range []string{"deployments capi-kubeadm-bootstrap-controller-manager", "priorityclasses capi-bootstrap-critical"} {
		if !pruned[want] {
			t.Errorf("deleting the provider: %s was not pruned by its installer (its deletes: %v)", want, pruned)
		}
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := c.Get(ctx, client.ObjectKey{Name: "kubeadmconfigs.bootstrap.cluster.x-k8s.io"}, crd); err != nil {
		t.Errorf("the bootstrap provider's CRD after its deletion: %v, want it kept", err)
	}
}

// guideInstallerRole is the ClusterRole docs/security.md shows for
// letting the installer write PriorityClasses.
func guideInstallerRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(guide, -1) {
		if !bytes.Contains(m[1], []byte(v1alpha1.AggregateToInstallerLabel)) {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := sigsyaml.UnmarshalStrict(m[1], role); err != nil {
			t.Fatalf("docs/security.md, the installer role example: %v", err)
		}
		if role.Labels[v1alpha1.AggregateToInstallerLabel] != "true" {
			t.Fatalf("docs/security.md's installer role example is not labelled %s: \"true\"", v1alpha1.AggregateToInstallerLabel)
		}
		return role
	}
	t.Fatal("docs/security.md shows no ClusterRole labelled " + v1alpha1.AggregateToInstallerLabel)
	return nil
}

// checkInstallerWrites: the objects want ("<resource> <name>") were written
// by the installer ServiceAccount, with Flux's controller impersonating
// it, and Flux wrote no Deployment of the namespace as itself.
func checkInstallerWrites(t *testing.T, namespace, installer string, since time.Time, want ...string) {
	t.Helper()
	user := "system:serviceaccount:" + namespace + ":" + installer
	writes, err := env.Writes(user, since)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, w := range writes {
		if w.Code < 300 {
			seen[w.Resource+" "+w.Name] = w.ImpersonatedBy
		}
	}
	for _, want := range want {
		by, ok := seen[want]
		switch {
		case !ok:
			t.Errorf("%s was not written by %s (its writes: %d)", want, user, len(writes))
		case by != plane.AdminUser:
			t.Errorf("%s was written by %s impersonated by %q, want Flux's controller (%s)", want, user, by, plane.AdminUser)
		}
	}
	flux, err := env.Writes(plane.AdminUser, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range flux {
		if w.Resource == "deployments" && w.Namespace == namespace {
			t.Errorf("Flux wrote %s as itself; want it to impersonate the installer", w)
		}
	}
}

// checkInstallerLimits asks the API server what the installer may do: it
// can install CRDs, but never delete one (or a Namespace), nor touch Pods.
func checkInstallerLimits(ctx context.Context, t *testing.T, c client.Client, namespace, installer string) {
	t.Helper()
	user := "system:serviceaccount:" + namespace + ":" + installer
	for _, tt := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, true},
		{authorizationv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, true},
		{authorizationv1.ResourceAttributes{Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "kube-system"}, false},
		{authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}, ResourceAttributes: &tt.attrs}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tt.want {
			t.Errorf("%s may %s %s.%s: %v, want %v", user, tt.attrs.Verb, tt.attrs.Resource, tt.attrs.Group, sar.Status.Allowed, tt.want)
		}
	}
}

func waitProvider(ctx context.Context, t *testing.T, c client.Client, p v1alpha1.Provider, timeout time.Duration, what string, ok func(*metav1.Condition) bool) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	poll(ctx, t, timeout, fmt.Sprintf("%T %s/%s: %s", p, p.GetNamespace(), p.GetName(), what), func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(p.GetStatus().Conditions, v1alpha1.ReadyCondition)
		if cond == nil || cond.ObservedGeneration != p.GetGeneration() {
			return false, "no Ready condition of this generation"
		}
		got = *cond
		return ok(cond), cond.Reason + ": " + cond.Message
	})
	return got
}

func poll(ctx context.Context, t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, state := check()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}
