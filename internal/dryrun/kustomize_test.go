package dryrun

import (
	"context"
	"reflect"
	"sync"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Builds that queue behind one another, sharing one parse of kustomize's
// schema, each build what Flux builds.
func TestBuildsAtOnceBuildAsFluxDoes(t *testing.T) {
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
	files := map[string][]byte{"core-components.yaml": coreComponents(t), "dollars.yaml": []byte(dollars)}
	ks := coreKustomization("./")
	want, err := fluxBuild(t, secrets, ks, files)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]*Built, 3)
	errs := make([]error, 3)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = Build(context.Background(), secrets, ks, files) })
	}
	wg.Wait()
	for i, built := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(built.Objects) != len(want) {
			t.Fatalf("build %d: %d objects, Flux builds %d", i, len(built.Objects), len(want))
		}
		for j, o := range built.Objects {
			if !reflect.DeepEqual(o.Object, want[j].Object) {
				t.Errorf("build %d: %s %s differs from Flux's build", i, o.GetKind(), o.GetName())
			}
		}
	}
}

// A source with a kustomization file of its own, which may set kustomize's
// schema (its openapi field), is built by Flux's SecureBuild itself.
func TestHasKustomization(t *testing.T) {
	for name, want := range map[string]bool{
		"kustomization.yaml": true, "components/kustomization.yml": true, "base/Kustomization": true,
		"core-components.yaml": false, "kustomization.yaml.orig": false, "metadata.yaml": false,
	} {
		if got := hasKustomization(map[string][]byte{name: nil, "core-components.yaml": nil}); got != want {
			t.Errorf("hasKustomization(%s) = %v, want %v", name, got, want)
		}
	}
}

// BenchmarkThreeCoreBuildsAtOnce builds Cluster API's core components
// three times at once, as when three providers upgrade together: by
// Flux's SecureBuild each, and by kustomizeBuild, sharing the schema.
func BenchmarkThreeCoreBuildsAtOnce(b *testing.B) {
	files := map[string][]byte{"core-components.yaml": coreComponents(b)}
	dir, err := writeFiles(files)
	if err != nil {
		b.Fatal(err)
	}
	ks := coreKustomization("./")
	// The generated kustomization.yaml, for the builds below.
	if err := writeGenerated(dir, ks); err != nil {
		b.Fatal(err)
	}
	for name, build := range map[string]func() error{
		"flux":   func() error { _, err := fluxkustomize.SecureBuild(dir, dir, false); return err },
		"shared": func() error { _, err := kustomizeBuild(dir, dir, files); return err },
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() {
						if err := build(); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}

// writeGenerated writes the kustomization.yaml Flux's generator makes of
// ks into dir.
func writeGenerated(dir string, ks *kustomizev1.Kustomization) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		return err
	}
	_, err = fluxkustomize.NewGenerator(dir, unstructured.Unstructured{Object: obj}).WriteFile(dir)
	return err
}
