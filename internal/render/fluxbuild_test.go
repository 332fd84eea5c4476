package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"github.com/fluxcd/pkg/sourceignore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fluxBuild does in process what Flux v2.9 does with a rendered
// provider-artifact, using Flux's own libraries at the versions the
// controllers are built with:
//
//  1. source-controller extracts the artifact's files and stores only
//     those the OCIRepository's ignore rules let through
//     (pkg/artifact/storage.SourceIgnoreFilter: VCS patterns, then
//     spec.ignore, matched with pkg/sourceignore);
//  2. kustomize-controller generates a kustomization.yaml over them with
//     the Kustomization's targetNamespace, patches and images
//     (pkg/kustomize Generator), builds it (SecureBuild), and substitutes
//     variables (SubstituteVariables, strategy from spec.postBuild), reading
//     substituteFrom Secrets through a client;
//  3. at apply time it adds spec.commonMetadata labels to every object
//     (ssautil.SetCommonMetadata, mirrored here: after the build, so no
//     patch can select by them).
//
// secrets are the Secrets in the Kustomization's namespace.
func fluxBuild(t testing.TB, out *RenderedObjects, files map[string][]byte, secrets ...*corev1.Secret) []*unstructured.Unstructured {
	t.Helper()
	objects, err := tryFluxBuild(t, out, files, secrets...)
	if err != nil {
		t.Fatalf("Flux could not build the rendered provider: %v", err)
	}
	return objects
}

// tryFluxBuild is fluxBuild returning Flux's error.
func tryFluxBuild(t testing.TB, out *RenderedObjects, files map[string][]byte, secrets ...*corev1.Secret) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ks := out.Kustomization
	workDir := t.TempDir()
	for _, name := range storedFiles(t, out, files) {
		if err := os.WriteFile(filepath.Join(workDir, name), files[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		t.Fatal(err)
	}
	u := unstructured.Unstructured{Object: obj}
	dirPath := filepath.Join(workDir, ks.Spec.Path)
	if _, err := fluxkustomize.NewGenerator(workDir, u).WriteFile(dirPath); err != nil {
		return nil, fmt.Errorf("generating kustomization.yaml: %w", err)
	}
	resources, err := fluxkustomize.SecureBuild(workDir, dirPath, false)
	if err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}

	builder := fake.NewClientBuilder()
	for _, s := range secrets {
		builder = builder.WithObjects(s)
	}
	kube := builder.Build()
	always := ks.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	var objects []*unstructured.Unstructured
	for _, res := range resources.Resources() {
		// kustomize-controller's check that every object can be applied.
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		if ks.Spec.PostBuild != nil {
			if _, err := fluxkustomize.SubstituteVariables(context.Background(), kube, u, res,
				fluxkustomize.SubstituteWithAlways(always)); err != nil {
				return nil, fmt.Errorf("post-build substitution of %s/%s: %w", res.GetKind(), res.GetName(), err)
			}
		}
		m, err := res.Map()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{Object: m}
		if cm := ks.Spec.CommonMetadata; cm != nil {
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for k, v := range cm.Labels {
				labels[k] = v
			}
			o.SetLabels(labels)
		}
		objects = append(objects, o)
	}
	return objects, nil
}

// storedFiles are the artifact's files source-controller keeps under the
// OCIRepository's ignore rules, as storage.SourceIgnoreFilter decides.
func storedFiles(t testing.TB, out *RenderedObjects, files map[string][]byte) []string {
	t.Helper()
	root := t.TempDir()
	domain := strings.Split(root, string(filepath.Separator))
	patterns := sourceignore.VCSPatterns(domain)
	if ignore := out.OCIRepository.Spec.Ignore; ignore != nil {
		patterns = append(patterns, sourceignore.ReadPatterns(strings.NewReader(*ignore), domain)...)
	}
	matcher := sourceignore.NewMatcher(patterns)
	var kept []string
	for name := range files {
		if !matcher.Match(strings.Split(filepath.Join(root, name), string(filepath.Separator)), false) {
			kept = append(kept, name)
		}
	}
	return kept
}

// artifactFiles are the files of the real provider artifact: metadata.yaml
// and the components file.
func artifactFiles(t testing.TB, components string) map[string][]byte {
	return map[string][]byte{
		"metadata.yaml": fixture(t, "metadata.yaml"),
		components:      fixture(t, components),
	}
}

// find returns the built object of a kind and name.
func find(t *testing.T, objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the build", kind, name)
	return nil
}

// secret is a Secret of clusterctl variables.
func secret(namespace, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}
