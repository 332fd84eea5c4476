package render

// clusterctl's labels on every object of a provider. clusterctl owns them
// (internal/clusterctl LabelProvider and LabelClusterctl); render keeps its
// own copy because it must not depend on clusterctl (pure, reusable by
// `capwright build`), and clusterctl, cluster-api-operator and CAPI itself
// find provider objects by exactly these keys, so they never change.
const (
	labelClusterctlProvider = "cluster.x-k8s.io/provider"
	labelClusterctl         = "clusterctl.cluster.x-k8s.io"
)

// clusterctlLabels are the labels `clusterctl init` puts on everything it
// installs; Flux puts them on everything it applies for the provider
// (commonMetadata), so clusterctl and CAPI tooling see what they would see
// after clusterctl installed the provider.
func clusterctlLabels(providerLabel string) map[string]string {
	return map[string]string{
		labelClusterctlProvider: providerLabel,
		labelClusterctl:         "",
	}
}
