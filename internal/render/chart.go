package render

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmChartLayer is the media type of a Helm chart in OCI.
const helmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// chart renders a provider packaged as an OCI Helm chart: an OCIRepository
// that copies the chart layer of the checked digest and a HelmRelease that
// installs it into the provider's namespace. Images and patches travel as
// a kustomize post-renderer, clusterctl's labels as common metadata.
func chart(in Input) (*RenderedObjects, error) {
	p := in.Provider
	spec := p.GetSpec()
	src := spec.Source.Chart
	name := ObjectName(p.ProviderType(), p.GetName())
	repo := ociRepository(in, &src.OCIRegistryAccess)
	repo.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: helmChartLayer, Operation: sourcev1.OCILayerCopy}
	if spec.ConfigSecret != nil || len(spec.Variables) > 0 {
		return nil, fmt.Errorf("spec.configSecret and spec.variables are clusterctl variables of a components file; a chart takes spec.source.chart.values and valuesFrom instead")
	}
	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: objectMeta(in),
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:        &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: name},
			Interval:        interval(spec),
			Timeout:         timeout(spec),
			Suspend:         spec.Suspend,
			ReleaseName:     name,
			TargetNamespace: p.GetNamespace(),
			Install:         &helmv2.Install{CRDs: helmv2.CreateReplace},
			Upgrade:         &helmv2.Upgrade{CRDs: helmv2.CreateReplace},
			DriftDetection:  &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
			Values:          src.Values,
			CommonMetadata: &helmv2.CommonMetadata{Labels: map[string]string{
				labelProvider:   in.ProviderLabel,
				labelClusterctl: "",
			}},
		},
	}
	for _, v := range src.ValuesFrom {
		hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, meta.ValuesReference{Kind: v.Kind, Name: v.Name, ValuesKey: v.ValuesKey, Optional: v.Optional})
	}
	for _, d := range spec.DependsOn {
		if d.Kind != helmv2.HelmReleaseKind {
			continue // Capwright waits for other kinds itself before writing.
		}
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, helmv2.DependencyReference{Name: d.Name, Namespace: d.Namespace})
	}
	if imgs := images(in); len(imgs) > 0 || len(spec.Patches) > 0 {
		hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Images: imgs, Patches: spec.Patches}}}
	}
	return &RenderedObjects{OCIRepository: repo, HelmRelease: hr}, nil
}
