package render

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
)

// A Cluster as Cluster API v1.14 reports it in v1beta2 once its control
// plane answers (a CAPD cluster from the quick start).
const provisionedCluster = `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: prod-eu-1
  namespace: tenant-team-a
  labels: {tenant: team-a, cluster.x-k8s.io/cluster-name: prod-eu-1, topology.cluster.x-k8s.io/owned: ""}
  finalizers: [cluster.cluster.x-k8s.io]
  generation: 2
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    serviceDomain: cluster.local
  controlPlaneEndpoint: {host: 172.18.0.3, port: 6443}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: prod-eu-1-cp-8bx2k}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: prod-eu-1-7qvnm}
  topology:
    classRef: {name: quick-start}
    version: v1.34.0
    controlPlane: {replicas: 1}
status:
  phase: Provisioned
  observedGeneration: 2
  initialization: {infrastructureProvisioned: true, controlPlaneInitialized: true}
  controlPlane: {desiredReplicas: 1, readyReplicas: 1, availableReplicas: 1, upToDateReplicas: 1, replicas: 1}
  conditions:
  - {type: Available, status: "True", reason: Available, observedGeneration: 2, lastTransitionTime: "2026-11-22T09:58:00Z"}
  - {type: ControlPlaneInitialized, status: "True", reason: Initialized, observedGeneration: 2, lastTransitionTime: "2026-11-22T09:55:41Z"}
  - {type: Paused, status: "False", reason: NotPaused, observedGeneration: 2, lastTransitionTime: "2026-11-22T09:50:00Z"}
`

func clusterFromYAML(t *testing.T, manifest string) *clusterapi.Cluster {
	t.Helper()
	c := &clusterapi.Cluster{}
	if err := yaml.Unmarshal([]byte(manifest), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// What selection reads of a Cluster, through the typed API
// (clusterapi.FactsOf).
func TestClusterFacts(t *testing.T) {
	facts := clusterapi.FactsOf(clusterFromYAML(t, provisionedCluster))
	want := clusterapi.Facts{Namespace: "tenant-team-a", Name: "prod-eu-1", ControlPlaneInitialized: true, TopologyVersion: "v1.34.0", Variables: map[string]string{},
		Labels: map[string]string{"tenant": "team-a", "cluster.x-k8s.io/cluster-name": "prod-eu-1", "topology.cluster.x-k8s.io/owned": ""}}
	if !reflect.DeepEqual(facts, want) {
		t.Errorf("facts = %+v, want %+v", facts, want)
	}

	provisioning := clusterFromYAML(t, provisionedCluster)
	provisioning.Status.Initialization.ControlPlaneInitialized = nil
	provisioning.SetAnnotations(map[string]string{"cluster.x-k8s.io/paused": ""})
	now := metav1.Now()
	provisioning.SetDeletionTimestamp(&now)
	if f := clusterapi.FactsOf(provisioning); f.ControlPlaneInitialized || !f.Paused() || !f.Deleting {
		t.Errorf("facts = %+v, want not initialized, paused by annotation, deleting", f)
	}
	byField := clusterFromYAML(t, provisionedCluster)
	paused := true
	byField.Spec.Paused = &paused
	if f := clusterapi.FactsOf(byField); !f.Paused() {
		t.Error("spec.paused is not read")
	}
	// A field of the wrong type is refused as the Cluster is decoded.
	if err := yaml.Unmarshal([]byte(strings.Replace(provisionedCluster, "controlPlaneInitialized: true", `controlPlaneInitialized: "yes"`, 1)), &clusterapi.Cluster{}); err == nil {
		t.Error("a string controlPlaneInitialized was accepted")
	}
}

func TestSelectClusters(t *testing.T) {
	ready := func(ns, name string, labels map[string]string) clusterapi.Facts {
		return clusterapi.Facts{Namespace: ns, Name: name, Labels: labels, ControlPlaneInitialized: true}
	}
	teamA := map[string]string{"tenant": "team-a"}
	clusters := []clusterapi.Facts{
		ready("tenant-team-a", "prod-eu-1", teamA),
		ready("shared-clusters", "shared-1", teamA),
		ready("tenant-team-a", "other-team", map[string]string{"tenant": "team-b"}),
		// Matching labels and name, but in a namespace the tenant does
		// not list: never selected.
		ready("tenant-team-b", "prod-eu-1", teamA),
		ready("kube-system", "legacy-1", teamA),
		ready("shared-clusters", "legacy-1", nil), // by name
		{Namespace: "tenant-team-a", Name: "provisioning", Labels: teamA},
		{Namespace: "tenant-team-a", Name: "paused", Labels: teamA, ControlPlaneInitialized: true, SpecPaused: true},
		{Namespace: "tenant-team-a", Name: "deleting", Labels: teamA, ControlPlaneInitialized: true, Deleting: true, SpecPaused: true},
		ready("tenant-team-a", "no-kubeconfig", teamA),
	}
	kubeconfigs := sets.New[types.NamespacedName]()
	for _, c := range clusters {
		if c.Name != "no-kubeconfig" {
			kubeconfigs.Insert(types.NamespacedName{Namespace: c.Namespace, Name: KubeconfigSecretName(c.Name)})
		}
	}

	tenant := chartTenant()
	tenant.Spec.Clusters.Names = []string{"legacy-1", "not-there"}
	sel, err := SelectClusters(tenant, clusters, kubeconfigs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ClusterDecision{}
	var order []string
	for _, d := range sel.Clusters {
		got[d.Cluster.String()] = d
		order = append(order, d.Cluster.String())
	}
	if !reflect.DeepEqual(order, []string{
		"kube-system/legacy-1", "shared-clusters/legacy-1", "shared-clusters/shared-1",
		"tenant-team-a/deleting", "tenant-team-a/no-kubeconfig", "tenant-team-a/other-team", "tenant-team-a/paused",
		"tenant-team-a/prod-eu-1", "tenant-team-a/provisioning", "tenant-team-b/prod-eu-1",
	}) {
		t.Errorf("decisions are not one per cluster sorted by namespace and name: %v", order)
	}
	tests := []struct {
		cluster            string
		selected, eligible bool
		reason             string
		message            string
	}{
		{"tenant-team-a/prod-eu-1", true, true, "", ""},
		{"shared-clusters/shared-1", true, true, "", ""},
		{"shared-clusters/legacy-1", true, true, "", ""},
		{"tenant-team-a/other-team", false, false, "", ""},
		{"tenant-team-b/prod-eu-1", false, false, "", ""},
		{"kube-system/legacy-1", false, false, "", ""},
		{"tenant-team-a/provisioning", true, false, tenancyv1alpha1.ControlPlaneNotInitializedReason, "status.initialization.controlPlaneInitialized"},
		{"tenant-team-a/paused", true, false, tenancyv1alpha1.ClusterPausedReason, "is paused"},
		{"tenant-team-a/deleting", true, false, tenancyv1alpha1.ClusterDeletingReason, "is being deleted"},
		{"tenant-team-a/no-kubeconfig", true, false, tenancyv1alpha1.KubeconfigMissingReason, "Secret tenant-team-a/no-kubeconfig-kubeconfig does not exist"},
	}
	for _, tt := range tests {
		d := got[tt.cluster]
		if d.Selected != tt.selected || d.Eligible != tt.eligible || d.Reason != tt.reason || !strings.Contains(d.Message, tt.message) {
			t.Errorf("%s: %s %q, want selected %v eligible %v reason %q message with %q", tt.cluster, d, d.Message, tt.selected, tt.eligible, tt.reason, tt.message)
		}
	}
	if !reflect.DeepEqual(sel.MissingNames, []string{"not-there"}) {
		t.Errorf("missing names = %v", sel.MissingNames)
	}
	if n := len(sel.Selected()); n != 7 {
		t.Errorf("%d selected, want 7", n)
	}
}

func TestSelectClustersSelectorForms(t *testing.T) {
	clusters := []clusterapi.Facts{
		{Namespace: "tenant-team-a", Name: "a", Labels: map[string]string{"env": "prod"}, ControlPlaneInitialized: true},
		{Namespace: "tenant-team-a", Name: "b", ControlPlaneInitialized: true},
		{Namespace: "elsewhere", Name: "c", ControlPlaneInitialized: true},
	}
	tests := []struct {
		name     string
		selector *metav1.LabelSelector
		names    []string
		want     []string
	}{
		{"empty selector: every Cluster in the tenant's namespaces", &metav1.LabelSelector{}, nil, []string{"a", "b"}},
		{"names only", nil, []string{"b", "c"}, []string{"b"}},
		{"expression", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}}, nil, []string{"a"}},
		{"selector or names", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, []string{"b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := chartTenant()
			tenant.Spec.Clusters = tenancyv1alpha1.ClusterSelector{Selector: tt.selector, Names: tt.names}
			sel, err := SelectClusters(tenant, clusters, sets.New[types.NamespacedName]())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range sel.Selected() {
				got = append(got, d.Cluster.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("selected %v, want %v", got, tt.want)
			}
		})
	}

	tenant := chartTenant()
	tenant.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}}}
	if _, err := SelectClusters(tenant, clusters, nil); err == nil || !strings.Contains(err.Error(), "spec.clusters.selector of Tenant team-a") {
		t.Errorf("an In without values: error %v", err)
	}
}

func TestTenantNamespaces(t *testing.T) {
	tenant := chartTenant()
	tenant.Spec.Clusters.Namespaces = []string{"zeta", "tenant-team-a", "alpha"}
	if got := TenantNamespaces(tenant); !reflect.DeepEqual(got, []string{"alpha", "tenant-team-a", "zeta"}) {
		t.Errorf("TenantNamespaces = %v", got)
	}
}
