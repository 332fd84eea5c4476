package clusterctl_test

import (
	"testing"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
)

func TestComponentsFileAndLabel(t *testing.T) {
	tests := []struct {
		providerType, name, file, label string
	}{
		{v1alpha1.CoreProviderType, "cluster-api", "core-components.yaml", "cluster-api"},
		{v1alpha1.BootstrapProviderType, "kubeadm", "bootstrap-components.yaml", "bootstrap-kubeadm"},
		{v1alpha1.ControlPlaneProviderType, "kubeadm", "control-plane-components.yaml", "control-plane-kubeadm"},
		{v1alpha1.InfrastructureProviderType, "aws", "infrastructure-components.yaml", "infrastructure-aws"},
		{v1alpha1.IPAMProviderType, "in-cluster", "ipam-components.yaml", "ipam-in-cluster"},
		{v1alpha1.RuntimeExtensionProviderType, "test", "runtime-extension-components.yaml", "runtime-extension-test"},
		{v1alpha1.AddonProviderType, "helm", "addon-components.yaml", "addon-helm"},
		{"unknown", "x", "", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.providerType, func(t *testing.T) {
			if got := clusterctl.ComponentsFile(tt.providerType); got != tt.file {
				t.Errorf("ComponentsFile(%q) = %q, want %q", tt.providerType, got, tt.file)
			}
			if got := clusterctl.ProviderLabelValue(tt.providerType, tt.name); got != tt.label {
				t.Errorf("ProviderLabelValue(%q, %q) = %q, want %q", tt.providerType, tt.name, got, tt.label)
			}
		})
	}
}

func TestObjectsInGroups(t *testing.T) {
	components := []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dockerclusters.infrastructure.cluster.x-k8s.io
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata:
  name: quick-start
  namespace: capd-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capd-controller-manager
`)
	core := map[string]bool{"cluster.x-k8s.io": true}
	c, err := clusterctl.Decode(components)
	if err != nil {
		t.Fatal(err)
	}
	got := c.ObjectsInGroups(core)
	if len(got) != 1 || got[0] != "ClusterClass capd-system/quick-start (document 2)" {
		t.Errorf("ObjectsInGroups = %q, want the ClusterClass only", got)
	}
	if got := c.ObjectsInGroups(map[string]bool{"ipam.cluster.x-k8s.io": true}); len(got) != 0 {
		t.Errorf("ObjectsInGroups = %q, want none", got)
	}
	if _, err := clusterctl.Decode([]byte("kind: [\n")); err == nil {
		t.Error("no error for a components file that is not YAML")
	}
}
