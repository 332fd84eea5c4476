package clusterctltest

import (
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// KustomizeBuild runs kustomize as Flux's kustomize-controller does with a
// Kustomization's targetNamespace and patches: one generated
// kustomization.yaml over the components.
func KustomizeBuild(t testing.TB, components []byte, namespace string, patches []kustomize.Patch) []byte {
	t.Helper()
	kus := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{"components.yaml"},
		Namespace: namespace,
	}
	for _, p := range patches {
		var target *kustypes.Selector
		if p.Target != nil {
			target = &kustypes.Selector{LabelSelector: p.Target.LabelSelector, AnnotationSelector: p.Target.AnnotationSelector}
			target.Group, target.Version, target.Kind, target.Name, target.Namespace = p.Target.Group, p.Target.Version, p.Target.Kind, p.Target.Name, p.Target.Namespace
		}
		kus.Patches = append(kus.Patches, kustypes.Patch{Patch: p.Patch, Target: target})
	}
	kfile, err := yaml.Marshal(kus)
	if err != nil {
		t.Fatalf("encoding kustomization.yaml: %v", err)
	}
	fs := filesys.MakeFsInMemory()
	for name, data := range map[string][]byte{"/app/components.yaml": components, "/app/kustomization.yaml": kfile} {
		if err := fs.WriteFile(name, data); err != nil {
			t.Fatalf("writing %s: %v", name, err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/app")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatalf("kustomize output: %v", err)
	}
	return out
}
