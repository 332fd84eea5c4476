package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/scheme"
	"github.com/capwright/capwright/internal/status"
)

const (
	coreRevision = "v1.14.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	stackRev     = "v1.0.0@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func readyCond(status metav1.ConditionStatus, reason, message string, generation int64) []metav1.Condition {
	return []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: generation}}
}

func objMeta(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, Generation: 1}
}

// coreProviderObjects are an installed core provider as the manager and
// Flux leave it: the provider, its OCIRepository and Kustomization, and
// what the Kustomization applied.
func coreProviderObjects() []client.Object {
	labels := map[string]string{v1alpha1.ProviderKindLabel: "CoreProvider", v1alpha1.ProviderNameLabel: "cluster-api"}
	name := render.ObjectName("core", "cluster-api")
	p := &v1alpha1.CoreProvider{ObjectMeta: objMeta("capi-system", "cluster-api", nil), Spec: v1alpha1.ProviderSpec{Version: "v1.14.2"}}
	p.Status = v1alpha1.ProviderStatus{ObservedGeneration: 1, InstalledVersion: "v1.14.2", Conditions: readyCond(metav1.ConditionTrue, "Installed", "v1.14.2 installed", 1),
		Artifact: &v1alpha1.ResolvedArtifact{Revision: coreRevision}}
	repo := &sourcev1.OCIRepository{ObjectMeta: objMeta("capi-system", name, labels)}
	repo.Status.ObservedGeneration = 1
	repo.Status.Conditions = readyCond(metav1.ConditionTrue, meta.SucceededReason, "stored artifact", 1)
	repo.Status.Artifact = &meta.Artifact{Revision: coreRevision}
	ks := &kustomizev1.Kustomization{ObjectMeta: objMeta("capi-system", name, labels)}
	ks.Status.ObservedGeneration = 1
	ks.Status.Conditions = readyCond(metav1.ConditionTrue, meta.ReconciliationSucceededReason, "Applied revision: "+coreRevision, 1)
	ks.Status.LastAppliedRevision = coreRevision
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "_capi-system__Namespace", Version: "v1"},
		{ID: "capi-system_capi-controller-manager_apps_Deployment", Version: "v1"},
		{ID: "capi-system_capi-settings__ConfigMap", Version: "v1"},
	}}
	deploy := &appsv1.Deployment{ObjectMeta: objMeta("capi-system", "capi-controller-manager", nil),
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}
	return []client.Object{p, repo, ks, deploy,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capi-system"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		&corev1.ConfigMap{ObjectMeta: objMeta("capi-system", "capi-settings", nil)}}
}

// tenantObjects are a Tenant with a ready cluster and a failed one, its
// source and the clusters' Kustomizations (applying on the workload
// clusters through their kubeconfig).
func tenantObjects() []client.Object {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Generation: 2}}
	t.Status = tenancyv1alpha1.TenantStatus{ObservedGeneration: 2, TotalClusters: 2, ReadyClusters: 1, FailedClusters: 1,
		Conditions: readyCond(metav1.ConditionFalse, "ClustersFailed", "1 of 2 clusters failed", 2),
		Clusters: []tenancyv1alpha1.TenantClusterStatus{
			{Namespace: "fleet", Name: "one", Phase: tenancyv1alpha1.ClusterPhaseReady, Reason: "Installed", AppliedRevision: stackRev},
			{Namespace: "fleet", Name: "two", Phase: tenancyv1alpha1.ClusterPhaseFailed, Reason: "HealthCheckFailed", Message: "Deployment fleet/web not ready"},
		}}
	tenant := map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}
	src := &sourcev1.OCIRepository{ObjectMeta: objMeta("fleet", render.TenantSourceName("team-a"), tenant)}
	src.Status.ObservedGeneration = 1
	src.Status.Conditions = readyCond(metav1.ConditionTrue, meta.SucceededReason, "stored", 1)
	src.Status.Artifact = &meta.Artifact{Revision: stackRev}
	objs := []client.Object{t, src}
	for i, c := range []string{"one", "two"} {
		labels := map[string]string{tenancyv1alpha1.TenantLabel: "team-a", tenancyv1alpha1.ClusterNamespaceLabel: "fleet", tenancyv1alpha1.ClusterNameLabel: c}
		ks := &kustomizev1.Kustomization{ObjectMeta: objMeta("fleet", render.TenantClusterObjectName("team-a", client.ObjectKey{Namespace: "fleet", Name: c}), labels)}
		ks.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: c + "-kubeconfig"}}
		ks.Status.ObservedGeneration = 1
		ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "team-a_web_apps_Deployment", Version: "v1"}}}
		if i == 0 {
			ks.Status.Conditions = readyCond(metav1.ConditionTrue, meta.ReconciliationSucceededReason, "Applied", 1)
		} else {
			ks.Status.Conditions = readyCond(metav1.ConditionFalse, meta.HealthCheckFailedReason, "Deployment team-a/web not ready", 1)
		}
		objs = append(objs, ks)
	}
	return objs
}

func newFakeClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func gatherFake(t *testing.T, c client.Client, sel status.Selection) (*status.Report, string, error) {
	t.Helper()
	var warn bytes.Buffer
	g := &statusGatherer{gatherer: status.Gatherer{Client: c}, context: "test", warn: &warn}
	r, err := g.gather(context.Background(), sel)
	return r, warn.String(), err
}

func treeText(t *testing.T, r *status.Report) string {
	t.Helper()
	var out bytes.Buffer
	if err := printStatus(&out, "tree", r); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestStatusTreeOfAReadyProvider(t *testing.T) {
	c := newFakeClient(t, nil, coreProviderObjects()...)
	k, _ := status.Lookup("corep")
	r, _, err := gatherFake(t, c, status.Selection{Kind: &k, Name: "cluster-api"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready || readyOrNot(r) != nil {
		t.Fatalf("a provider whose objects are all Ready is not Ready: %v", r.NotReady())
	}
	got := treeText(t, r)
	want := []string{
		"NAME ",
		"CoreProvider/capi-system/cluster-api  True ",
		"├── OCIRepository/capi-system/core-cluster-api  True ",
		"└── Kustomization/capi-system/core-cluster-api  True ",
		"    ├── Namespace/capi-system  True   Current",
		"    ├── Deployment/capi-system/capi-controller-manager  True   Current",
		"    └── ConfigMap/capi-system/capi-settings  True   Current",
	}
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("tree has %d lines, want %d:\n%s", len(lines), len(want), got)
	}
	for i, w := range want {
		// The columns are padded to the longest name: compare with the
		// padding squeezed.
		if squeeze(lines[i])[:min(len(squeeze(lines[i])), len(squeeze(w)))] != squeeze(w) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
	if !strings.Contains(got, "version v1.14.2, revision v1.14.2@sha256:0123456789ab\n") {
		t.Errorf("the provider's line does not give its version and short revision:\n%s", got)
	}
	if strings.Contains(got, "0123456789abcdef0123") {
		t.Errorf("the tree shows whole digests:\n%s", got)
	}
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestStatusNamesWhatIsNotReady(t *testing.T) {
	objs := coreProviderObjects()
	// The Deployment is gone, and the Kustomization failed its health check.
	objs = objs[:3]
	ks := objs[2].(*kustomizev1.Kustomization)
	ks.Status.Conditions = readyCond(metav1.ConditionFalse, meta.HealthCheckFailedReason, "Deployment capi-system/capi-controller-manager not found", 1)
	c := newFakeClient(t, nil, objs...)
	r, _, err := gatherFake(t, c, status.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	err = readyOrNot(r)
	if code := exitCode(err); code != exitNotReady {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitNotReady)
	}
	for _, want := range []string{"Kustomization/capi-system/core-cluster-api is not Ready (HealthCheckFailed: Deployment capi-system/capi-controller-manager not found)",
		"Deployment/capi-system/capi-controller-manager is not Ready (NotFound"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := treeText(t, r); !strings.Contains(got, "HealthCheckFailed  revision v1.14.2@sha256:0123456789ab: Deployment capi-system/capi-controller-manager not found") {
		t.Errorf("the tree does not give the Kustomization's reason and message:\n%s", got)
	}
}

func TestStatusOfAProviderNotHandledYet(t *testing.T) {
	objs := coreProviderObjects()
	p := objs[0].(*v1alpha1.CoreProvider)
	p.Generation = 2 // spec.version changed; the manager has not seen it
	c := newFakeClient(t, nil, objs...)
	r, _, err := gatherFake(t, c, status.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Objects[0]
	if n.Ready != metav1.ConditionUnknown || n.Reason != "Progressing" || !strings.Contains(n.Message, "generation 2") {
		t.Errorf("a Ready condition of generation 1 on generation 2 reads %s %s %q, want Unknown Progressing", n.Ready, n.Reason, n.Message)
	}
	if exitCode(readyOrNot(r)) != exitNotReady {
		t.Error("a provider not handled yet counts as Ready")
	}
}

func TestStatusTreeOfATenant(t *testing.T) {
	c := newFakeClient(t, nil, append(tenantObjects(), coreProviderObjects()...)...)
	k, _ := status.Lookup("Tenant")
	r, _, err := gatherFake(t, c, status.Selection{Kind: &k, Name: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 1 {
		t.Fatalf("tenant/team-a shows %d objects, want the Tenant alone", len(r.Objects))
	}
	tn := r.Objects[0]
	if tn.Clusters != "1/2 ready" || len(tn.Children) != 3 {
		t.Fatalf("Tenant node: clusters %q, %d children, want 1/2 ready and source + 2 clusters", tn.Clusters, len(tn.Children))
	}
	if tn.Children[0].Kind != sourcev1.OCIRepositoryKind || tn.Children[0].Name != "team-a-stack" {
		t.Errorf("first child %s, want the tenant's OCIRepository", tn.Children[0].Ref())
	}
	one, two := tn.Children[1], tn.Children[2]
	if one.Ref() != "Cluster/fleet/one" || one.Ready != metav1.ConditionTrue || two.Ready != metav1.ConditionFalse || two.Reason != "HealthCheckFailed" {
		t.Errorf("cluster lines %s %s, %s %s %s", one.Ref(), one.Ready, two.Ref(), two.Ready, two.Reason)
	}
	ks := one.Children[0]
	if ks.Kind != kustomizev1.KustomizationKind || len(ks.Children) != 1 || ks.Children[0].Ready != "" || !strings.Contains(ks.Note, "kubeconfig Secret fleet/one-kubeconfig") {
		t.Errorf("the cluster's Kustomization %s: %d children, first ready %q, note %q; want the workload cluster's Deployment, health not read", ks.Ref(), len(ks.Children), ks.Children[0].Ready, ks.Note)
	}
	err = readyOrNot(r)
	if exitCode(err) != exitNotReady || !strings.Contains(err.Error(), "Cluster/fleet/two is not Ready (HealthCheckFailed: Deployment fleet/web not ready)") {
		t.Errorf("readyOrNot = %v", err)
	}
	got := treeText(t, r)
	if !strings.Contains(got, " -\n") {
		t.Errorf("an object whose health was not read has no - in READY:\n%s", got)
	}
	for _, want := range []string{"├── Cluster/fleet/one", "└── Cluster/fleet/two", "phase Failed", "│   └── Kustomization/fleet/team-a-one-", "Deployment/team-a/web"} {
		if !strings.Contains(got, want) {
			t.Errorf("tree lacks %q:\n%s", want, got)
		}
	}
}

func TestStatusTreeOfAContractObjectWithAHelmRelease(t *testing.T) {
	cp := &clustersv1alpha1.CapwrightControlPlane{ObjectMeta: objMeta("fleet", "one", nil)}
	cp.Spec.Version = "v1.31.0"
	cp.Status.ObservedGeneration = 1
	cp.Status.Conditions = readyCond(metav1.ConditionTrue, "Ready", "", 1)
	labels := map[string]string{clustersv1alpha1.BackendLabel: render.OwnerLabelValue(clustersv1alpha1.ControlPlaneKind, "one")}
	hr := &helmv2.HelmRelease{ObjectMeta: objMeta("fleet", render.ContractObjectName(clustersv1alpha1.ControlPlaneKind, "one"), labels)}
	hr.Status.ObservedGeneration = 1
	hr.Status.Conditions = readyCond(metav1.ConditionTrue, "InstallSucceeded", "", 1)
	hr.Status.History = helmv2.Snapshots{{Name: "one", Namespace: "fleet", Version: 3, Status: "deployed", ChartName: "hcp", ChartVersion: "0.1.0"}}
	hr.Status.Inventory = &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{{ID: "fleet_one-settings__ConfigMap", Version: "v1"}}}
	// Another control plane's HelmRelease in the same namespace.
	other := hr.DeepCopy()
	other.Name, other.Labels = "controlplane-two", map[string]string{clustersv1alpha1.BackendLabel: render.OwnerLabelValue(clustersv1alpha1.ControlPlaneKind, "two")}
	c := newFakeClient(t, nil, cp, hr, other, &corev1.ConfigMap{ObjectMeta: objMeta("fleet", "one-settings", nil)})
	r, _, err := gatherFake(t, c, status.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 1 || len(r.Objects[0].Children) != 1 {
		t.Fatalf("want the control plane with its one HelmRelease, got %s", treeText(t, r))
	}
	h := r.Objects[0].Children[0]
	if h.Chart != "hcp@0.1.0" || h.Release != "fleet/one v3 deployed" || len(h.Children) != 1 || h.Children[0].Ready != metav1.ConditionTrue {
		t.Errorf("HelmRelease node: chart %q, release %q, children %d", h.Chart, h.Release, len(h.Children))
	}
}

func TestStatusFindsKindNameInAnyNamespace(t *testing.T) {
	objs := coreProviderObjects()
	infra := func(ns string) *v1alpha1.InfrastructureProvider {
		return &v1alpha1.InfrastructureProvider{ObjectMeta: objMeta(ns, "docker", nil)}
	}
	c := newFakeClient(t, nil, append(objs, infra("one"), infra("two"))...)
	for _, tc := range []struct {
		arg, namespace string
		code           int
		says           string
	}{
		{arg: "infrastructureproviders/docker", code: exitUsage, says: "exists in namespaces one, two: pick one with -n"},
		{arg: "infrap/docker", namespace: "two", code: exitNotReady},
		{arg: "coreprovider/cluster-api", code: exitOK},
		{arg: "CoreProvider/cluster-api", namespace: "capi-system", code: exitOK},
		{arg: "coreprovider/capi", code: exitNotFound, says: "CoreProvider capi not found in any namespace"},
		{arg: "tenant/team-b", code: exitNotFound, says: "Tenant team-b not found"},
	} {
		k, name, err := parseStatusArg(tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := gatherFake(t, c, status.Selection{Kind: &k, Name: name, Namespace: tc.namespace})
		if err == nil {
			err = readyOrNot(r)
		}
		if exitCode(err) != tc.code || (tc.says != "" && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s -n %q: exit code %d, error %v; want %d saying %q", tc.arg, tc.namespace, exitCode(err), err, tc.code, tc.says)
		}
	}
}

func TestStatusArgumentsAreChecked(t *testing.T) {
	for arg, says := range map[string]string{
		"coreprovider":        "give KIND/NAME",
		"widget/x":            `unknown kind "widget"; the kinds are coreprovider, bootstrapprovider`,
		"coreprovider/a/b":    "give KIND/NAME",
		"/cluster-api":        "give KIND/NAME",
		"cwcp/one":            "",
		"capwrightclusters/x": "",
	} {
		_, _, err := parseStatusArg(arg)
		if says == "" {
			if err != nil {
				t.Errorf("%s: %v", arg, err)
			}
			continue
		}
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: exit code %d, error %v; want 2 saying %q", arg, exitCode(err), err, says)
		}
	}
	for _, args := range [][]string{
		{"status", "-o", "wide"},
		{"status", "--until-ready"},
		{"status", "tenant/team-a", "-n", "x"},
		{"status", "a/b", "c/d"},
	} {
		if _, stderr, code := cliRun(t, args...); code != exitUsage {
			t.Errorf("%v: exit code %d, want 2 (%s)", args, code, stderr)
		}
	}
}

func TestStatusOnAClusterWithoutCapwright(t *testing.T) {
	noKind := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		gvk, err := c.GroupVersionKindFor(list)
		if err != nil {
			return err
		}
		if strings.HasSuffix(gvk.Group, "capwright.io") {
			return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}}
		}
		return c.List(ctx, list, opts...)
	}}
	c := newFakeClient(t, &noKind)
	tenant, _ := status.Lookup("tenant")
	for _, sel := range []status.Selection{{}, {Kind: &tenant, Name: "team-a"}} {
		_, _, err := gatherFake(t, c, sel)
		if exitCode(err) != exitNotFound || !strings.Contains(err.Error(), "Capwright is not installed there") || !strings.Contains(err.Error(), "docs/install.md") {
			t.Errorf("%+v: exit code %d, error %v; want 3 saying Capwright is not installed and where to read how", sel, exitCode(err), err)
		}
	}
	_, _, err := gatherFake(t, c, status.Selection{})
	if !strings.Contains(err.Error(), "coreproviders.providers.capwright.io") {
		t.Errorf("the error does not name the missing CRDs: %v", err)
	}
}

func TestStatusDataOutput(t *testing.T) {
	c := newFakeClient(t, nil, coreProviderObjects()...)
	r, _, err := gatherFake(t, c, status.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printStatus(&out, "json", r); err != nil {
		t.Fatal(err)
	}
	var back status.Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Ready || len(back.Objects) != 1 || back.Objects[0].Revision != coreRevision || len(back.Objects[0].Children[1].Children) != 3 {
		t.Errorf("-o json lost the tree:\n%s", out.String())
	}
	out.Reset()
	if err := printStatus(&out, "tree", &status.Report{Ready: true, Objects: []*status.Node{}}); err != nil || out.String() != "No Capwright objects found.\n" {
		t.Errorf("empty tree: %q, %v", out.String(), err)
	}
}

func TestStatusCompletion(t *testing.T) {
	got, _ := completeStatusArg(context.Background(), &statusOptions{}, "co")
	if strings.Join(got, " ") != "coreprovider/ controlplaneprovider/" {
		t.Errorf("completing co: %v", got)
	}
	stdout, _, _ := cliRun(t, "__complete", "status", "-o", "")
	for _, want := range []string{"tree", "yaml", "json"} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("-o completion lacks %s:\n%s", want, stdout)
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while watchStatus writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStatusWatchUntilReady(t *testing.T) {
	objs := coreProviderObjects()
	p := objs[0].(*v1alpha1.CoreProvider)
	p.Status.Conditions = readyCond(metav1.ConditionFalse, "Installing", "Flux is applying v1.14.2", 1)
	c := newFakeClient(t, nil, objs...)
	g := &statusGatherer{gatherer: status.Gatherer{Client: c}, context: "test", warn: io.Discard}
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- watchStatus(context.Background(), &out, &statusOptions{output: "tree", watch: true, untilReady: true, timeout: 30 * time.Second}, g, status.Selection{})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Installing") {
		if time.Now().After(deadline) {
			t.Fatalf("watch printed nothing:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = readyCond(metav1.ConditionTrue, "Installed", "v1.14.2 installed", 1)
	if err := c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--until-ready ended with %v once Ready", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--until-ready did not stop once everything was Ready")
	}
	trees := strings.Split(out.String(), "\n\nNAME")
	if len(trees) != 2 || !strings.Contains(trees[1], "True   Installed") {
		t.Errorf("want the tree twice, not Ready then Ready, separated by a blank line:\n%s", out.String())
	}
}

func TestStatusWatchTimesOutNotReady(t *testing.T) {
	objs := coreProviderObjects()
	objs[0].(*v1alpha1.CoreProvider).Status.Conditions = readyCond(metav1.ConditionFalse, "Installing", "Flux is applying v1.14.2", 1)
	g := &statusGatherer{gatherer: status.Gatherer{Client: newFakeClient(t, nil, objs...)}, context: "test", warn: io.Discard}
	var out syncBuffer
	start := time.Now()
	err := watchStatus(context.Background(), &out, &statusOptions{output: "yaml", watch: true, untilReady: true, timeout: time.Second}, g, status.Selection{})
	if exitCode(err) != exitNotReady || time.Since(start) > 5*time.Second {
		t.Errorf("after --timeout 1s: exit code %d (%v) after %s, want 8 at once", exitCode(err), err, time.Since(start))
	}
	if strings.Count(out.String(), "ready: false") != 1 || strings.Contains(out.String(), "---") {
		t.Errorf("an unchanged tree is printed once:\n%s", out.String())
	}
}

// closedKubeconfig is a kubeconfig of an API server nobody serves.
func closedKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: admin, user: {token: not-a-secret}}]
contexts: [{name: gone, context: {cluster: gone, user: admin}}]
current-context: gone
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStatusAndVersionOnAnUnreachableCluster(t *testing.T) {
	kubeconfig := closedKubeconfig(t)
	if _, stderr, code := cliRun(t, "status", "--kubeconfig", kubeconfig); code != exitNetwork || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("status of an unreachable cluster: exit code %d, want 5: %s", code, stderr)
	}
	stdout, stderr, code := cliRun(t, "version", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(stdout, `manager: not shown: context "gone" not reachable or not readable`) {
		t.Errorf("version with an unreachable cluster: exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestStatusWatchOutlivesAFailingRead(t *testing.T) {
	objs := coreProviderObjects()
	p := objs[0].(*v1alpha1.CoreProvider)
	p.Status.Conditions = readyCond(metav1.ConditionFalse, "Installing", "Flux is applying v1.14.2", 1)
	var failing atomic.Bool
	funcs := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if failing.Load() {
			return apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return c.List(ctx, list, opts...)
	}}
	c := newFakeClient(t, &funcs, objs...)
	var out, warn syncBuffer
	g := &statusGatherer{gatherer: status.Gatherer{Client: c}, context: "test", warn: &warn}
	done := make(chan error, 1)
	go func() {
		done <- watchStatus(context.Background(), &out, &statusOptions{output: "tree", watch: true, untilReady: true, timeout: 30 * time.Second}, g, status.Selection{})
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s; stdout:\n%s\nstderr:\n%s", what, out.String(), warn.String())
			}
		}
	}
	waitFor("first tree", func() bool { return strings.Contains(out.String(), "Installing") })
	failing.Store(true)
	waitFor("note of the failed read", func() bool { return strings.Contains(warn.String(), "the API server is restarting") })
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = readyCond(metav1.ConditionTrue, "Installed", "v1.14.2 installed", 1)
	if err := c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	failing.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the watch ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not go on after the failed read")
	}
	if n := strings.Count(warn.String(), "trying again"); n != 1 {
		t.Errorf("the failed read is noted %d times, want once:\n%s", n, warn.String())
	}
}
