package convert

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/capwright/capwright/internal/providerrelease"
)

// Cluster is a cluster `capwright convert --from-cluster` reads: the
// operator's provider CRs and clusterctl's inventory, each provider of
// which comes with its Deployments and the components file of its
// release, to name the variables it was installed with. Secrets and
// ConfigMaps are never read.
type Cluster struct {
	Client dynamic.Interface
	// Source names the cluster in documents and errors ("cluster NAME").
	Source string
	// Fetcher builds the fetcher of the installed releases, once, when
	// clusterctl's inventory has a provider.
	Fetcher func() (*providerrelease.Fetcher, error)
	// Fetched, when set, is told of each components file fetched.
	Fetched func(p InventoryProvider, f providerrelease.File)
}

// Read reads the documents to convert; found is false when the cluster
// has neither the operator's CRDs nor clusterctl's inventory.
func (c Cluster) Read(ctx context.Context) (docs []Document, found bool, _ error) {
	docs, operatorFound, err := c.operatorProviders(ctx)
	if err != nil {
		return nil, false, err
	}
	inventory, inventoryFound, err := c.inventory(ctx)
	if err != nil {
		return nil, false, err
	}
	if !operatorFound && !inventoryFound {
		return nil, false, nil
	}
	var fetcher *providerrelease.Fetcher
	for i := range inventory {
		p := &inventory[i]
		if p.Deployments, err = c.providerDeployments(ctx, p.Namespace, p.Name); err != nil {
			return nil, true, fmt.Errorf("%s: %w", c.Source, err)
		}
		if fetcher == nil {
			if fetcher, err = c.Fetcher(); err != nil {
				return nil, true, err
			}
		}
		p.Components, p.ComponentsError = c.installedComponents(ctx, fetcher, p)
		docs = append(docs, InventoryDocument(c.Source, *p))
	}
	return docs, true, nil
}

// InventoryResource is clusterctl's inventory.
var InventoryResource = schema.GroupVersionResource{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Resource: "providers"}

// OperatorResources are the operator's provider kinds and their
// resources, in v1alpha2.
func OperatorResources() map[string]schema.GroupVersionResource {
	out := map[string]schema.GroupVersionResource{}
	for _, kind := range OperatorKinds() {
		out[kind] = schema.GroupVersionResource{Group: OperatorGroup, Version: "v1alpha2", Resource: strings.ToLower(kind) + "s"}
	}
	return out
}

// inventory lists clusterctl's inventory in every namespace; found is
// false when its CRD is not installed.
func (c Cluster) inventory(ctx context.Context) (_ []InventoryProvider, found bool, _ error) {
	list, err := c.Client.Resource(InventoryResource).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("%s: listing clusterctl's inventory (%s): %w", c.Source, InventoryResource.GroupResource(), err)
	}
	var out []InventoryProvider
	for _, item := range list.Items {
		p := InventoryProvider{Namespace: item.GetNamespace(), Name: item.GetName(), Labels: item.GetLabels()}
		p.ProviderName, _, _ = unstructured.NestedString(item.Object, "providerName")
		p.Type, _, _ = unstructured.NestedString(item.Object, "type")
		p.Version, _, _ = unstructured.NestedString(item.Object, "version")
		out = append(out, p)
	}
	return out, true, nil
}

// providerDeployments lists the Deployments clusterctl labelled as the
// provider's in its namespace.
func (c Cluster) providerDeployments(ctx context.Context, namespace, label string) ([]appsv1.Deployment, error) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	list, err := c.Client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: clusterctl.LabelProvider + "=" + label})
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

// installedComponents fetches the components file of the installed
// version from the release Capwright's catalog names (clusterctl's list).
// A provider the catalog lacks, or a release that cannot be read, gives a
// reason instead, which the report carries.
func (c Cluster) installedComponents(ctx context.Context, f *providerrelease.Fetcher, p *InventoryProvider) ([]byte, string) {
	providerType := ProviderTypeOfKind(p.Type)
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
	if c.Fetched != nil {
		c.Fetched(*p, r.Components)
	}
	return r.Components.Data, ""
}

// operatorProviders lists every operator provider CR in every namespace,
// in v1alpha2; found is false when none of the operator's CRDs is
// installed.
func (c Cluster) operatorProviders(ctx context.Context) (_ []Document, found bool, _ error) {
	var docs []Document
	resources := OperatorResources()
	for _, kind := range OperatorKinds() {
		gvr := resources[kind]
		list, err := c.Client.Resource(gvr).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // this kind's CRD is not installed
		case err != nil:
			return nil, false, fmt.Errorf("%s: listing %s: %w", c.Source, gvr.GroupResource(), err)
		}
		found = true
		for _, item := range list.Items {
			data, err := json.Marshal(item.Object)
			if err != nil {
				return nil, false, err
			}
			d, err := Decode(fmt.Sprintf("%s, %s %s/%s", c.Source, kind, item.GetNamespace(), item.GetName()), data)
			if err != nil {
				return nil, false, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, found, nil
}
