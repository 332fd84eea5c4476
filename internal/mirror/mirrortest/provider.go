package mirrortest

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// UpstreamImageHost is where Cluster API's release manifests point their
// images.
const UpstreamImageHost = "registry.k8s.io"

// Provider is a provider release: what goes into its artifact.
type Provider struct {
	Type, Name, Version string
	// Files are metadata.yaml and the components file.
	Files map[string][]byte
}

// CAPIProviders returns the Cluster API core, kubeadm bootstrap and kubeadm
// control-plane providers of version, from the real release files in
// bin/fixtures, with their image references moved from registry.k8s.io to
// imageHost (e.g. the host of a test registry).
func CAPIProviders(t testing.TB, version, imageHost string) []Provider {
	t.Helper()
	metadata := clusterctltest.Read(t, version, artifact.MetadataFile)
	var providers []Provider
	for _, p := range []struct{ providerType, name string }{
		{"core", "cluster-api"}, {"bootstrap", "kubeadm"}, {"control-plane", "kubeadm"},
	} {
		file := clusterctl.ComponentsFile(p.providerType)
		components := clusterctltest.Read(t, version, file)
		providers = append(providers, Provider{
			Type:    p.providerType,
			Name:    p.name,
			Version: version,
			Files: map[string][]byte{
				artifact.MetadataFile: metadata,
				file:                  MoveImages(components, UpstreamImageHost, imageHost),
			},
		})
	}
	return providers
}

// MoveImages rewrites image references (and any other text) under
// fromHost/ to toHost/.
func MoveImages(components []byte, fromHost, toHost string) []byte {
	return bytes.ReplaceAll(components, []byte(fromHost+"/"), []byte(toHost+"/"))
}

// Repository is the contract path of the provider's artifact under
// project: {project}/manifests/{type}-{name}.
func (p Provider) Repository(project string) string {
	return project + "/manifests/" + p.Type + "-" + p.Name
}

// Components is the provider's components file.
func (p Provider) Components() []byte {
	return p.Files[clusterctl.ComponentsFile(p.Type)]
}

// Images are the container images the components run.
func (p Provider) Images(t testing.TB) []string {
	t.Helper()
	images, err := clusterctl.Images(p.Components())
	if err != nil {
		t.Fatalf("images of %s-%s: %v", p.Type, p.Name, err)
	}
	return images
}

// PushedProvider is what PushProvider pushed.
type PushedProvider struct {
	Provider Provider
	// Ref is the artifact's repository and tag (the version).
	Ref    artifact.Reference
	Digest string
	// Images by their reference in the components.
	Images map[string]PushedImage
}

// URL is oci://host/repository:tag of the artifact.
func (p PushedProvider) URL() string { return p.Ref.URL() + ":" + p.Ref.Tag }

// PushProvider pushes p as a contract artifact to ref (tag = ref.Tag, else
// p.Version), then an image for each image reference of its components,
// to the registry each names, with the same access. image chooses the
// image for a reference; nil means SmallImage(ImageSeed(reference)).
func PushProvider(t testing.TB, access artifact.Access, ref artifact.Reference, p Provider, image func(reference string) Image) PushedProvider {
	t.Helper()
	if ref.Tag == "" {
		ref.Tag = p.Version
	}
	if image == nil {
		image = func(reference string) Image { return SmallImage(ImageSeed(reference)) }
	}
	annotations := artifact.ProviderAnnotations(p.Type, p.Name, p.Version, "https://github.com/kubernetes-sigs/cluster-api")
	d, err := artifact.Push(context.Background(), ref, p.Files, annotations, access)
	if err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	pushed := PushedProvider{Provider: p, Ref: ref, Digest: d, Images: map[string]PushedImage{}}
	for _, reference := range p.Images(t) {
		pushed.Images[reference] = PushImage(t, access, ImageReference(t, reference), image(reference))
	}
	return pushed
}

// ImageReference splits host/path:tag, the form of the test images (a host
// is required: no Docker Hub short names here).
func ImageReference(t testing.TB, image string) artifact.Reference {
	t.Helper()
	host, rest, ok := strings.Cut(image, "/")
	colon := strings.LastIndex(rest, ":")
	if !ok || colon < 0 || strings.Contains(image, "@") {
		t.Fatalf("image %q: want host/path:tag", image)
	}
	return artifact.Reference{Host: host, Repository: rest[:colon], Tag: rest[colon+1:]}
}

// FileMediaType is the layer media type cluster-api-operator's publish
// gives each file.
const FileMediaType = "application/vnd.test.file"

// PushPerFileArtifact pushes files in the older one-file-per-layer layout,
// as cluster-api-operator's `publish` and `oras push a.yaml b.yaml` do: one
// layer per file of mediaType (FileMediaType when ""), named by its
// org.opencontainers.image.title annotation, in name order, with the empty
// config. It returns the manifest digest.
func PushPerFileArtifact(t testing.TB, access artifact.Access, ref artifact.Reference, files map[string][]byte, mediaType string) string {
	t.Helper()
	if mediaType == "" {
		mediaType = FileMediaType
	}
	ctx := context.Background()
	repo := repository(t, access, ref)
	config := []byte("{}")
	manifest := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: "application/vnd.acme.config",
		Config:       ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: digest.FromBytes(config), Size: int64(len(config))},
	}
	if err := pushBlob(ctx, repo, manifest.Config, config); err != nil {
		t.Fatalf("pushing the config to %s: %v", ref, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		desc := ocispec.Descriptor{
			MediaType:   mediaType,
			Digest:      digest.FromBytes(files[name]),
			Size:        int64(len(files[name])),
			Annotations: map[string]string{ocispec.AnnotationTitle: name},
		}
		if err := pushBlob(ctx, repo, desc, files[name]); err != nil {
			t.Fatalf("pushing %s to %s: %v", name, ref, err)
		}
		manifest.Layers = append(manifest.Layers, desc)
	}
	data := mustJSON(t, manifest)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), ref.Tag); err != nil {
		t.Fatalf("pushing the manifest of %s: %v", ref, err)
	}
	return desc.Digest.String()
}

// SBOMArtifactType is the artifact type of the SBOMs PushReferrer attaches
// by default (SPDX JSON).
const SBOMArtifactType = "application/spdx+json"

// PushReferrer attaches an artifact to subject in ref's repository: an
// image manifest with that subject, artifactType (SBOMArtifactType when
// ""), the empty config and payload as its one layer. It returns the
// referrer's descriptor.
func PushReferrer(t testing.TB, access artifact.Access, ref artifact.Reference, subject ocispec.Descriptor, artifactType string, payload []byte) ocispec.Descriptor {
	t.Helper()
	if artifactType == "" {
		artifactType = SBOMArtifactType
	}
	ctx := context.Background()
	repo := repository(t, access, ref)
	config := []byte("{}")
	configDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: digest.FromBytes(config), Size: int64(len(config))}
	layer := ocispec.Descriptor{MediaType: artifactType, Digest: digest.FromBytes(payload), Size: int64(len(payload))}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{configDesc, config}, {layer, payload}} {
		if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
			t.Fatalf("pushing a referrer blob to %s: %v", ref, err)
		}
	}
	plain := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	manifest := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       configDesc,
		Layers:       []ocispec.Descriptor{layer},
		Subject:      &plain,
		Annotations:  map[string]string{ocispec.AnnotationCreated: "2026-01-01T00:00:00Z"},
	}
	data := mustJSON(t, manifest)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		t.Fatalf("pushing a referrer of %s to %s: %v", subject.Digest, ref, err)
	}
	return desc
}

// Cosign's simple-signing layout: the signed payload as a layer of this
// media type, the signature in its annotation.
const (
	CosignSignatureMediaType  = "application/vnd.dev.cosign.simplesigning.v1+json"
	CosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
)

// PushCosignTag pushes, in ref's repository, a manifest laid out as cosign
// stores signatures (.sig) and attestations (.att) for subject without the
// referrers API — one layer holding payload, no subject field — tagged
// <algorithm>-<hex>.<suffix>. The signature annotation is a fixed value:
// the mirror copies it, nothing here verifies it.
func PushCosignTag(t testing.TB, access artifact.Access, ref artifact.Reference, subject ocispec.Descriptor, suffix string, payload []byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	repo := repository(t, access, ref)
	config := []byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":["` + digest.FromBytes(payload).String() + `"]}}`)
	configDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	layer := ocispec.Descriptor{MediaType: CosignSignatureMediaType, Digest: digest.FromBytes(payload), Size: int64(len(payload)),
		Annotations: map[string]string{CosignSignatureAnnotation: "MEUCIQDtest"}}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{configDesc, config}, {layer, payload}} {
		if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
			t.Fatalf("pushing a cosign blob to %s: %v", ref, err)
		}
	}
	data := mustJSON(t, ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: configDesc, Layers: []ocispec.Descriptor{layer}})
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	tag := artifact.CosignTag(subject.Digest, suffix)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), tag); err != nil {
		t.Fatalf("pushing %s:%s: %v", ref, tag, err)
	}
	return desc
}

// Resolve returns the descriptor ref's tag (else digest) names.
func Resolve(t testing.TB, access artifact.Access, ref artifact.Reference) ocispec.Descriptor {
	t.Helper()
	want := ref.Tag
	if want == "" {
		want = ref.Digest
	}
	desc, err := repository(t, access, ref).Resolve(context.Background(), want)
	if err != nil {
		t.Fatalf("resolving %s: %v", ref, err)
	}
	return desc
}
