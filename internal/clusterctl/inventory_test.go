package clusterctl_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestInventoryOfRealComponents(t *testing.T) {
	tests := []struct {
		file      string
		namespace string
		kinds     []schema.GroupKind
		count     int
	}{
		{"core-components.yaml", "capi-system", []schema.GroupKind{
			{Group: "cluster.x-k8s.io", Kind: "Cluster"},
			{Group: "cluster.x-k8s.io", Kind: "Machine"},
			{Group: "cluster.x-k8s.io", Kind: "ClusterClass"},
		}, 13},
		{"bootstrap-components.yaml", "capi-kubeadm-bootstrap-system", []schema.GroupKind{
			{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfig"},
		}, 2},
		{"control-plane-components.yaml", "capi-kubeadm-control-plane-system", []schema.GroupKind{
			{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"},
			{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlaneTemplate"},
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := clusterctltest.Read(t, clusterctltest.Current, tt.file)
			ns, err := clusterctl.ComponentNamespace(data)
			if err != nil || ns != tt.namespace {
				t.Errorf("ComponentNamespace = %q, %v; want %q", ns, err, tt.namespace)
			}
			kinds, err := clusterctl.CRDKinds(data)
			if err != nil {
				t.Fatalf("CRDKinds: %v", err)
			}
			if len(kinds) != tt.count {
				t.Errorf("CRDKinds found %d kinds, want %d: %v", len(kinds), tt.count, kinds)
			}
			for _, k := range tt.kinds {
				if !slices.Contains(kinds, k) {
					t.Errorf("CRDKinds = %v, want it to contain %v", kinds, k)
				}
			}
		})
	}
}

func TestComponentNamespaceErrors(t *testing.T) {
	ns := func(name string) string { return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n" }
	tests := []struct{ name, data, want string }{
		{"none", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "no Namespace object"},
		{"several", ns("a") + "---\n" + ns("b"), "2 Namespace objects (a, b)"},
		{"not yaml", "a: [", "YAML document 1"},
		{"not an object", "just: data\n", "YAML document 1 is not a Kubernetes object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterctl.ComponentNamespace([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ComponentNamespace error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
