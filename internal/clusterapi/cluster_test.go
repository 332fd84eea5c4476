package clusterapi

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// A Cluster as a user writes it for Cluster API v1.14, decoded through the
// typed API the manager's scheme registers.
const clusterYAML = `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: shop-1
  namespace: team-a
  labels: {env: prod}
  annotations: {cluster.x-k8s.io/paused: ""}
spec:
  paused: true
  topology:
    classRef: {name: hosted}
    version: v1.34.1
    variables:
    - name: region
      value: eu-1
    - name: sizes
      value: {workers: 3, cp: 1}
status:
  initialization:
    controlPlaneInitialized: true
`

func TestFactsOf(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var c Cluster
	if err := yaml.Unmarshal([]byte(clusterYAML), &c); err != nil {
		t.Fatal(err)
	}
	if gvks, _, err := scheme.ObjectKinds(&c); err != nil || gvks[0] != ClusterGVK {
		t.Fatalf("scheme kinds %v, %v; want %v", gvks, err, ClusterGVK)
	}
	f := FactsOf(&c)
	if !f.SpecPaused || !f.PausedByAnnotation || !f.Paused() || !f.ControlPlaneInitialized || f.Deleting {
		t.Errorf("facts %+v", f)
	}
	if f.TopologyVersion != "v1.34.1" || f.Labels["env"] != "prod" || f.Ref().String() != "team-a/shop-1" {
		t.Errorf("facts %+v", f)
	}
	// A string is its value; anything else compact JSON with sorted keys.
	if f.Variables["region"] != "eu-1" || f.Variables["sizes"] != `{"cp":1,"workers":3}` {
		t.Errorf("variables %v", f.Variables)
	}

	bare := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "x", DeletionTimestamp: ptr.To(metav1.Now())},
		Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{Variables: []clusterv1.ClusterVariable{{Name: "n", Value: apiextensionsv1.JSON{Raw: []byte(`"v"`)}}}}}}
	if g := FactsOf(bare); g.Paused() || g.ControlPlaneInitialized || !g.Deleting || g.Variables["n"] != "v" {
		t.Errorf("bare facts %+v", g)
	}
	if KubeconfigSecretName("shop-1") != "shop-1-kubeconfig" || ClusterAPIVersion != "cluster.x-k8s.io/v1beta2" {
		t.Error("names")
	}
}
