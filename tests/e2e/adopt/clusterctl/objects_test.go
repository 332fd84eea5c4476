package clusterctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// providerLabels are clusterctl's labels of the three providers' objects.
var providerLabels = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm"}

// adoptedKinds are the kinds whose objects must keep their UIDs through
// the adoption: nothing recreated.
var adoptedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "Service"},
}

// providerObjects lists the objects clusterctl labelled as the three
// providers', by "Kind namespace/name", with their UIDs.
func providerObjects(t *testing.T, ctx context.Context, c client.Client) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, gvk := range adoptedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.HasLabels{"cluster.x-k8s.io/provider"}); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			if !slices.Contains(providerLabels, o.GetLabels()["cluster.x-k8s.io/provider"]) {
				continue
			}
			out[objectKey(&o)] = o.GetUID()
		}
	}
	return out
}

func objectKey(o *unstructured.Unstructured) string {
	name := o.GetName()
	if o.GetNamespace() != "" {
		name = o.GetNamespace() + "/" + name
	}
	return o.GetKind() + " " + name
}

// sameUIDs fails unless every object of before still exists with its UID.
func sameUIDs(t *testing.T, before, after map[string]types.UID) {
	t.Helper()
	var bad []string
	for _, key := range slices.Sorted(maps.Keys(before)) {
		switch uid, ok := after[key]; {
		case !ok:
			bad = append(bad, key+": gone")
		case uid != before[key]:
			bad = append(bad, fmt.Sprintf("%s: UID %s, was %s (recreated)", key, uid, before[key]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d objects clusterctl installed were not kept:\n%s", len(bad), len(before), strings.Join(bad, "\n"))
	}
}

// countKinds summarises a snapshot for the log: how many objects of each
// kind were checked.
func countKinds(objs map[string]types.UID) string {
	n := map[string]int{}
	for key := range objs {
		kind, _, _ := strings.Cut(key, " ")
		n[kind]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}

// inventory reads clusterctl's inventory: provider name → version, by
// "namespace/name".
func inventory(t *testing.T, ctx context.Context, c client.Client) map[string]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range list.Items {
		version, _, _ := unstructured.NestedString(o.Object, "version")
		out[o.GetNamespace()+"/"+o.GetName()] = version
	}
	return out
}
