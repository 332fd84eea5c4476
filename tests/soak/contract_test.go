package soak

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// A contract Cluster has converged once its control plane is Ready for
// its generation, initialized and at its version, its infrastructure
// Ready and provisioned, and Cluster API carried both over.
func TestContractConvergence(t *testing.T) {
	ready := func(generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: clustersv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: generation}}
	}
	cp := func(change func(*clustersv1alpha1.CapwrightControlPlane)) *clustersv1alpha1.CapwrightControlPlane {
		o := &clustersv1alpha1.CapwrightControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: ContractNamespace, Name: "k00", Generation: 2},
			Spec: clustersv1alpha1.CapwrightControlPlaneSpec{Version: contractVersion}}
		o.Status.ObservedGeneration, o.Status.Conditions, o.Status.Version = 2, ready(2), contractVersion
		o.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		change(o)
		return o
	}
	for _, tt := range []struct {
		name string
		cp   *clustersv1alpha1.CapwrightControlPlane
		want string
	}{
		{"converged", cp(func(*clustersv1alpha1.CapwrightControlPlane) {}), ""},
		{"status behind", cp(func(o *clustersv1alpha1.CapwrightControlPlane) { o.Status.ObservedGeneration = 1 }), "status of generation 1, spec at 2"},
		{"Ready for the last generation", cp(func(o *clustersv1alpha1.CapwrightControlPlane) { o.Status.Conditions = ready(1) }), "Ready True"},
		{"not initialized", cp(func(o *clustersv1alpha1.CapwrightControlPlane) { o.Status.Initialization.ControlPlaneInitialized = nil }), "not initialized"},
		{"upgrading", cp(func(o *clustersv1alpha1.CapwrightControlPlane) { o.Spec.Version = "v1.31.1" }), `status.version "v1.31.0", want v1.31.1`},
	} {
		got := controlPlaneConverged(tt.cp)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}

	infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ContractNamespace, Name: "k00", Generation: 1}}
	infra.Status.ObservedGeneration, infra.Status.Conditions = 1, ready(1)
	if got := infrastructureConverged(infra); !strings.Contains(got, "not provisioned") {
		t.Errorf("an infrastructure not provisioned: %q", got)
	}
	infra.Status.Initialization.Provisioned = ptr.To(true)
	if got := infrastructureConverged(infra); got != "" {
		t.Errorf("a provisioned infrastructure: %q", got)
	}

	cluster := framework.ContractCluster(ContractNamespace, "k00", nil)
	_ = unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "controlPlaneInitialized")
	if got := contractClusterConverged(cluster); got != "Cluster soak-contracts/k00: status.initialization.infrastructureProvisioned not true" {
		t.Errorf("a Cluster whose infrastructure Cluster API has not carried over: %q", got)
	}
	_ = unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "infrastructureProvisioned")
	if got := contractClusterConverged(cluster); got != "" {
		t.Errorf("a Cluster with both carried over: %q", got)
	}
}
