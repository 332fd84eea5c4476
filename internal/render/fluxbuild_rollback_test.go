package render

import (
	"testing"
)

// A rollback builds the last good version without its CRDs (the newer
// ones in the cluster stay): everything else of the version is built as
// for an install, and nothing of the CRDs is left.
func TestFluxBuildOfARollbackLeavesTheCRDsOut(t *testing.T) {
	in := inputFor(t, coreProvider())
	full, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Rollback = true
	rollback, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	if name := rollback.OCIRepository.Name; name != "core-cluster-api-rollback" || rollback.Kustomization.Spec.SourceRef.Name != name {
		t.Errorf("the rollback's Kustomization applies %s from %s, not from a source of its own", rollback.Kustomization.Spec.SourceRef.Name, name)
	}
	all := fluxBuild(t, full, artifactFiles(t, "core-components.yaml"))
	kept := fluxBuild(t, rollback, artifactFiles(t, "core-components.yaml"))

	want := map[string]bool{}
	crds := 0
	for _, o := range all {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
			continue
		}
		want[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
	}
	if crds == 0 {
		t.Fatal("the core components hold no CRD: the test proves nothing")
	}
	for _, o := range kept {
		key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("the rollback build holds CRD %s", o.GetName())
			continue
		}
		if !want[key] {
			t.Errorf("the rollback build holds %s, which the install does not", key)
		}
		delete(want, key)
	}
	for key := range want {
		t.Errorf("the rollback build lacks %s", key)
	}
	t.Logf("rollback build: %d objects, the install's %d less its %d CRDs", len(kept), len(all), crds)
}
