package fluxobjects

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInventory: a Kustomization's and a HelmRelease's entries read the
// same way, each naming the object Flux applied; IDs are written as Flux
// writes them (a colon in a name transcoded).
func TestInventory(t *testing.T) {
	ks := &kustomizev1.Kustomization{Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		{ID: "capi-system_capi-controller-manager_apps_Deployment", Version: "v1"},
		{ID: "_clusters.cluster.x-k8s.io_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
	}}}}
	hr := &helmv2.HelmRelease{Status: helmv2.HelmReleaseStatus{Inventory: &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{
		{ID: "capi-system_capi-controller-manager_apps_Deployment", Version: "v1"},
	}}}}
	want := Applied{Namespace: "capi-system", Name: "capi-controller-manager", GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
	for _, o := range []struct {
		name    string
		entries []Entry
	}{{"Kustomization", Inventory(ks)}, {"HelmRelease", Inventory(hr)}} {
		if len(o.entries) == 0 {
			t.Fatalf("%s: no entries", o.name)
		}
		got, err := o.entries[0].Object()
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", o.name, got, err, want)
		}
	}
	if crd, err := Inventory(ks)[1].Object(); err != nil || crd.Namespace != "" || crd.Name != "clusters.cluster.x-k8s.io" || crd.Kind != "CustomResourceDefinition" {
		t.Errorf("cluster-scoped entry: %+v, %v", crd, err)
	}
	if _, err := (Entry{ID: "not-an-id"}).Object(); err == nil {
		t.Error("a malformed ID was read")
	}
	if got := Inventory(&sourcev1.OCIRepository{}); got != nil {
		t.Errorf("a source's inventory: %v", got)
	}
	if got := ID("", "system:capwright", "rbac.authorization.k8s.io", "ClusterRole"); got != "_system__capwright_rbac.authorization.k8s.io_ClusterRole" {
		t.Errorf("ID = %s", got)
	}
	if got := ID("capi-system", "capi-controller-manager", "apps", "Deployment"); got != Inventory(ks)[0].ID {
		t.Errorf("ID = %s, want %s", got, Inventory(ks)[0].ID)
	}
}

// TestKinds: sources before appliers, and every kind knows its own.
func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		items, err := Items(k.NewList())
		if err != nil || len(items) != 0 {
			t.Errorf("%s: %v, %v", k.Kind, items, err)
		}
	}
	if KindOrder(&sourcev1.OCIRepository{}) > KindOrder(&kustomizev1.Kustomization{}) || KindOrder(&helmv2.HelmRelease{}) != 3 {
		t.Error("sources do not come first")
	}
}
