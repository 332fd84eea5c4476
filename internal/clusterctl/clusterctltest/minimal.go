package clusterctltest

import (
	"fmt"
	"strings"
)

// Small provider releases for unit tests, written here rather than
// rendered: a core provider's components, an infrastructure provider's
// with variables, and metadata.yaml for any version and contract.

// CoreComponents are a small core provider's: its namespace and a
// Deployment with one variable that has a default.
const CoreComponents = `apiVersion: v1
kind: Namespace
metadata:
  name: capi-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capi-controller-manager
  namespace: capi-system
spec:
  selector:
    matchLabels: {control-plane: controller-manager}
  template:
    metadata:
      labels: {control-plane: controller-manager}
    spec:
      containers:
      - name: manager
        image: registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2
        args: ["--leader-elect", "--diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}"]
`

// DockerComponents are a small infrastructure provider's: two variables
// without a default (DOCKER_TOKEN, DOCKER_REGION) and one with.
const DockerComponents = `apiVersion: v1
kind: Namespace
metadata:
  name: capd-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capd-controller-manager
  namespace: capd-system
spec:
  selector:
    matchLabels: {control-plane: controller-manager}
  template:
    metadata:
      labels: {control-plane: controller-manager}
    spec:
      containers:
      - name: manager
        image: registry.k8s.io/cluster-api/capd-manager:v1.14.2
        args: ["--leader-elect", "--feature-gates=MachinePool=${EXP_MACHINE_POOL:=true}"]
        env:
        - name: DOCKER_TOKEN
          value: ${DOCKER_TOKEN}
        - name: DOCKER_REGION
          value: ${DOCKER_REGION}
`

// Metadata maps the series of seriesVersion (v1.14.x) to contract.
func Metadata(seriesVersion, contract string) []byte {
	parts := strings.Split(strings.TrimPrefix(seriesVersion, "v"), ".")
	return fmt.Appendf(nil, "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: %s\n  minor: %s\n  contract: %s\n", parts[0], parts[1], contract)
}
