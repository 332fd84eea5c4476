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
			ask(&CheckedArtifact{ProviderArtifact: &artifact.ProviderArtifact{Components: data}, home: "capi-system"})
		}
	})
	b.Run("later reconciles", func(b *testing.B) {
		a := &CheckedArtifact{ProviderArtifact: &artifact.ProviderArtifact{Components: data}, home: "capi-system"}
		ask(a)
		b.ResetTimer()
		for range b.N {
			ask(a)
		}
	})
}
