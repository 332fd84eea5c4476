package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
)

// What cluster-api-operator v0.29.0 does with spec.fetchConfig.oci, as read
// in its source (internal/controller/oci_source.go,
// internal/controller/manifests_downloader.go):
//   - parseOCISource strips an "http://" prefix and then talks plain HTTP
//     (repo.PlainHTTP); a ":tag" after the repository overrides the tag,
//     which is otherwise spec.version. The URL returned here carries no tag,
//     so changing spec.version is all an upgrade takes.
//   - CopyOCIStore runs oras.Copy from the repository into a mapStore that
//     keeps a blob only when its org.opencontainers.image.title annotation
//     names an expected file; blobs are kept as they are, never unpacked. So
//     the artifact is one layer per file (as oras push and the operator's own
//     `publish` plugin command make it), not a tarball.
//   - Expected names (NewMapStore, GetMetadata, GetComponents): metadata is
//     "<type>-<name>-<version>-metadata.yaml", else "metadata.yaml";
//     components are "<type>-<name>-<version>-components.yaml", else
//     "<type>-components.yaml", else "components.yaml", where <type> is the
//     provider kind's GetType(): core, bootstrap, control-plane,
//     infrastructure, ipam, addon and "runtimeextension" (no dash, unlike
//     clusterctl's runtime-extension).
//   - DownloadManifests stores the two files in a ConfigMap named
//     <type>-<name>-<version> in the provider's namespace, gzipped when they
//     exceed 1 MiB together (core-components.yaml of v1.14 does).

// Media types of the operator's own publisher (cmd/plugin/cmd/publish.go);
// the operator ignores them and goes by the title annotations.
const (
	capiOperatorFileMediaType = "application/vnd.test.file"
	capiOperatorArtifactType  = "application/vnd.acme.config"
)

// capiOperatorKind maps Capwright's provider types to the operator's kinds
// (operator.cluster.x-k8s.io) and their GetType() values.
var capiOperatorKind = map[string]struct{ kind, typ string }{
	v1alpha1.CoreProviderType:             {"CoreProvider", "core"},
	v1alpha1.BootstrapProviderType:        {"BootstrapProvider", "bootstrap"},
	v1alpha1.ControlPlaneProviderType:     {"ControlPlaneProvider", "control-plane"},
	v1alpha1.InfrastructureProviderType:   {"InfrastructureProvider", "infrastructure"},
	v1alpha1.IPAMProviderType:             {"IPAMProvider", "ipam"},
	v1alpha1.RuntimeExtensionProviderType: {"RuntimeExtensionProvider", "runtimeextension"},
	v1alpha1.AddonProviderType:            {"AddonProvider", "addon"},
}

// ClusterAPIOperatorAPIVersion is the API version of the provider kinds that
// cluster-api-operator v0.29.0 serves (its only one).
const ClusterAPIOperatorAPIVersion = "operator.cluster.x-k8s.io/v1alpha2"

// capiOperatorRepository is where PublishForClusterAPIOperator pushes, apart
// from the artifacts Capwright consumes (CAPIRepository).
const capiOperatorRepository = "capi-operator"

// PublishForClusterAPIOperator pushes a provider release (releaseDir holds
// metadata.yaml and <type>-components.yaml, as for PublishCAPIProvider) to
// the plane's plain-HTTP registry at registryHost, tagged with version, in
// the layout cluster-api-operator v0.29.0 reads, and returns the value for
// the provider's spec.fetchConfig.oci: http://<host>/capi-operator/<type>-<name>.
func PublishForClusterAPIOperator(ctx context.Context, registryHost, releaseDir, providerType, name, version string) (string, error) {
	k, ok := capiOperatorKind[providerType]
	if !ok {
		return "", fmt.Errorf("unknown provider type %q", providerType)
	}
	// Release file -> title the operator looks for.
	files := []struct{ file, title string }{
		{"metadata.yaml", "metadata.yaml"},
		{clusterctl.ComponentsFile(providerType), k.typ + "-components.yaml"},
	}
	store := memory.New()
	var layers []ocispec.Descriptor
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(releaseDir, f.file))
		if err != nil {
			return "", fmt.Errorf("reading the release of %s-%s %s (run make fixtures): %w", providerType, name, version, err)
		}
		desc := content.NewDescriptorFromBytes(capiOperatorFileMediaType, data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: f.title}
		if err := store.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			return "", err
		}
		layers = append(layers, desc)
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, capiOperatorArtifactType, oras.PackManifestOptions{Layers: layers})
	if err != nil {
		return "", err
	}
	if err := store.Tag(ctx, manifest, version); err != nil {
		return "", err
	}
	repository := registryHost + "/" + capiOperatorRepository + "/" + providerType + "-" + name
	repo, err := remote.NewRepository(repository)
	if err != nil {
		return "", err
	}
	repo.PlainHTTP = true
	if _, err := oras.Copy(ctx, store, version, repo, version, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("pushing %s:%s: %w", repository, version, err)
	}
	return "http://" + repository, nil
}

// ClusterAPIOperatorProvider is cluster-api-operator's provider object for a
// provider of providerType (Capwright's names: core, bootstrap,
// control-plane, …) at version, fetched from fetchOCI (see
// PublishForClusterAPIOperator). The operator requires the core provider to
// be named cluster-api, and installs into the object's namespace. It returns
// nil for an unknown type.
func ClusterAPIOperatorProvider(providerType, namespace, name, version, fetchOCI string) *unstructured.Unstructured {
	k, ok := capiOperatorKind[providerType]
	if !ok {
		return nil
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterAPIOperatorAPIVersion,
		"kind":       k.kind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"version":     version,
			"fetchConfig": map[string]any{"oci": fetchOCI},
		},
	}}
}

// ClusterAPIOperatorProviderReady reports whether cluster-api-operator
// v0.29.0 reports the provider installed at version and Ready, and
// describes its state otherwise.
//
// How the operator reports it (internal/controller): the provider
// reconciler runs its phases and, only when all of them succeed, sets
// status.installedVersion (ReportStatus) and status.observedGeneration (the
// patch helper's WithStatusObservedGeneration); a failing phase sets
// ProviderInstalled, ProviderUpgraded or PreflightCheckPassed False with
// the error. The Ready condition comes from a separate health-check
// controller (healthcheck/healthcheck_controller.go) that copies the
// provider Deployment's Available condition once ProviderInstalled is True.
// Ready says nothing of the version: an upgrade deletes and recreates the
// Deployment, and the health check turns Ready False when it sees the new
// one without an Available condition, normally before installedVersion
// moves (seen on the plane), but nothing orders the two controllers. Ready's
// own observedGeneration is not required either: the health check leaves
// the condition alone while its status matches the Deployment's, so after a
// spec change that keeps the Deployment Available it would never advance.
func ClusterAPIOperatorProviderReady(u *unstructured.Unstructured, version string) (bool, string) {
	installed, _, _ := unstructured.NestedString(u.Object, "status", "installedVersion")
	observed, hasObserved, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	ready := false
	var summary []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		s := typ + "=" + status
		if status != "True" {
			if reason, _ := m["reason"].(string); reason != "" {
				s += " (" + reason
				if msg, _ := m["message"].(string); msg != "" {
					s += ": " + msg
				}
				s += ")"
			}
		}
		summary = append(summary, s)
		if typ == "Ready" && status == "True" {
			ready = true
		}
	}
	state := fmt.Sprintf("%s %s/%s: installedVersion %q (want %q), generation %d, observedGeneration %d, conditions [%s]",
		u.GetKind(), u.GetNamespace(), u.GetName(), installed, version, u.GetGeneration(), observed, strings.Join(summary, "; "))
	if hasObserved && observed != u.GetGeneration() {
		return false, state
	}
	return ready && installed == version, state
}
