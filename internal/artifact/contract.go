package artifact

// The provider artifact contract: media types and manifest annotations
// (upstream proposal 20260804-provider-manifests-as-oci-artifacts).
const (
	// MediaTypeLayer is the one layer: a tarball of the release files. It is
	// also what Flux's OCIRepository extracts by default.
	MediaTypeLayer = "application/vnd.oci.image.layer.v1.tar+gzip"

	// ArtifactType marks Capwright-packed manifests as provider artifacts
	// (OCI 1.1 artifactType, with the empty config). The contract names no
	// value and readers do not rely on it: the layout and annotations
	// identify an artifact. It follows the vnd.<project>.<thing>.v<n>
	// convention of other artifact types.
	ArtifactType = "application/vnd.cluster-api.provider.v1"

	// AnnotationTitle is "<type>-<name>", e.g. core-cluster-api.
	AnnotationTitle = "org.opencontainers.image.title"
	// AnnotationVersion is the provider version, e.g. v1.14.2.
	AnnotationVersion = "org.opencontainers.image.version"
	// AnnotationSource is where the release comes from (a repository URL).
	AnnotationSource = "org.opencontainers.image.source"
	// AnnotationProviderType is the clusterctl provider type (core, bootstrap…).
	AnnotationProviderType = "cluster-api.sigs.k8s.io/provider-type"
	// AnnotationProviderName is the clusterctl provider name (cluster-api, kubeadm…).
	AnnotationProviderName = "cluster-api.sigs.k8s.io/provider-name"
)

// MetadataFile is the clusterctl metadata file every artifact holds.
const MetadataFile = "metadata.yaml"
