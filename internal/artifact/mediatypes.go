package artifact

// Media types and annotations of the OCI artifacts Flux and Helm read:
// one definition for the controller, the CLI, the release tooling and the
// tests.
const (
	// FluxConfigMediaType and FluxContentMediaType are the config and the
	// one layer of an artifact as `flux push artifact` writes it.
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// HelmConfigMediaType (Chart.yaml as JSON) and HelmChartMediaType (the
	// packaged chart) are a chart as `helm push` writes it.
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// ChartImagesAnnotation is the Chart.yaml annotation (Artifact Hub's)
	// listing the images a chart runs, as YAML [{name, image}].
	ChartImagesAnnotation = "artifacthub.io/images"
)
