package render

import (
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/internal/artifact"
)

// helmReleaseNameMax is Helm's limit on release names.
const helmReleaseNameMax = 53

// helmKeepPolicy, "helm.sh/resource-policy: keep", makes Helm leave an
// object behind on uninstall — Helm's counterpart of Flux's prune: disabled.
const helmKeepPolicy = "helm.sh/resource-policy"

// renderChart renders a provider packaged as an OCI Helm chart: an
// OCIRepository that copies the chart layer of the checked digest, and a
// HelmRelease installing it into the provider's namespace with clusterctl's
// labels on every object.
//
// Helm never deletes CRDs from a chart's crds/ directory; CRDs the chart
// templates get helm.sh/resource-policy: keep through a post-renderer, so
// either way deleting the provider keeps the CRDs (and users' objects).
func renderChart(in Input, om objectMeta) (*RenderedObjects, error) {
	p := in.Provider
	spec := p.GetSpec()
	if err := checkChartSpec(in); err != nil {
		return nil, err
	}
	if len(om.name) > helmReleaseNameMax {
		return nil, fmt.Errorf("metadata.name: the Helm release of %s %s/%s would be named %q, longer than Helm's %d characters; use a shorter provider name",
			om.kind, p.GetNamespace(), p.GetName(), om.name, helmReleaseNameMax)
	}
	src := spec.Source.Chart
	repo := chartSource(in, om)

	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: om.build(),
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:        &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: om.name, Namespace: om.namespace},
			Interval:        interval(spec),
			Timeout:         timeout(spec),
			Suspend:         spec.Suspend,
			ReleaseName:     om.name,
			TargetNamespace: p.GetNamespace(),
			Install:         &helmv2.Install{CRDs: helmv2.CreateReplace, CreateNamespace: false},
			Upgrade:         &helmv2.Upgrade{CRDs: helmv2.CreateReplace},
			DriftDetection:  &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
			Values:          src.Values.DeepCopy(),
			DependsOn:       helmReleaseDependsOn(in),
			CommonMetadata:  &helmv2.CommonMetadata{Labels: clusterctlLabels(in.ProviderLabel)},
			// The provider's installer (ProviderInstaller), not the
			// controller's own identity or the namespace's default.
			ServiceAccountName: InstallerServiceAccountName(p.ProviderType(), p.GetName()),
			PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
				Patches: appendPatches([]kustomize.Patch{keepCRDsOnUninstall()}, spec.Patches),
				Images:  images(in),
			}}},
		},
	}
	for _, v := range src.ValuesFrom {
		hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, meta.ValuesReference{Kind: v.Kind, Name: v.Name, ValuesKey: v.ValuesKey, Optional: v.Optional})
	}
	return &RenderedObjects{OCIRepository: repo, HelmRelease: hr}, nil
}

// chartSource is the OCIRepository of a chart: the chart's layer only.
func chartSource(in Input, om objectMeta) *sourcev1.OCIRepository {
	repo := ociRepository(in, om, &in.Provider.GetSpec().Source.Chart.OCIRegistryAccess)
	repo.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: artifact.HelmChartMediaType, Operation: sourcev1.OCILayerCopy}
	return repo
}

// checkChartSpec refuses settings that only make sense for a components
// file: a chart is configured through its values.
func checkChartSpec(in Input) error {
	spec := in.Provider.GetSpec()
	switch {
	case spec.ConfigSecret != nil || len(spec.Variables) > 0:
		return errors.New("spec.configSecret and spec.variables: clusterctl variables apply to a components file, not to a chart; pass the settings as spec.source.chart.values or valuesFrom")
	case spec.Manager != nil:
		return errors.New("spec.manager: manager flags are merged into the args of a components file's Deployment, which a chart renders itself; set them through the chart's values (spec.source.chart.values)")
	case spec.Deployment != nil:
		return errors.New("spec.deployment: Deployment settings are patched into a components file; for a chart set them through its values (spec.source.chart.values), or with a patch in spec.patches")
	}
	return nil
}

// keepCRDsOnUninstall annotates the CRDs a chart templates so that Helm
// keeps them on uninstall.
func keepCRDsOnUninstall() kustomize.Patch {
	return kustomize.Patch{
		Patch: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: not-used\n  annotations:\n    " +
			helmKeepPolicy + ": keep\n",
		Target: &kustomize.Selector{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	}
}

// helmReleaseDependsOn keeps the HelmRelease entries of spec.dependsOn:
// a HelmRelease can depend on HelmReleases only. The controller waits for
// the others, and for the core provider, before it writes anything.
func helmReleaseDependsOn(in Input) []helmv2.DependencyReference {
	var out []helmv2.DependencyReference
	for _, d := range in.Provider.GetSpec().DependsOn {
		if d.Kind == helmv2.HelmReleaseKind {
			out = append(out, helmv2.DependencyReference{Name: d.Name, Namespace: namespaceOr(d.Namespace, in.Provider)})
		}
	}
	return out
}
