package render

import (
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/capwright/capwright/internal/clusterctl"
)

// BenchmarkFluxBuildOfTheCoreProvider is kustomize-controller's build of
// the real core components (Flux's generator, kustomize build,
// substitution) for the Kustomization Capwright renders, for bare Flux's
// (substitution only), and for one with only clusterctl's contract
// (target namespace, labels, CRDs and Namespace kept on prune), and for
// Capwright's with its CRDs substituted too (as before
// Input.SkipCRDSubstitution): the CPU kustomize-controller spends per
// apply of each, before it talks to the API server.
func BenchmarkFluxBuildOfTheCoreProvider(b *testing.B) {
	p := coreProvider()
	in := inputFor(b, p)
	decoded, err := clusterctl.Decode(fixture(b, componentsFile(p)))
	if err != nil {
		b.Fatal(err)
	}
	if in.NamespacePatches, err = decoded.NamespacePatches(p.GetNamespace()); err != nil {
		b.Fatal(err)
	}
	substituting, err := Provider(in)
	if err != nil {
		b.Fatal(err)
	}
	in.SkipCRDSubstitution = decoded.CRDsSubstitutionFree()
	if !in.SkipCRDSubstitution {
		b.Fatal("the core's CRDs hold variables; the capwright case would measure nothing new")
	}
	capwright, err := Provider(in)
	if err != nil {
		b.Fatal(err)
	}
	bare := *substituting
	bareKs := *capwright.Kustomization
	bareKs.Spec = kustomizev1.KustomizationSpec{SourceRef: bareKs.Spec.SourceRef, Path: bareKs.Spec.Path,
		PostBuild: &kustomizev1.PostBuild{SubstituteStrategy: kustomizev1.SubstituteStrategyAlways}}
	bare.Kustomization = &bareKs
	contract := *substituting
	contractKs := *substituting.Kustomization
	contractKs.Spec.Patches = contractKs.Spec.Patches[len(in.NamespacePatches) : len(in.NamespacePatches)+2]
	contractKs.Spec.Images = nil
	contract.Kustomization = &contractKs

	files := artifactFiles(b, componentsFile(p))
	for _, bc := range []struct {
		name string
		out  *RenderedObjects
	}{{"bare", &bare}, {"contract", &contract}, {"capwright-substituting-crds", substituting}, {"capwright", capwright}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportMetric(float64(len(bc.out.Kustomization.Spec.Patches)), "patches")
			for b.Loop() {
				fluxBuild(b, bc.out, files)
			}
		})
	}
}
