package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The chart's tests install it one release at a time, each removed when
// its test ends: a cluster holds one Capwright (its CRDs and the tenant
// ClusterRoles, which keep fixed names, are cluster-wide).

// TestCapwrightHelmChartInstalls installs the chart in charts/capwright
// with the real helm-controller: CRDs, ClusterRole and the manager
// Deployment (which kwok reports Available).
func TestCapwrightHelmChartInstalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := chartClient(t)
	hr := installChart(t, ctx, c, "capwright", "capwright-system", nil)
	if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capwright-system", Name: "capwright-manager"}, &dep); err != nil {
		t.Fatal(err)
	}
	if !deploymentAvailable(&dep) {
		t.Fatalf("capwright-manager not Available: %+v", dep.Status)
	}
	if spread := dep.Spec.Template.Spec.TopologySpreadConstraints; len(spread) != 0 {
		t.Errorf("one replica is given topologySpreadConstraints %+v; want none unless asked", spread)
	}
	for _, crd := range []string{"coreproviders.providers.capwright.io", "providers.clusterctl.cluster.x-k8s.io"} {
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s: %v", crd, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-manager"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole capwright-manager: %v", err)
	}
	// The metrics Service is always there; a ServiceMonitor only when
	// asked for (a cluster without the Prometheus Operator could not
	// install one, so Ready above also says none was rendered as long as
	// its CRD is not installed, which this test runs without).
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capwright-system", Name: "capwright-metrics"}, &corev1.Service{}); err != nil {
		t.Errorf("Service capwright-metrics: %v", err)
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(crds.Items, func(crd apiextensionsv1.CustomResourceDefinition) bool {
		return crd.Spec.Group == "monitoring.coreos.com"
	}) {
		t.Error("the ServiceMonitor CRD is installed before this test: it no longer proves the chart renders no ServiceMonitor by default")
	}
	if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--artifact-advertise-url=http://capwright-artifacts.capwright-system.svc.cluster.local.") {
		t.Errorf("the manager is not told the capwright-artifacts Service: %v", dep.Spec.Template.Spec.Containers[0].Args)
	}
}

// TestCapwrightHelmChartNamesFromTheRelease installs the chart as release
// "platform" with values a platform team sets, and reads back what the API
// server holds.
func TestCapwrightHelmChartNamesFromTheRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := chartClient(t)
	const (
		ns     = "platform-system"
		name   = "platform-capwright-manager"
		svc    = "platform-capwright-artifacts"
		digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	installServiceMonitorCRD(t, ctx)
	hr := installChart(t, ctx, c, "platform", ns, map[string]any{
		"serviceMonitor": map[string]any{
			"enabled":  true,
			"labels":   map[string]any{"release": "kube-prometheus-stack", "app.kubernetes.io/name": "overridden"},
			"interval": "30s",
		},
		"image":            map[string]any{"digest": digest, "tag": "ignored"},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"podAnnotations":   map[string]any{"example.com/team": "platform"},
		"extraArgs":        []any{"--concurrent=8"},
		"logLevel":         "debug",
		"fluxSharding":     "2",
		// Preferred, so kwok's node still takes the pod.
		"affinity": map[string]any{"nodeAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
				"weight": 1,
				"preference": map[string]any{"matchExpressions": []any{map[string]any{
					"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"},
				}}},
			}},
		}},
		// A team's own spread replaces the chart's, with two replicas too.
		"replicas": 2,
		"topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "platform"}},
		}},
	})
	if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
		t.Fatal(err)
	}

	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &dep); err != nil {
		t.Fatalf("no Deployment named from the release: %v", err)
	}
	if !deploymentAvailable(&dep) {
		t.Errorf("%s not Available: %+v", name, dep.Status)
	}
	for k, v := range map[string]string{
		"app.kubernetes.io/name":       "capwright",
		"app.kubernetes.io/instance":   "platform",
		"app.kubernetes.io/managed-by": "Helm",
	} {
		if dep.Labels[k] != v {
			t.Errorf("Deployment label %s = %q, want %q", k, dep.Labels[k], v)
		}
	}
	// helm-controller appends the OCI digest to the chart version (+ → _).
	if got := dep.Labels["helm.sh/chart"]; !strings.HasPrefix(got, "capwright-0.1.0") {
		t.Errorf("Deployment label helm.sh/chart = %q, want capwright-0.1.0…", got)
	}
	pod := dep.Spec.Template.Spec
	manager := pod.Containers[0]
	if want := "ghcr.io/capwright/capwright-manager@" + digest; manager.Image != want {
		t.Errorf("image = %q, want %q", manager.Image, want)
	}
	for _, arg := range []string{
		"--concurrent=8",
		"--log-level=debug",
		"--flux-sharding=2",
		"--artifact-advertise-url=http://" + svc + "." + ns + ".svc.cluster.local.",
	} {
		if !slices.Contains(manager.Args, arg) {
			t.Errorf("args %v lack %s", manager.Args, arg)
		}
	}
	if !slices.Equal(pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		t.Errorf("imagePullSecrets = %v", pod.ImagePullSecrets)
	}
	if got := dep.Spec.Template.Annotations["example.com/team"]; got != "platform" {
		t.Errorf("pod annotation example.com/team = %q", got)
	}
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || len(pod.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity = %+v", pod.Affinity)
	}
	if spread := pod.TopologySpreadConstraints; len(spread) != 1 || spread[0].TopologyKey != corev1.LabelTopologyZone {
		t.Errorf("topologySpreadConstraints = %+v, want only the values' zone spread", spread)
	}

	var service corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc}, &service); err != nil {
		t.Errorf("no artifact Service named from the release: %v", err)
	} else {
		for k, v := range service.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the manager's pods lack (%v)", svc, k, v, dep.Spec.Template.Labels)
			}
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc}, &networkingv1.NetworkPolicy{}); err != nil {
		t.Errorf("no NetworkPolicy named from the release: %v", err)
	}

	if pod.ServiceAccountName != name {
		t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, name)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("ServiceAccount %s: %v", name, err)
	}
	var binding rbacv1.ClusterRoleBinding
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &binding); err != nil {
		t.Fatalf("ClusterRoleBinding %s: %v", name, err)
	}
	wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != name || !slices.Equal(binding.Subjects, []rbacv1.Subject{wantSubject}) {
		t.Errorf("ClusterRoleBinding %s binds %+v to %+v, want ClusterRole %s to %+v", name, binding.RoleRef, binding.Subjects, name, wantSubject)
	}
	var role rbacv1.ClusterRole
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
		t.Errorf("ClusterRole %s: %v", name, err)
	} else if len(role.Rules) == 0 {
		t.Errorf("ClusterRole %s has no rules", name)
	}
	checkChartServiceMonitor(t, ctx, c, ns, "platform-capwright-manager")

	// The tenant controller binds this one by name.
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-tenant"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole capwright-tenant: %v", err)
	}
	// The manager impersonates the dry-run user by name: its binding to
	// the installer role, and the policy that allows it dry runs only,
	// keep their names too.
	var dryRun rbacv1.ClusterRoleBinding
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-provider-dry-run"}, &dryRun); err != nil {
		t.Errorf("ClusterRoleBinding capwright-provider-dry-run: %v", err)
	} else if wantUser := (rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "capwright:provider-dry-run"}); dryRun.RoleRef.Name != "capwright-provider-installer" || !slices.Equal(dryRun.Subjects, []rbacv1.Subject{wantUser}) {
		t.Errorf("ClusterRoleBinding capwright-provider-dry-run binds %+v to %+v, want capwright-provider-installer to %+v", dryRun.RoleRef, dryRun.Subjects, wantUser)
	}
	for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		if err := c.Get(ctx, client.ObjectKey{Name: "capwright-provider-dry-run"}, obj); err != nil {
			t.Errorf("%T capwright-provider-dry-run: %v", obj, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "capwright-manager"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment capwright-manager exists though the release is platform (err %v)", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-manager"}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole capwright-manager exists though the release is platform (err %v)", err)
	}
}

// TestCapwrightHelmChartRunsReplicas installs the chart with two
// replicas: both run, leader election decides which reconciles, and they
// are spread over nodes by preference (the plane has one node, which
// takes both).
func TestCapwrightHelmChartRunsReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := chartClient(t)
	hr := installChart(t, ctx, c, "replicated", "replicated-system", map[string]any{"replicas": 2})
	if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "replicated-system", Name: "replicated-capwright-manager"}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 || dep.Status.ReadyReplicas != 2 {
		t.Errorf("Deployment %s/%s: replicas %v, ready %d; want 2 and 2", dep.Namespace, dep.Name, dep.Spec.Replicas, dep.Status.ReadyReplicas)
	}
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--enable-leader-election") {
		t.Errorf("two replicas without leader election would both reconcile: args %v", args)
	}
	spread := dep.Spec.Template.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelHostname || spread[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		spread[0].LabelSelector == nil || !maps.Equal(spread[0].LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
		t.Errorf("topologySpreadConstraints = %+v; want a preferred spread of the Deployment's pods (%v) over nodes", spread, dep.Spec.Selector.MatchLabels)
	}
}

// TestCapwrightHelmChartRefusesValuesOutsideItsSchema asks for zero
// replicas: the chart's schema refuses them, so helm-controller says why
// and installs nothing.
func TestCapwrightHelmChartRefusesValuesOutsideItsSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := chartClient(t)
	hr := installChart(t, ctx, c, "refused", "refused-system", map[string]any{"replicas": 0})
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(hr), hr); err != nil {
			return false, err
		}
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
		if ready == nil {
			return false, nil
		}
		last = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
		if ready.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("HelmRelease with replicas: 0 became Ready")
		}
		return ready.Status == metav1.ConditionFalse && strings.Contains(ready.Message, "/replicas"), nil
	})
	if err != nil {
		t.Fatalf("helm-controller did not refuse replicas: 0 with the schema's error (%s): %v", last, err)
	}
	t.Logf("refused: %q", last)
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.MatchingLabels{"app.kubernetes.io/instance": "refused"}); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("a refused release installed Deployment %s/%s", deps.Items[0].Namespace, deps.Items[0].Name)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "refused-capwright-manager"}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused release installed its ClusterRole (err %v)", err)
	}
	if len(hr.Status.History) != 0 {
		t.Errorf("a refused release has Helm history: %v", hr.Status.History)
	}
}

// serviceMonitorCRD stands in for the Prometheus Operator's ServiceMonitor
// CRD (not among the plane's components): the API server keeps what Helm
// rendered, as it would with the operator installed.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func installServiceMonitorCRD(t *testing.T, ctx context.Context) {
	t.Helper()
	objs, err := plane.DecodeYAML(strings.NewReader(serviceMonitorCRD))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.ApplyCRDs(ctx, objs); err != nil {
		t.Fatal(err)
	}
}

// checkChartServiceMonitor reads back what helm-controller installed in ns
// with serviceMonitor.enabled: a ServiceMonitor name that scrapes the
// chart's metrics Service (framework.CheckServiceMonitor), with the values'
// labels under the chart's and their interval.
func checkChartServiceMonitor(t *testing.T, ctx context.Context, c client.Client, ns, name string) {
	t.Helper()
	var services corev1.ServiceList
	var deployments appsv1.DeploymentList
	if err := c.List(ctx, &services, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var installed []map[string]any
	add := func(kind string, obj any) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u["kind"] = kind
		installed = append(installed, u)
	}
	for i := range services.Items {
		add("Service", &services.Items[i])
	}
	for i := range deployments.Items {
		add("Deployment", &deployments.Items[i])
	}
	sm := &unstructured.Unstructured{}
	sm.SetAPIVersion("monitoring.coreos.com/v1")
	sm.SetKind("ServiceMonitor")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sm); err != nil {
		t.Fatalf("serviceMonitor.enabled installed no ServiceMonitor %s/%s: %v", ns, name, err)
	}
	// What the API server adds is not the chart's.
	delete(sm.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "annotations"} {
		unstructured.RemoveNestedField(sm.Object, "metadata", f)
	}
	got := framework.CheckServiceMonitor(t, "the chart", sm.Object, installed, framework.ManagerMetricsPort(t, env.RepoRoot()))
	if got.Metadata.Labels["release"] != "kube-prometheus-stack" || got.Metadata.Labels["app.kubernetes.io/name"] != "capwright" {
		t.Errorf("the chart's ServiceMonitor has labels %v, want serviceMonitor.labels under the chart's", got.Metadata.Labels)
	}
	if got.Spec.Endpoints[0].Interval != "30s" {
		t.Errorf("the chart's ServiceMonitor scrapes every %q, want serviceMonitor.interval", got.Spec.Endpoints[0].Interval)
	}
}

func chartClient(t *testing.T) client.Client {
	t.Helper()
	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// installChart pushes charts/capwright to the plane's registry and creates
// an OCIRepository and a HelmRelease of it, as charts/capwright/README.md
// shows: the release is release in namespace, with values. The HelmRelease
// (so the Helm release) is deleted when the test ends.
func installChart(t *testing.T, ctx context.Context, c client.Client, release, namespace string, values map[string]any) *helmv2.HelmRelease {
	t.Helper()
	files, err := framework.ReadTree(filepath.Join(env.RepoRoot(), "charts", "capwright"))
	if err != nil {
		t.Fatal(err)
	}
	url, err := framework.PushChart(ctx, env.Registry.Host, "charts/capwright", "capwright", "0.1.0", files)
	if err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: plane.FluxNamespace, Name: release},
		Spec: sourcev1.OCIRepositorySpec{URL: url, Reference: &sourcev1.OCIRepositoryRef{Tag: "0.1.0"}, Insecure: true,
			Interval:      metav1.Duration{Duration: time.Minute},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: sourcev1.OCILayerCopy}},
	}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: plane.FluxNamespace, Name: release},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:        &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: release},
			Interval:        metav1.Duration{Duration: 10 * time.Minute},
			ReleaseName:     release,
			TargetNamespace: namespace,
			Install:         &helmv2.Install{CreateNamespace: true, CRDs: helmv2.CreateReplace},
			Upgrade:         &helmv2.Upgrade{CRDs: helmv2.CreateReplace},
		},
	}
	if values != nil {
		raw, err := json.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	for _, obj := range []client.Object{repo, hr} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { uninstallChart(t, c, repo, hr) })
	return hr
}

// uninstallChart deletes the HelmRelease and waits until helm-controller
// has uninstalled the release, so the next test can install its own.
func uninstallChart(t *testing.T, c client.Client, repo *sourcev1.OCIRepository, hr *helmv2.HelmRelease) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, obj := range []client.Object{hr, repo} {
		if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			continue
		}
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Errorf("%T %s not gone: %v", obj, obj.GetName(), err)
		}
	}
}
