package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/plan"
)

// TestStoreAdditionalArtifact: the sync of a provider's additional
// manifests stores the artifact and points the ExternalArtifact's status
// at it; storing the same artifact again writes nothing; a manager restart
// with empty storage writes the file again, not the status.
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
	syncer := apply.Syncer{Client: c, Artifacts: storage}
	packed := []byte("packed manifests")
	// As the plan of a provider with spec.additionalManifests: extra
	// writes it (the sync applies it unchanged here).
	want := &sourcev1.ExternalArtifact{TypeMeta: metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-additional"}}
	store := func() error {
		_, err := syncer.Sync(ctx, plan.Desired{Writes: []plan.Write{{Object: want.DeepCopy(),
			Artifact: &plan.Artifact{Data: packed, Of: "ConfigMap capi-system/extra"}}}})
		return err
	}

	if err := store(); err != nil {
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
	} else if msg, wantMsg := got.Status.Conditions[0].Message, "stored revision "+art.Revision+" of ConfigMap capi-system/extra"; msg != wantMsg {
		t.Errorf("ExternalArtifact Ready message = %q, want %q", msg, wantMsg)
	}

	if err := store(); err != nil || writes != 1 {
		t.Fatalf("storing the same artifact again: %v, %d status writes, want 1", err, writes)
	}

	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := store(); err != nil {
		t.Fatal(err)
	}
	if !storage.Exists(*art) || writes != 1 {
		t.Errorf("after losing the storage: file restored %v, %d status writes, want 1", storage.Exists(*art), writes)
	}
}

// TestInstalledKindsAreClusterAPIKinds: only a provider's CRDs in the
// Cluster API groups can hold its deletion up (the manager may list no
// other group; CAPZ, for one, ships Azure Service Operator CRDs).
func TestInstalledKindsAreClusterAPIKinds(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kustomizev1.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	crd := func(group, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1"}, {Name: "v1", Storage: true}}}}
	}
	controller := true
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capz-system", Name: "infrastructure-azure",
		OwnerReferences: []metav1.OwnerReference{{UID: "azure-uid", Controller: &controller, Name: "azure", Kind: "InfrastructureProvider", APIVersion: "providers.capwright.io/v1alpha1"}}},
		Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
			{ID: "_azureclusters.infrastructure.cluster.x-k8s.io_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
			{ID: "_resourcegroups.resources.azure.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
			{ID: "capz-system_capz-controller-manager_apps_Deployment", Version: "v1"},
		}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ks,
		crd("infrastructure.cluster.x-k8s.io", "azureclusters", "AzureCluster"), crd("resources.azure.com", "resourcegroups", "ResourceGroup")).Build()
	r := &Reconciler{Client: c, Reader: c, Kind: Kinds()[3]}
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capz-system", Name: "azure", UID: "azure-uid"}}
	kinds, err := r.installedKinds(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 1 || kinds[0].Kind != "AzureCluster" || kinds[0].Version != "v1" {
		t.Errorf("installed kinds = %v, want only AzureCluster (storage version v1)", kinds)
	}
}
