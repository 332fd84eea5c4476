package clusterctl_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestImagesOfRealComponents(t *testing.T) {
	tests := []struct {
		version, file, want string
	}{
		{clusterctltest.Current, "core-components.yaml", "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2"},
		{clusterctltest.Current, "bootstrap-components.yaml", "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.14.2"},
		{clusterctltest.Current, "control-plane-components.yaml", "registry.k8s.io/cluster-api/kubeadm-control-plane-controller:v1.14.2"},
		{clusterctltest.Previous, "core-components.yaml", "registry.k8s.io/cluster-api/cluster-api-controller:v1.13.6"},
	}
	for _, tt := range tests {
		t.Run(tt.version+"/"+tt.file, func(t *testing.T) {
			got, err := clusterctl.Images(clusterctltest.Read(t, tt.version, tt.file))
			if err != nil {
				t.Fatalf("Images: %v", err)
			}
			if want := []string{tt.want}; !reflect.DeepEqual(got, want) {
				t.Errorf("Images = %v, want %v", got, want)
			}
		})
	}
}

const workloads = `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  template:
    spec:
      initContainers:
      - {name: init, image: "${REGISTRY:=reg.example}/init:v1"}
      containers:
      - {name: manager, image: "${REGISTRY:=reg.example}/manager:${TAG:=v1}"}
      - {name: sidecar, image: reg.example/manager:v1}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: ns}
spec: {template: {spec: {containers: [{name: agent, image: other.example/agent:v2}]}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts, namespace: ns}
spec: {template: {spec: {containers: [{name: db, image: other.example/db:v3}]}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job, namespace: ns}
spec: {template: {spec: {containers: [{name: job, image: other.example/job:v4}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: pod, namespace: ns}
spec: {containers: [{name: pod, image: other.example/pod:v5}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-workload, namespace: ns}
data: {image: ignored.example/x:v1}
`

func TestImagesOfWorkloads(t *testing.T) {
	got, err := clusterctl.Images([]byte(workloads))
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	want := []string{
		"other.example/agent:v2", "other.example/db:v3", "other.example/job:v4", "other.example/pod:v5",
		"reg.example/init:v1", "reg.example/manager:v1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Images = %v, want %v", got, want)
	}

	values := map[string]string{"REGISTRY": "mirror.local", "TAG": ""}
	got, err = clusterctl.ResolvedImages([]byte(workloads), func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	})
	if err != nil {
		t.Fatalf("ResolvedImages: %v", err)
	}
	// An empty TAG falls back to its := default, as in Flux.
	for _, image := range []string{"mirror.local/init:v1", "mirror.local/manager:v1", "reg.example/manager:v1"} {
		if !slices.Contains(got, image) {
			t.Errorf("ResolvedImages = %v, want it to contain %s", got, image)
		}
	}
}

func TestImagesWithRequiredVariable(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: "${REGISTRY}/c:v1"}]}
`
	_, err := clusterctl.Images([]byte(data))
	if err == nil || !strings.Contains(err.Error(), `"${REGISTRY}/c:v1"`) || !strings.Contains(err.Error(), "Pod p") {
		t.Fatalf("Images error = %v, want one naming the image and the Pod", err)
	}
	got, err := clusterctl.ResolvedImages([]byte(data), func(string) (string, bool) { return "mirror.local", true })
	if err != nil || !reflect.DeepEqual(got, []string{"mirror.local/c:v1"}) {
		t.Errorf("ResolvedImages = %v, %v", got, err)
	}
}
