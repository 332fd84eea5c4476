package framework

import (
	"context"
	"encoding/json"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/tests/plane"
	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// hcpsimReader lets Capwright's manager watch the simulated operator's
// kind, as a backend's chart (or the platform team) grants it.
const hcpsimReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hcpsim-capwright-reader
  labels:
    clusters.capwright.io/aggregate-to-manager: "true"
rules:
- apiGroups: ["hcpsim.plane.capwright.io"]
  resources: ["simulatedcontrolplanes"]
  verbs: ["get", "list", "watch"]
`

// StartHostedControlPlanes runs hcpsim, the plane's simulated
// hosted-control-plane operator, grants Capwright's manager read access
// to its kind and pushes its chart to the plane's registry; it returns
// the chart's oci:// URL (its version is hcpsim.ChartVersion).
func StartHostedControlPlanes(ctx context.Context, p *plane.Plane) (string, error) {
	if err := p.StartHCPSim(ctx); err != nil {
		return "", err
	}
	applier, err := plane.NewApplier(p.Config)
	if err != nil {
		return "", err
	}
	objs, err := plane.DecodeYAML(strings.NewReader(hcpsimReader))
	if err != nil {
		return "", err
	}
	if err := applier.Apply(ctx, objs...); err != nil {
		return "", err
	}
	return PushChart(ctx, p.Registry.Host, "charts/"+hcpsim.ChartName, hcpsim.ChartName, hcpsim.ChartVersion, hcpsim.ChartFiles())
}

// HostedControlPlaneSpec is a control plane whose backend is hcpsim's
// chart at chartURL: a SimulatedControlPlane named after the Cluster, at
// the desired version, read with the default (kany8s) expressions, and
// its admin kubeconfig. values nil are the version and the Cluster's name.
func HostedControlPlaneSpec(chartURL string, values map[string]any) clustersv1alpha1.CapwrightControlPlaneResourceSpec {
	if values == nil {
		values = map[string]any{"version": "${KUBERNETES_VERSION}", "clusterName": "${CLUSTER_NAME}"}
	}
	raw, err := json.Marshal(values)
	if err != nil {
		panic(err) // values of JSON types only
	}
	return clustersv1alpha1.CapwrightControlPlaneResourceSpec{
		Backend: clustersv1alpha1.Backend{Chart: &clustersv1alpha1.ChartBackend{
			OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: chartURL, Insecure: true},
			Version:             hcpsim.ChartVersion,
			Values:              &apiextensionsv1.JSON{Raw: raw},
		}},
		StatusFrom: clustersv1alpha1.StatusFrom{APIVersion: hcpsim.APIVersion, Kind: hcpsim.Kind, Name: "${CLUSTER_NAME}"},
		Kubeconfig: clustersv1alpha1.KubeconfigSource{SecretName: "${CLUSTER_NAME}-admin-kubeconfig", Key: hcpsim.KubeconfigSecretKey},
	}
}
