package render

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/sourceignore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capwright/capwright/internal/dryrun"
)

// fluxBuild is what Flux v2.9 would apply for a rendered provider (or
// tenant) over an artifact's files, with Flux's own libraries at the
// versions the controllers are built with:
//
//  1. source-controller extracts the artifact's files and stores only
//     those the OCIRepository's ignore rules let through (storedFiles);
//  2. kustomize-controller builds them as the Kustomization says, with
//     the labels it sets when it applies: dryrun.Build, what the manager
//     dry-runs before an upgrade.
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
	stored := map[string][]byte{}
	for _, name := range storedFiles(t, out, files) {
		stored[name] = files[name]
	}
	builder := fake.NewClientBuilder()
	for _, s := range secrets {
		builder = builder.WithObjects(s)
	}
	built, err := dryrun.Build(context.Background(), builder.Build(), out.Kustomization, stored)
	if err != nil {
		return nil, err
	}
	return built.Objects, nil
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
