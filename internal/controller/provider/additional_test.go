package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// TestNudgeWaiting: a Kustomization waiting for a dependency that is Ready
// now is asked to retry once per transition of the dependency, and never
// while the dependency is not Ready.
func TestNudgeWaiting(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kustomizev1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "core-uid"}}
	controller := true
	readyAt := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	dep := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api", Generation: 2},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: 2, LastTransitionTime: readyAt}}}}
	waiting := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-additional", Generation: 1,
		OwnerReferences: []metav1.OwnerReference{{UID: "core-uid", Controller: &controller, Name: "cluster-api", Kind: "CoreProvider", APIVersion: "providers.capwright.io/v1alpha1"}}},
		Spec: kustomizev1.KustomizationSpec{DependsOn: []kustomizev1.DependencyReference{{Name: "core-cluster-api"}}},
		Status: kustomizev1.KustomizationStatus{Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DependencyNotReady", Message: "Dependencies do not meet ready condition, retrying in 30s", ObservedGeneration: 1}}}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dep, waiting).WithStatusSubresource(dep, waiting).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c ctrl.WithWatch, o ctrl.Object, p ctrl.Patch, opts ...ctrl.PatchOption) error {
			patches++
			return c.Patch(ctx, o, p, opts...)
		}}).Build()
	r := &Reconciler{Client: c, Kind: Kinds()[0]}
	key := ctrl.ObjectKeyFromObject(waiting)

	if err := r.nudgeWaiting(ctx, p, key); err != nil || patches != 0 {
		t.Fatalf("dependency not Ready: %v, %d patches, want none", err, patches)
	}
	dep.Status.Conditions[0].Status, dep.Status.Conditions[0].Reason = metav1.ConditionTrue, "ReconciliationSucceeded"
	if err := c.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.nudgeWaiting(ctx, p, key); err != nil {
			t.Fatal(err)
		}
	}
	var got kustomizev1.Kustomization
	if err := c.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if patches != 1 || got.Annotations["reconcile.fluxcd.io/requestedAt"] != "2026-11-23T12:00:00Z" {
		t.Errorf("after the dependency turned Ready: %d patches, requestedAt %q; want one request naming the transition", patches, got.Annotations["reconcile.fluxcd.io/requestedAt"])
	}
	other := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "someone-else"}}
	got.Annotations = nil
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	patches = 0
	if err := r.nudgeWaiting(ctx, other, key); err != nil || patches != 0 {
		t.Errorf("a Kustomization the provider does not control was nudged: %v, %d patches", err, patches)
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
