package render

import (
	"reflect"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

func TestTenantNamespaceNames(t *testing.T) {
	long := strings.Repeat("t", 56)
	seen := map[string]string{}
	for _, c := range []struct {
		tenant  string
		cluster types.NamespacedName
	}{
		{"team-a", prodEU1},
		{"team-a", types.NamespacedName{Namespace: "shared", Name: "prod-eu-1"}},
		{"a-b", types.NamespacedName{Namespace: "shared", Name: "c"}},
		{"a", types.NamespacedName{Namespace: "shared", Name: "b-c"}},
		{long, types.NamespacedName{Namespace: "ns", Name: strings.Repeat("c", 62) + "1"}},
		{long, types.NamespacedName{Namespace: "ns", Name: strings.Repeat("c", 62) + "2"}},
	} {
		name := TenantNamespaceObjectName(c.tenant, c.cluster)
		// Flux labels what the Kustomization applies with its name.
		if errs := append(validation.IsValidLabelValue(name), validation.IsDNS1123Subdomain(name)...); len(errs) > 0 || !strings.HasSuffix(name, "-namespace") {
			t.Errorf("%s %s: %q: %v, want a label value ending in -namespace", c.tenant, c.cluster, name, errs)
		}
		if name == TenantClusterObjectName(c.tenant, c.cluster) || name != TenantNamespaceObjectName(c.tenant, c.cluster) {
			t.Errorf("%q: the stack's name, or not stable", name)
		}
		key := c.tenant + " " + c.cluster.String()
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both named %q", other, key, name)
		}
		seen[name] = key
	}
	if got := TenantNamespaceObjectName("team-a", prodEU1); !strings.HasPrefix(got, "team-a-prod-eu-1-") {
		t.Errorf("name %q is not readable", got)
	}
	if got := TenantNamespaceArtifactName("team-a"); got != "team-a-namespace" {
		t.Errorf("ExternalArtifact name = %q", got)
	}
	if errs := validation.IsDNS1123Subdomain(TenantNamespaceArtifactName(long)); len(errs) > 0 {
		t.Errorf("ExternalArtifact name of the longest tenant: %v", errs)
	}
}

// A kustomize stack gets its target namespace from Flux: one
// ExternalArtifact per namespace with selected clusters (the clusters'
// Flux objects may not use a source of another namespace under Flux's
// lockdown), and per eligible cluster a Kustomization, written before the
// stack's, which never deletes the namespace.
func TestTenantKustomizeStackCreatesItsNamespace(t *testing.T) {
	tenant := kustomizeTenant() // stack interval 30m, timeout 2m, target namespace platform
	edge := types.NamespacedName{Namespace: "team-b-clusters", Name: "edge-7"}
	shared := types.NamespacedName{Namespace: "shared-clusters", Name: "core-1"}
	paused := types.NamespacedName{Namespace: "paused-only", Name: "p"}
	sel := ClusterSelection{Clusters: []ClusterDecision{
		{Cluster: shared, Selected: true, Eligible: true},
		{Cluster: edge, Selected: true, Eligible: true},
		{Cluster: paused, Selected: true, Reason: tenancyv1alpha1.ClusterPausedReason},
	}}
	out, err := Tenant(tenant, sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.Objects() {
		got = append(got, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace /team-b-clusters", "ServiceAccount team-b-clusters/team-b", "RoleBinding team-b-clusters/capwright-tenant",
		"OCIRepository paused-only/team-b-stack", "OCIRepository shared-clusters/team-b-stack", "OCIRepository team-b-clusters/team-b-stack",
		// A paused cluster's namespace keeps its artifact, as its source.
		"ExternalArtifact paused-only/team-b-namespace", "ExternalArtifact shared-clusters/team-b-namespace", "ExternalArtifact team-b-clusters/team-b-namespace",
		// The namespace before the stack, per cluster.
		"Kustomization shared-clusters/" + TenantNamespaceObjectName("team-b", shared), "Kustomization shared-clusters/" + TenantClusterObjectName("team-b", shared),
		"Kustomization team-b-clusters/" + TenantNamespaceObjectName("team-b", edge), "Kustomization team-b-clusters/" + TenantClusterObjectName("team-b", edge),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	owner := wantOwner("team-b", "b0b-team-b")
	wantEA := &sourcev1.ExternalArtifact{
		TypeMeta: metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "ExternalArtifact"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-b-namespace", Namespace: "shared-clusters",
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-b"}, OwnerReferences: owner},
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
			APIVersion: "tenancy.capwright.io/v1alpha1", Kind: "Tenant", Name: "team-b"}},
	}
	if ea := out.NamespaceArtifacts[1]; !reflect.DeepEqual(ea, wantEA) {
		t.Errorf("ExternalArtifact =\n%+v\nwant\n%+v (labelled and owned: the controller's watches and stale-object cleanup find it)", ea, wantEA)
	}

	c := out.Clusters[1]
	if c.Cluster != edge || c.Namespace == nil {
		t.Fatalf("cluster objects = %+v, want edge-7's with a namespace Kustomization", c)
	}
	ns, stack := c.Namespace, c.Kustomization
	wantMeta := metav1.ObjectMeta{
		Name: TenantNamespaceObjectName("team-b", edge), Namespace: "team-b-clusters",
		Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-b",
			tenancyv1alpha1.ClusterNamespaceLabel: "team-b-clusters", tenancyv1alpha1.ClusterNameLabel: "edge-7"},
		OwnerReferences: owner,
	}
	if ns.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || ns.Kind != "Kustomization" || !reflect.DeepEqual(ns.ObjectMeta, wantMeta) {
		t.Errorf("namespace Kustomization meta = %+v %+v\nwant %+v (the cluster labels keep it while its cluster is paused)", ns.TypeMeta, ns.ObjectMeta, wantMeta)
	}
	wantSpec := kustomizev1.KustomizationSpec{
		// Its own namespace's artifact: no cross-namespace reference.
		SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: "ExternalArtifact", Name: "team-b-namespace"},
		Path:          "./",
		Prune:         false,
		Wait:          true,
		Interval:      metav1.Duration{Duration: time.Hour}, // longer than the stack's 30m
		RetryInterval: &metav1.Duration{Duration: time.Minute},
		Timeout:       &metav1.Duration{Duration: 2 * time.Minute},
		// The stack's kubeconfig and identity.
		KubeConfig:     &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "edge-7-kubeconfig", Key: "value"}},
		DeletionPolicy: kustomizev1.DeletionPolicyOrphan,
		CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-b"}},
	}
	if !reflect.DeepEqual(ns.Spec, wantSpec) {
		t.Errorf("namespace Kustomization spec =\n%+v\nwant\n%+v", ns.Spec, wantSpec)
	}
	if !reflect.DeepEqual(ns.Spec.KubeConfig, stack.Spec.KubeConfig) || ns.Spec.ServiceAccountName != stack.Spec.ServiceAccountName || ns.Spec.KubeConfig == stack.Spec.KubeConfig {
		t.Errorf("kubeConfig %+v / serviceAccountName %q, want the stack's %+v / %q, not shared", ns.Spec.KubeConfig, ns.Spec.ServiceAccountName, stack.Spec.KubeConfig, stack.Spec.ServiceAccountName)
	}
	// The controller writes the stack after the namespace Kustomization
	// is Ready: a dependsOn would have kustomize-controller run the
	// namespace Kustomization again on every new revision of the stack.
	if len(stack.Spec.DependsOn) > 0 {
		t.Errorf("stack dependsOn = %+v, want none", stack.Spec.DependsOn)
	}
	if !stack.Spec.Prune || stack.Spec.DeletionPolicy != kustomizev1.DeletionPolicyMirrorPrune {
		t.Errorf("the stack itself is still pruned: prune %v, deletionPolicy %s", stack.Spec.Prune, stack.Spec.DeletionPolicy)
	}

	// A stack interval longer than an hour, and suspend, carry over.
	tenant.Spec.Stack.Interval = &metav1.Duration{Duration: 3 * time.Hour}
	tenant.Spec.Suspend = true
	objs, err := TenantCluster(tenant, edge)
	if err != nil {
		t.Fatal(err)
	}
	if ns := objs.Namespace; ns.Spec.Interval.Duration != 3*time.Hour || !ns.Spec.Suspend {
		t.Errorf("interval %s, suspend %v; want the stack's 3h and true", ns.Spec.Interval.Duration, ns.Spec.Suspend)
	}
}

func TestTenantNamespaceOnlyForKustomizeStacksWithAnArtifactServer(t *testing.T) {
	sel := ClusterSelection{Clusters: []ClusterDecision{{Cluster: prodEU1, Selected: true, Eligible: true}}}
	chart, err := Tenant(chartTenant(), sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chart.NamespaceArtifacts) > 0 || chart.NamespaceArtifact != nil || chart.Clusters[0].Namespace != nil {
		t.Errorf("a chart stack got namespace objects: %+v (Helm creates its namespace)", chart)
	}
	plain, err := Tenant(kustomizeTenant(), sel, TenantOptions{NoArtifactServer: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.NamespaceArtifacts) > 0 || plain.NamespaceArtifact != nil || plain.Clusters[0].Namespace != nil || len(plain.Clusters[0].Kustomization.Spec.DependsOn) > 0 {
		t.Errorf("without an artifact server: %+v, want the stack alone", plain.Clusters[0])
	}
	if data, err := TenantNamespaceArtifact(chartTenant()); data != nil || err != nil {
		t.Errorf("artifact of a chart stack = %d bytes, %v", len(data), err)
	}
}

// What kustomize-controller applies from the namespace's artifact: the
// target namespace, labelled with the tenant, created only when missing.
func TestTenantNamespaceArtifact(t *testing.T) {
	tenant := kustomizeTenant()
	sel := ClusterSelection{Clusters: []ClusterDecision{{Cluster: prodEU1, Selected: true, Eligible: true}}}
	out, err := Tenant(tenant, sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := untarGz(t, out.NamespaceArtifact)
	if len(files) != 1 || files[TenantNamespaceFile] == nil {
		t.Fatalf("artifact files = %v, want %s alone", files, TenantNamespaceFile)
	}
	built := fluxBuild(t, &RenderedObjects{OCIRepository: &sourcev1.OCIRepository{}, Kustomization: out.Clusters[0].Namespace}, files)
	if len(built) != 1 {
		t.Fatalf("built %d objects, want the Namespace", len(built))
	}
	ns := find(t, built, "Namespace", "platform")
	if ns.GetLabels()[tenancyv1alpha1.TenantLabel] != "team-b" || ns.GetAnnotations()["kustomize.toolkit.fluxcd.io/ssa"] != "IfNotPresent" {
		t.Errorf("Namespace = %v, want the tenant label and kustomize.toolkit.fluxcd.io/ssa: IfNotPresent", ns.Object)
	}

	// The same tenant gives the same bytes (nothing to store again on a
	// resync); another target namespace does not.
	again, _ := TenantNamespaceArtifact(tenant)
	if !reflect.DeepEqual(again, out.NamespaceArtifact) {
		t.Error("packing the same tenant twice gave different artifacts")
	}
	tenant.Spec.Stack.TargetNamespace = ""
	other, _ := TenantNamespaceArtifact(tenant)
	if reflect.DeepEqual(other, out.NamespaceArtifact) || !strings.Contains(string(untarGz(t, other)[TenantNamespaceFile]), "name: team-b\n") {
		t.Errorf("the default target namespace (the tenant's name) is not in the artifact: %s", untarGz(t, other)[TenantNamespaceFile])
	}
}

func TestStaleTenantNamespaceObjects(t *testing.T) {
	tenant := kustomizeTenant()
	eligible := types.NamespacedName{Namespace: "team-b-clusters", Name: "eligible"}
	paused := types.NamespacedName{Namespace: "team-b-clusters", Name: "paused"}
	dropped := types.NamespacedName{Namespace: "shared-clusters", Name: "dropped"}
	sel := ClusterSelection{Clusters: []ClusterDecision{
		{Cluster: eligible, Selected: true, Eligible: true},
		{Cluster: paused, Selected: true, Reason: tenancyv1alpha1.ClusterPausedReason},
		{Cluster: dropped},
	}}
	namespaceKS := func(c types.NamespacedName) ExistingObject {
		m := tenantClusterMeta(tenant, c)
		m.Name = TenantNamespaceObjectName(tenant.Name, c)
		return ExistingObject{Kind: "Kustomization", Object: &m}
	}
	artifact := func(namespace string) ExistingObject {
		m := tenantMeta(tenant, namespace, TenantNamespaceArtifactName(tenant.Name), true)
		return ExistingObject{Kind: "ExternalArtifact", Object: &m}
	}
	existing := []ExistingObject{
		artifact("team-b-clusters"), artifact("shared-clusters"),
		namespaceKS(eligible), namespaceKS(paused), namespaceKS(dropped),
	}
	stale := func(opts TenantOptions) []string {
		out, err := Tenant(tenant, sel, opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range StaleTenantObjects(tenant, out, sel, existing) {
			got = append(got, e.Kind+" "+e.Object.GetNamespace()+"/"+e.Object.GetName())
		}
		return got
	}
	want := []string{
		"ExternalArtifact shared-clusters/team-b-namespace",
		"Kustomization shared-clusters/" + TenantNamespaceObjectName("team-b", dropped),
	}
	if got := stale(TenantOptions{}); !reflect.DeepEqual(got, want) {
		t.Errorf("stale =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A manager without an artifact server, or a chart stack, no longer
	// has them: all go but the paused cluster's, which keeps what it has.
	want = []string{
		"ExternalArtifact team-b-clusters/team-b-namespace",
		"ExternalArtifact shared-clusters/team-b-namespace",
		"Kustomization team-b-clusters/" + TenantNamespaceObjectName("team-b", eligible),
		"Kustomization shared-clusters/" + TenantNamespaceObjectName("team-b", dropped),
	}
	if got := stale(TenantOptions{NoArtifactServer: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("stale without an artifact server =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
