package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/convert"
	"github.com/capwright/capwright/internal/providerrelease"
)

// operatorResources are the operator's provider kinds and their
// resources.
var operatorResources = func() map[string]schema.GroupVersionResource {
	out := map[string]schema.GroupVersionResource{}
	for _, kind := range convert.OperatorKinds() {
		out[kind] = schema.GroupVersionResource{Group: convert.OperatorGroup, Version: "v1alpha2", Resource: strings.ToLower(kind) + "s"}
	}
	return out
}()

// readClusterDocuments reads what --from-cluster converts: the operator's
// provider CRs and clusterctl's inventory, each provider of which comes
// with its Deployments and the components file of its release (fetched
// with the release flags), to name the variables it was installed with.
func readClusterDocuments(ctx context.Context, o *convertOptions, errOut io.Writer) ([]convert.Document, error) {
	client, name, err := o.cluster.dynamicClient()
	if err != nil {
		return nil, err
	}
	source := "cluster " + name
	docs, operatorFound, err := listOperatorProviders(ctx, client, source)
	if err != nil {
		return nil, err
	}
	inventory, inventoryFound, err := listInventory(ctx, client, source)
	if err != nil {
		return nil, err
	}
	if !operatorFound && !inventoryFound {
		return nil, usageErrorf("%s has neither cluster-api-operator's CRDs (%s) nor clusterctl's inventory (providers.clusterctl.cluster.x-k8s.io): nothing to convert", source, convert.OperatorAPIVersion)
	}
	var fetcher *providerrelease.Fetcher
	for i := range inventory {
		p := &inventory[i]
		if p.Deployments, err = listProviderDeployments(ctx, client, p.Namespace, p.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if fetcher == nil {
			if fetcher, err = o.release.fetcher(0); err != nil {
				return nil, err
			}
		}
		p.Components, p.ComponentsError = fetchInstalledComponents(ctx, fetcher, p, errOut)
		docs = append(docs, convert.InventoryDocument(source, *p))
	}
	return docs, nil
}

// inventoryResource is clusterctl's inventory.
var inventoryResource = schema.GroupVersionResource{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Resource: "providers"}

// listInventory lists clusterctl's inventory in every namespace; found is
// false when its CRD is not installed.
func listInventory(ctx context.Context, client dynamic.Interface, source string) (_ []convert.InventoryProvider, found bool, _ error) {
	list, err := client.Resource(inventoryResource).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("%s: listing clusterctl's inventory (%s): %w", source, inventoryResource.GroupResource(), err)
	}
	var out []convert.InventoryProvider
	for _, item := range list.Items {
		p := convert.InventoryProvider{Namespace: item.GetNamespace(), Name: item.GetName(), Labels: item.GetLabels()}
		p.ProviderName, _, _ = unstructured.NestedString(item.Object, "providerName")
		p.Type, _, _ = unstructured.NestedString(item.Object, "type")
		p.Version, _, _ = unstructured.NestedString(item.Object, "version")
		out = append(out, p)
	}
	return out, true, nil
}

// listProviderDeployments lists the Deployments clusterctl labelled as the
// provider's in its namespace.
func listProviderDeployments(ctx context.Context, client dynamic.Interface, namespace, label string) ([]appsv1.Deployment, error) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	list, err := client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: clusterctl.LabelProvider + "=" + label})
	if err != nil {
		return nil, fmt.Errorf("listing the Deployments of provider %s in %s: %w", label, namespace, err)
	}
	out := make([]appsv1.Deployment, 0, len(list.Items))
	for _, item := range list.Items {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &d); err != nil {
			return nil, fmt.Errorf("decoding Deployment %s/%s: %w", item.GetNamespace(), item.GetName(), err)
		}
		out = append(out, d)
	}
	return out, nil
}

// fetchInstalledComponents fetches the components file of the installed
// version from the release Capwright's catalog names (clusterctl's list),
// through the release flags (--release-mirror for a mirror). A provider
// the catalog lacks, or a release that cannot be read, gives a reason
// instead, which the report carries.
func fetchInstalledComponents(ctx context.Context, f *providerrelease.Fetcher, p *convert.InventoryProvider, errOut io.Writer) ([]byte, string) {
	providerType := convert.ProviderTypeOfKind(p.Type)
	url, ok := catalog.ReleaseURL(providerType, p.ProviderName)
	if !ok || p.Version == "" {
		return nil, "" // reported by the conversion
	}
	src, err := providerrelease.ParseURL(url)
	if err != nil {
		return nil, err.Error()
	}
	r, err := f.Fetch(ctx, src, p.Version, providerType)
	if err != nil {
		return nil, err.Error()
	}
	from := r.Components.URL
	if r.Components.FetchedFrom != r.Components.URL {
		from += " (via " + r.Components.FetchedFrom + ")"
	}
	fmt.Fprintf(errOut, "Fetched %s %s of %s/%s from %s\n", r.Components.Name, p.Version, p.Namespace, p.Name, from)
	return r.Components.Data, ""
}

// listOperatorProviders lists every operator provider CR in every
// namespace, in v1alpha2; found is false when none of the operator's CRDs
// is installed. Secrets and ConfigMaps are never read.
func listOperatorProviders(ctx context.Context, client dynamic.Interface, source string) (_ []convert.Document, found bool, _ error) {
	var docs []convert.Document
	for _, kind := range convert.OperatorKinds() {
		gvr := operatorResources[kind]
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // this kind's CRD is not installed
		case err != nil:
			return nil, false, fmt.Errorf("%s: listing %s: %w", source, gvr.GroupResource(), err)
		}
		found = true
		for _, item := range list.Items {
			data, err := json.Marshal(item.Object)
			if err != nil {
				return nil, false, err
			}
			d, err := convert.Decode(fmt.Sprintf("%s, %s %s/%s", source, kind, item.GetNamespace(), item.GetName()), data)
			if err != nil {
				return nil, false, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, found, nil
}
