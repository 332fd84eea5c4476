package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// CAPIRepository is where the plane's registry holds Cluster API provider
// artifacts, in the upstream layout {registry}/cluster-api/manifests.
const CAPIRepository = "cluster-api/manifests"

// PublishFiles pushes files as a provider artifact in the upstream layout
// (one tar+gzip layer, the provider annotations) to the plane's plain-HTTP
// registry and returns the oci:// URL of its repository.
func PublishFiles(ctx context.Context, host, providerType, name, version string, files map[string][]byte) (string, error) {
	return PublishFilesWith(ctx, host, artifact.Access{PlainHTTP: true}, providerType, name, version, files)
}

// PublishFilesWith is PublishFiles to a registry reached with access (a
// private registry's CA and credentials).
func PublishFilesWith(ctx context.Context, host string, access artifact.Access, providerType, name, version string, files map[string][]byte) (string, error) {
	ref := artifact.Reference{Host: host, Repository: CAPIRepository + "/" + providerType + "-" + name, Tag: version}
	annotations := artifact.ProviderAnnotations(providerType, name, version, "https://github.com/kubernetes-sigs/cluster-api")
	if _, err := artifact.Push(ctx, ref, files, annotations, access); err != nil {
		return "", fmt.Errorf("publishing %s-%s %s: %w", providerType, name, version, err)
	}
	return ref.URL(), nil
}

// PublishCAPIProvider publishes a real Cluster API release's provider from
// the fixtures `make tools` renders (fixtureDir = bin/fixtures/capi/<version>).
func PublishCAPIProvider(ctx context.Context, host, fixtureDir, providerType, name, version string) (string, error) {
	return PublishCAPIProviderWith(ctx, host, artifact.Access{PlainHTTP: true}, fixtureDir, providerType, name, version)
}

// PublishCAPIProviderWith is PublishCAPIProvider to a registry reached
// with access (a private registry's CA and credentials).
func PublishCAPIProviderWith(ctx context.Context, host string, access artifact.Access, fixtureDir, providerType, name, version string) (string, error) {
	files := map[string][]byte{}
	for _, f := range []string{clusterctl.ComponentsFile(providerType), "metadata.yaml"} {
		data, err := os.ReadFile(filepath.Join(fixtureDir, f))
		if err != nil {
			return "", fmt.Errorf("reading fixture (run make tools): %w", err)
		}
		files[f] = data
	}
	return PublishFilesWith(ctx, host, access, providerType, name, version, files)
}
