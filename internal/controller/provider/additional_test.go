package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/fluxartifact"
)

// TestStoreAdditionalArtifact: the artifact is stored and the
// ExternalArtifact's status points at it; storing the same artifact again
// writes nothing; a manager restart with empty storage writes the file
// again, not the status.
func TestStoreAdditionalArtifact(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{sourcev1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-additional", Generation: 1}}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ea).WithStatusSubresource(ea).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c ctrl.Client, sub string, o ctrl.Object, p ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}}).Build()
	root := filepath.Join(t.TempDir(), "storage")
	storage, err := fluxartifact.New(root, "http://127.0.0.1:9090")
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Kind: Kinds()[0], Artifacts: storage}
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{AdditionalManifests: &v1alpha1.ConfigMapReference{Name: "extra"}}}
	packed := []byte("packed manifests")

	if err := r.storeAdditionalArtifact(ctx, p, ea, packed); err != nil {
		t.Fatal(err)
	}
	var got sourcev1.ExternalArtifact
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(ea), &got); err != nil {
		t.Fatal(err)
	}
	art := got.Status.Artifact
	if art == nil || art.Digest != fluxartifact.Digest(packed) || !storage.Exists(*art) || writes != 1 {
		t.Fatalf("after the first store: artifact %+v, %d status writes", art, writes)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Status != metav1.ConditionTrue || got.Status.Conditions[0].ObservedGeneration != 1 {
		t.Errorf("ExternalArtifact conditions = %+v, want Ready True for generation 1", got.Status.Conditions)
	}

	if err := r.storeAdditionalArtifact(ctx, p, ea, packed); err != nil || writes != 1 {
		t.Fatalf("storing the same artifact again: %v, %d status writes, want 1", err, writes)
	}

	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := r.storeAdditionalArtifact(ctx, p, ea, packed); err != nil {
		t.Fatal(err)
	}
	if !storage.Exists(*art) || writes != 1 {
		t.Errorf("after losing the storage: file restored %v, %d status writes, want 1", storage.Exists(*art), writes)
	}
}
