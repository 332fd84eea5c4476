package main

import (
	"context"
	"fmt"
	"io"

	"github.com/capwright/capwright/internal/convert"
	"github.com/capwright/capwright/internal/providerrelease"
)

// readClusterDocuments reads what --from-cluster converts
// (convert.Cluster), fetching the releases with the release flags and
// saying on errOut what it fetched from where.
func readClusterDocuments(ctx context.Context, o *convertOptions, errOut io.Writer) ([]convert.Document, error) {
	client, name, err := o.cluster.dynamicClient()
	if err != nil {
		return nil, err
	}
	c := convert.Cluster{
		Client:  client,
		Source:  "cluster " + name,
		Fetcher: func() (*providerrelease.Fetcher, error) { return o.release.fetcher(0) },
		Fetched: func(p convert.InventoryProvider, f providerrelease.File) {
			from := f.URL
			if f.FetchedFrom != f.URL {
				from += " (via " + f.FetchedFrom + ")"
			}
			fmt.Fprintf(errOut, "Fetched %s %s of %s/%s from %s\n", f.Name, p.Version, p.Namespace, p.Name, from)
		},
	}
	docs, found, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, usageErrorf("%s has neither cluster-api-operator's CRDs (%s) nor clusterctl's inventory (providers.clusterctl.cluster.x-k8s.io): nothing to convert", c.Source, convert.OperatorAPIVersion)
	}
	return docs, nil
}
