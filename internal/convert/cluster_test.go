package convert

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestListOperatorProvidersFromCluster: --from-cluster lists each kind in
// v1alpha2 and converts what it finds (a fake dynamic client: the listing,
// not the cluster, is under test; kinds whose CRD is missing are skipped).
func TestListOperatorProvidersFromCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	listKinds := map[schema.GroupVersionResource]string{}
	for kind, gvr := range OperatorResources() {
		listKinds[gvr] = kind + "List"
	}
	core := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": OperatorAPIVersion, "kind": "CoreProvider",
		"metadata": map[string]any{"name": "cluster-api", "namespace": "capi-system", "uid": "1234", "finalizers": []any{"provider.cluster.x-k8s.io"}},
		"spec":     map[string]any{"version": "v1.13.6"},
		"status":   map[string]any{"installedVersion": "v1.13.6", "contract": "v1beta2"},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds, core)
	docs, found, err := Cluster{Client: client, Source: "cluster test"}.operatorProviders(context.Background())
	if err != nil || !found {
		t.Fatal(found, err)
	}
	out := Convert(docs)
	if len(out) != 1 || out[0].Object == nil || out[0].Object.GetSpec().Version != "v1.13.6" || NeedAttention(out[0].Findings) {
		t.Fatalf("want the CoreProvider at v1.13.6 without attention, got %+v", out)
	}
	if !strings.Contains(out[0].Document.Source, "cluster test, CoreProvider capi-system/cluster-api") {
		t.Errorf("source: %s", out[0].Document.Source)
	}
}

// TestListInventoryFromCluster: --from-cluster reads clusterctl's
// inventory and each provider's Deployments by clusterctl's label, in its
// namespace only (a fake dynamic client: the listing is under test).
func TestListInventoryFromCluster(t *testing.T) {
	listKinds := map[schema.GroupVersionResource]string{
		InventoryResource: "ProviderList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
	}
	entry := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": InventoryAPIVersion, "kind": "Provider",
		"metadata":     map[string]any{"name": "bootstrap-kubeadm", "namespace": "capi-kubeadm-bootstrap-system", "labels": map[string]any{"cluster.x-k8s.io/provider": "bootstrap-kubeadm"}},
		"providerName": "kubeadm", "type": "BootstrapProvider", "version": "v1.13.6",
	}}
	deployment := func(namespace, name, label string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"cluster.x-k8s.io/provider": label}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "manager", "image": "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.13.6"},
			}}}},
		}}
	}
	cluster := Cluster{Source: "cluster test"}
	cluster.Client = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, entry,
		deployment("capi-kubeadm-bootstrap-system", "capi-kubeadm-bootstrap-controller-manager", "bootstrap-kubeadm"),
		deployment("capi-kubeadm-bootstrap-system", "unrelated", "infrastructure-other"),
		deployment("elsewhere", "capi-kubeadm-bootstrap-controller-manager", "bootstrap-kubeadm"))
	ctx := context.Background()
	list, found, err := cluster.inventory(ctx)
	if err != nil || !found || len(list) != 1 {
		t.Fatalf("found %v, %d entries, %v", found, len(list), err)
	}
	p := list[0]
	if p.ProviderName != "kubeadm" || p.Type != "BootstrapProvider" || p.Version != "v1.13.6" || p.Name != "bootstrap-kubeadm" {
		t.Errorf("read %+v", p)
	}
	ds, err := cluster.providerDeployments(ctx, p.Namespace, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Name != "capi-kubeadm-bootstrap-controller-manager" || ds[0].Namespace != p.Namespace || ds[0].Spec.Template.Spec.Containers[0].Name != "manager" {
		t.Errorf("Deployments %+v, want the one labelled bootstrap-kubeadm in its namespace", ds)
	}

	// Without the CRD the API server answers 404.
	empty := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	empty.PrependReactor("list", "providers", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(InventoryResource.GroupResource(), "")
	})
	if _, found, err := (Cluster{Client: empty, Source: "cluster test"}).inventory(ctx); found || err != nil {
		t.Errorf("without the CRD: found %v, %v; want not found, no error", found, err)
	}
}
