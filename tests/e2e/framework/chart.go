package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/capwright/capwright/internal/artifact"
)

// ProviderChartDeployment is the one template of the test provider charts:
// the controller Deployment helmtest-controller-manager in the release's
// namespace, with .Values.replicas replicas.
const ProviderChartDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: helmtest-controller-manager
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: helmtest}
  template:
    metadata:
      labels: {app: helmtest}
    spec:
      containers:
      - name: manager
        image: registry.example.com/helmtest/manager:v0.1.0
`

// PushChart packages a Helm chart (the given files, relative to the chart
// root; a Chart.yaml is made from name and version unless given) and pushes it to host/repository:version
// over plain HTTP, laid out as `helm push` does. It returns the oci:// URL.
func PushChart(ctx context.Context, host, repository, name, version string, files map[string][]byte) (string, error) {
	return PushChartWith(ctx, host, artifact.Access{PlainHTTP: true}, repository, name, version, files)
}

// PushChartWith is PushChart to a registry reached with access (a private
// registry's CA and credentials).
func PushChartWith(ctx context.Context, host string, access artifact.Access, repository, name, version string, files map[string][]byte) (string, error) {
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ntype: application\n", name, version)
	tarFiles := map[string][]byte{}
	if _, ok := files["Chart.yaml"]; !ok {
		tarFiles[name+"/Chart.yaml"] = []byte(chartYAML)
	}
	for path, data := range files {
		tarFiles[name+"/"+path] = data
	}
	layer, err := TarGz(tarFiles)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(map[string]string{"apiVersion": "v2", "name": name, "version": version, "type": "application"})
	if err != nil {
		return "", err
	}
	store := memory.New()
	layerDesc := content.NewDescriptorFromBytes(artifact.HelmChartMediaType, layer)
	configDesc := content.NewDescriptorFromBytes(artifact.HelmConfigMediaType, config)
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{layerDesc, layer}, {configDesc, config}} {
		if err := store.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return "", err
		}
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{layerDesc}, ConfigDescriptor: &configDesc,
	})
	if err != nil {
		return "", err
	}
	if err := store.Tag(ctx, manifest, version); err != nil {
		return "", err
	}
	repo, release, err := access.Repository(artifact.Reference{Host: host, Repository: repository}, artifact.DefaultMaxArtifactSize)
	if err != nil {
		return "", err
	}
	defer release()
	if _, err := oras.Copy(ctx, store, version, repo, version, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("pushing chart %s/%s:%s: %w", host, repository, version, err)
	}
	return "oci://" + host + "/" + repository, nil
}
