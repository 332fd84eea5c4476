package provider

import (
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// BenchmarkComponentsAnalysis is what preflight and render read from the
// real core components file (1.2 MB): each question decoding the file on
// its own, as every reconcile did; all answered from one decode, as the
// first reconcile of an artifact does; and a later reconcile, which finds
// the answers kept with the artifact.
func BenchmarkComponentsAnalysis(b *testing.B) {
	data := clusterctltest.Read(b, clusterctltest.Current, "core-components.yaml")
	b.Run("each question decodes", func(b *testing.B) {
		for range b.N {
			_, _ = clusterctl.ParseVariables(data)
			_, _ = clusterctl.Images(data)
			_, _ = clusterctl.NamespacePatches(data, "capi-system")
			c, _ := clusterctl.Decode(data) // objects in the core's groups
			c.ObjectsInGroups(coreGroups)
			c, _ = clusterctl.Decode(data) // the manager Deployment
			c.ManagerDeployment()
		}
	})
	ask := func(a *CheckedArtifact) {
		_, _ = a.Variables()
		_, _ = a.Images()
		_, _ = a.CoreObjects()
		_, _ = a.NamespacePatches("capi-system")
		a.ManagerDeployment()
	}
	b.Run("one decode per artifact", func(b *testing.B) {
		for range b.N {
			ask(NewCheckedArtifact(&artifact.ProviderArtifact{Components: data}, "capi-system", ""))
		}
	})
	b.Run("later reconciles", func(b *testing.B) {
		a := NewCheckedArtifact(&artifact.ProviderArtifact{Components: data}, "capi-system", "")
		ask(a)
		b.ResetTimer()
		for range b.N {
			ask(a)
		}
	})
}

// BenchmarkPlan is a reconcile's plan of the real core provider once its
// artifact is analysed (every later reconcile of it): the checks, run as
// the controller runs them stage by stage, and the render.
func BenchmarkPlan(b *testing.B) {
	f := factsOf(b, core())
	f.Artifact.Checked.Analyse()
	for range b.N {
		for _, s := range []Stage{Quick, CoreContract, Variables, AdditionalManifests} {
			_ = Check(f, s)
		}
		if _, err := Plan(f); err != nil {
			b.Fatal(err)
		}
	}
}
