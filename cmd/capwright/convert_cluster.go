package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capwright/capwright/internal/convert"
)

// clusterOptions are the flags that pick a cluster, as kubectl's.
type clusterOptions struct {
	kubeconfig string
	context    string
}

func (o *clusterOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file for --from-cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context for --from-cluster (default: the current context)")
}

// dynamicClient connects to the cluster the flags name.
func (o *clusterOptions) dynamicClient() (dynamic.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	raw, err := config.RawConfig()
	if err != nil {
		return nil, "", usageErrorf("reading the kubeconfig: %v", err)
	}
	name := o.context
	if name == "" {
		name = raw.CurrentContext
	}
	rest, err := config.ClientConfig()
	if err != nil {
		return nil, "", usageErrorf("kubeconfig context %q: %v", name, err)
	}
	rest.UserAgent = "capwright/" + version
	client, err := dynamic.NewForConfig(rest)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to context %q: %w", name, err)
	}
	return client, name, nil
}

// operatorResources are the operator's provider kinds and their
// resources.
var operatorResources = func() map[string]schema.GroupVersionResource {
	out := map[string]schema.GroupVersionResource{}
	for _, kind := range convert.OperatorKinds() {
		out[kind] = schema.GroupVersionResource{Group: convert.OperatorGroup, Version: "v1alpha2", Resource: strings.ToLower(kind) + "s"}
	}
	return out
}()

func readClusterDocuments(ctx context.Context, o *clusterOptions) ([]convert.Document, error) {
	client, name, err := o.dynamicClient()
	if err != nil {
		return nil, err
	}
	return listOperatorProviders(ctx, client, "cluster "+name)
}

// listOperatorProviders lists every operator provider CR in every
// namespace, in v1alpha2. Secrets and ConfigMaps are never read.
func listOperatorProviders(ctx context.Context, client dynamic.Interface, source string) ([]convert.Document, error) {
	var docs []convert.Document
	found := 0
	for _, kind := range convert.OperatorKinds() {
		gvr := operatorResources[kind]
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // this kind's CRD is not installed
		case err != nil:
			return nil, fmt.Errorf("%s: listing %s: %w", source, gvr.GroupResource(), err)
		}
		found++
		for _, item := range list.Items {
			data, err := json.Marshal(item.Object)
			if err != nil {
				return nil, err
			}
			d, err := convert.Decode(fmt.Sprintf("%s, %s %s/%s", source, kind, item.GetNamespace(), item.GetName()), data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	if found == 0 {
		return nil, usageErrorf("%s has no cluster-api-operator CRDs (%s): nothing to convert", source, convert.OperatorAPIVersion)
	}
	return docs, nil
}
