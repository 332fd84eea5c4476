package release

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/artifact"
)

// manifestsFile is the one file of the manifests artifact.
const manifestsFile = "capwright.yaml"

// maxManifestsTree bounds what is read of the manifests' directory.
const maxManifestsTree = 64 << 20

// buildManifests runs kustomize build on an overlay over dir that pins
// the manager image to image (repository@digest). The overlay lives in an
// in-memory file system next to a copy of dir's parent directory (the bases
// dir refers to, e.g. ../crd/bases), so nothing on disk changes.
func buildManifests(dir, imageRepo, imageDigest string) ([]byte, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := copyTree(mem, filepath.Dir(dir), "/src"); err != nil {
		return nil, fmt.Errorf("reading the manifests in %s: %w", dir, err)
	}
	overlay := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{path.Join("../src", filepath.Base(dir))},
		Images:    []kustypes.Image{{Name: upstreamImage, NewName: imageRepo, Digest: imageDigest}},
	}
	data, err := yaml.Marshal(overlay)
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/release/kustomization.yaml", data); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/release")
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	if pinned := imageRepo + "@" + imageDigest; !bytes.Contains(out, []byte(pinned)) {
		return nil, fmt.Errorf("kustomize build %s: no container uses %s, so the release cannot pin it to %s; check the manager Deployment's image", dir, upstreamImage, pinned)
	}
	return out, nil
}

// copyTree copies the regular files under src into dst of mem.
func copyTree(mem filesys.FileSystem, src, dst string) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > maxManifestsTree {
			return fmt.Errorf("%s holds more than %d MiB; point ManifestsDir at a kustomization whose parent holds only manifests", src, maxManifestsTree>>20)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(dst, filepath.ToSlash(rel)), data)
	})
}

// fluxAnnotations are what flux push artifact sets: where the content comes
// from, its revision (<version>@sha1:<commit>, as Flux writes Git
// revisions) and when it was created, here the commit time.
func fluxAnnotations(version string, c commit) map[string]string {
	return map[string]string{
		ocispec.AnnotationSource:   sourceURL,
		ocispec.AnnotationRevision: version + "@sha1:" + c.hash,
		ocispec.AnnotationCreated:  c.time.Format(time.RFC3339),
	}
}

// manifestsArtifact packs the built manifests as flux push artifact does:
// an OCI image manifest with the Flux config media type and one tar+gzip
// layer holding capwright.yaml. Entries have fixed times and modes
// (artifact.PackTarGz), so the same input gives the same digest.
func manifestsArtifact(manifests []byte, annotations map[string]string) (v1.Image, error) {
	layerData, err := artifact.PackTarGz(map[string][]byte{manifestsFile: manifests})
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithMediaType(types.MediaType(artifact.FluxContentMediaType)))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.MediaType(artifact.FluxConfigMediaType))
	img = mutate.Annotations(img, annotations).(v1.Image)
	return mutate.Append(img, mutate.Addendum{Layer: layer})
}
