package artifact

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/internal/clusterctl"
)

// annotationUnpack marks an `oras push` layer that is a directory packed as
// tar+gzip rather than one file.
const annotationUnpack = "io.deis.oras.content.unpack"

// fullFileName matches the per-provider file names cluster-api-operator
// accepts besides the plain ones: {type}-{name}-{version}-components.yaml
// and {type}-{name}-{version}-metadata.yaml.
var fullFileName = regexp.MustCompile(`^(.+)-(v[0-9]+\.[0-9]+\.[0-9]+[^/]*)-(components|metadata)\.yaml$`)

// Repacked is an artifact in the older one-file-per-layer layout
// (cluster-api-operator `publish`, `oras push a.yaml b.yaml`) rebuilt in the
// contract layout. Its digest necessarily differs from the source's.
type Repacked struct {
	Ref Reference
	// SourceDigest is the manifest digest of the artifact as published.
	SourceDigest string
	// Type, Name and Version of the provider, inferred from the file names,
	// the repository name, the annotations and the tag.
	Type, Name, Version string
	// Files and Annotations of the contract artifact; Pack turns them into
	// the layer and manifest.
	Files       map[string][]byte
	Annotations map[string]string
}

// Repack reads an artifact in the one-file-per-layer layout, each layer one
// file named by its org.opencontainers.image.title annotation, and returns
// it in the contract layout: metadata.yaml and {type}-components.yaml at
// the root (renamed from components.yaml or {type}-{name}-{version}-… when
// needed), with the contract annotations. The provider type comes from the
// components file name, else the repository's last path element
// ({type}-{name}); the name from the annotations, the file names or that
// element; the version from the tag, else the annotations. Every layer read
// is bounded by the Fetcher's limit, and so is their total. Errors are
// *LayoutError for anything else than this layout (including unsafe file
// names and directories), *TooLargeError, *AuthError, *NotFoundError.
func (f *Fetcher) Repack(ctx context.Context, ref Reference, access Access) (*Repacked, error) {
	limit := f.limit()
	repo, release, desc, err := f.open(ctx, ref, access, "repack")
	if err != nil {
		return nil, err
	}
	defer release()
	data, err := fetchBounded(ctx, repo.Manifests(), ref, "manifest", desc, limit)
	if err != nil {
		return nil, err
	}
	manifest, err := perFileManifest(ref, desc, data)
	if err != nil {
		return nil, err
	}
	// Refuse before reading anything: each layer and their sum are bounded.
	var total int64
	for _, layer := range manifest.Layers {
		name := layer.Annotations[ocispec.AnnotationTitle]
		if layer.Size > limit {
			return nil, &TooLargeError{Ref: ref.String(), What: "layer " + name, Size: layer.Size, Limit: limit}
		}
		if total += layer.Size; total > limit {
			return nil, &TooLargeError{Ref: ref.String(), What: "sum of the layers", Size: total, Limit: limit}
		}
	}
	files := map[string][]byte{}
	for _, layer := range manifest.Layers {
		name := layer.Annotations[ocispec.AnnotationTitle]
		content, err := fetchBounded(ctx, repo.Blobs(), ref, "layer "+name, layer, limit)
		if err != nil {
			return nil, err
		}
		files[name] = content
	}
	annotations := manifest.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	return repackFiles(ref, desc.Digest.String(), files, annotations)
}

// perFileManifest checks that a manifest has the one-file-per-layer layout:
// an image manifest whose layers each carry a safe, distinct file name.
func perFileManifest(ref Reference, desc ocispec.Descriptor, data []byte) (*ocispec.Manifest, error) {
	layoutErr := func(format string, args ...any) error {
		return &LayoutError{Ref: ref.String(), Problem: fmt.Sprintf(format, args...), Hint: "only the one-file-per-layer layout (cluster-api-operator publish, oras push of files) can be repacked"}
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest && desc.MediaType != mediaTypeDockerManifest {
		// checkManifest names indexes, images and charts precisely.
		if _, err := checkManifest(ref, desc, data); err != nil {
			return nil, err
		}
		return nil, layoutErr("its manifest has media type %q", desc.MediaType)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(data, &manifest); err != nil {
		return nil, layoutErr("its manifest is not valid JSON: %v", err)
	}
	if manifest.Config.MediaType == HelmConfigMediaType {
		return nil, &LayoutError{Ref: ref.String(), Problem: "it is a Helm chart", Hint: "install it with spec.source.chart instead of spec.source.oci"}
	}
	if len(manifest.Layers) == 0 {
		return nil, layoutErr("it has no layer")
	}
	seen := map[string]bool{}
	for i, layer := range manifest.Layers {
		name, ok := layer.Annotations[ocispec.AnnotationTitle]
		switch {
		case !ok || name == "":
			return nil, layoutErr("layer %d (%s) has no %s annotation naming its file", i+1, layer.MediaType, ocispec.AnnotationTitle)
		case layer.Annotations[annotationUnpack] == "true":
			return nil, layoutErr("layer %q is a directory packed by oras push; push the files themselves", name)
		case strings.Contains(name, "/"):
			if _, err := cleanEntryName(name); err != nil {
				return nil, layoutErr("%v", err)
			}
			return nil, layoutErr("layer %q names a file in a directory; provider files sit at the root", name)
		case name == "." || name == ".." || strings.Contains(name, `\`):
			return nil, layoutErr("layer %q is not a plain file name", name)
		case seen[name]:
			return nil, layoutErr("two layers are named %q", name)
		}
		seen[name] = true
	}
	return &manifest, nil
}

// repackFiles infers the provider from the files, the reference and the
// annotations, and lays the files out as the contract wants.
func repackFiles(ref Reference, sourceDigest string, files map[string][]byte, annotations map[string]string) (*Repacked, error) {
	layoutErr := func(problem, hint string) error {
		return &LayoutError{Ref: ref.String(), Problem: problem, Hint: hint}
	}
	lastElement := path.Base(ref.Repository)

	// The provider as the full file names ({type}-{name}-{version}-…) tell it.
	type fullName struct{ providerType, name, version string }
	full := map[string]fullName{}
	for file := range files {
		m := fullFileName.FindStringSubmatch(file)
		if m == nil {
			continue
		}
		if t, n, ok := splitTypeName(m[1]); ok {
			full[file] = fullName{t, n, m[2]}
		}
	}

	providerType := annotations[AnnotationProviderType]
	if providerType != "" && !clusterctl.IsProviderType(providerType) {
		return nil, layoutErr(fmt.Sprintf("its annotation %s is %q, not a provider type", AnnotationProviderType, providerType), "")
	}
	if providerType == "" {
		var found []string
		for file := range files {
			if t, ok := strings.CutSuffix(file, "-components.yaml"); ok && clusterctl.IsProviderType(t) {
				found = append(found, t)
			}
		}
		for file, fn := range full {
			if strings.HasSuffix(file, "-components.yaml") && !slices.Contains(found, fn.providerType) {
				found = append(found, fn.providerType)
			}
		}
		if len(found) == 0 {
			if t, _, ok := splitTypeName(lastElement); ok {
				found = append(found, t)
			}
		}
		slices.Sort(found)
		switch len(found) {
		case 0:
			return nil, layoutErr("no file tells the provider type; it holds "+listFiles(files),
				"name the components file {type}-components.yaml (core, bootstrap, control-plane, infrastructure, ipam, runtime-extension, addon)")
		case 1:
			providerType = found[0]
		default:
			return nil, layoutErr(fmt.Sprintf("it holds components of several provider types (%s)", strings.Join(found, ", ")),
				"a provider artifact holds one provider; publish each with `capwright publish`")
		}
	}

	// Pick the components and metadata files, the most specific name first,
	// as cluster-api-operator does.
	var components, metadata string
	var fromFull *fullName
	for _, file := range slices.Sorted(maps.Keys(full)) {
		fn := full[file]
		if fn.providerType != providerType {
			continue
		}
		switch {
		case strings.HasSuffix(file, "-components.yaml") && components == "":
			components, fromFull = file, &fn
		case strings.HasSuffix(file, "-metadata.yaml") && metadata == "":
			metadata = file
		}
	}
	for _, candidate := range []string{clusterctl.ComponentsFile(providerType), "components.yaml"} {
		if _, ok := files[candidate]; ok && components == "" {
			components = candidate
		}
	}
	if _, ok := files[MetadataFile]; ok && metadata == "" {
		metadata = MetadataFile
	}
	var missing []string
	if metadata == "" {
		missing = append(missing, MetadataFile)
	}
	if components == "" {
		missing = append(missing, clusterctl.ComponentsFile(providerType))
	}
	if len(missing) > 0 {
		return nil, layoutErr(fmt.Sprintf("it lacks %s; it holds %s", strings.Join(missing, " and "), listFiles(files)),
			fmt.Sprintf("a %s provider artifact holds %s and %s", providerType, MetadataFile, clusterctl.ComponentsFile(providerType)))
	}

	name := annotations[AnnotationProviderName]
	if name == "" && fromFull != nil {
		name = fromFull.name
	}
	if t, n, ok := splitTypeName(lastElement); name == "" && ok && t == providerType {
		name = n
	}
	if name == "" {
		return nil, layoutErr(fmt.Sprintf("neither its annotations nor its repository name (%s, expected %s-{name}) tell the provider name", lastElement, providerType),
			fmt.Sprintf("mirror it from a repository named %s-{name}, or set the %s annotation", providerType, AnnotationProviderName))
	}
	version := ref.Tag
	if version == "" {
		version = annotations[AnnotationVersion]
	}
	if version == "" && fromFull != nil {
		version = fromFull.version
	}
	if version == "" {
		return nil, layoutErr("its version is unknown", "give the reference with its tag (the version)")
	}

	out := map[string][]byte{
		MetadataFile:                            files[metadata],
		clusterctl.ComponentsFile(providerType): files[components],
	}
	for file, data := range files {
		if _, isFull := full[file]; isFull || file == MetadataFile || file == "components.yaml" || strings.HasSuffix(file, "-components.yaml") {
			continue
		}
		out[file] = data
	}
	return &Repacked{
		Ref:          ref,
		SourceDigest: sourceDigest,
		Type:         providerType,
		Name:         name,
		Version:      version,
		Files:        out,
		Annotations:  ProviderAnnotations(providerType, name, version, annotations[AnnotationSource]),
	}, nil
}

// splitTypeName splits "{type}-{name}" (control-plane-kubeadm) after the
// longest provider type it starts with.
func splitTypeName(s string) (providerType, name string, ok bool) {
	for i := len(s) - 1; i > 0; i-- {
		if s[i] == '-' && i < len(s)-1 && clusterctl.IsProviderType(s[:i]) {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// Repackable reports whether the artifact has the one-file-per-layer
// layout that Fetcher.Repack turns into the contract layout.
func (e *LayoutError) Repackable() bool { return e.Hint == repackHint }
