package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// sourceURL is where the released code lives (org.opencontainers.image.source).
const sourceURL = "https://github.com/capwright/capwright"

// upstreamImage is the manager image the manifests name; a release pins it
// to the built index by digest.
const upstreamImage = "ghcr.io/capwright/capwright-manager"

// The image runs as this user: the nonroot uid/gid of distroless images,
// which the Deployment's runAsNonRoot accepts.
const imageUser = "65532:65532"

// managerPath is the manager binary in the image, its entrypoint.
const managerPath = "/manager"

// imageAnnotations are the OCI labels of the image config and the
// annotations of each manifest and the index.
func imageAnnotations(version string, c commit) map[string]string {
	return map[string]string{
		ocispec.AnnotationSource:   sourceURL,
		ocispec.AnnotationVersion:  version,
		ocispec.AnnotationRevision: c.hash,
		ocispec.AnnotationCreated:  c.time.Format(time.RFC3339),
		ocispec.AnnotationTitle:    imageRepository,
	}
}

// buildManagers builds ./cmd/manager for each platform into dir and
// returns the binaries' paths in platform order.
func buildManagers(ctx context.Context, o Options, platforms []platform, dir string) ([]string, error) {
	ldflags := "-s -w -buildid= -X main.version=" + o.Version
	paths := make([]string, 0, len(platforms))
	for _, p := range platforms {
		out := filepath.Join(dir, "manager_"+p.os+"_"+p.arch+p.variant)
		o.logf("building ./cmd/manager for %s", p)
		if err := o.build(ctx, buildSpec{dir: o.RepoRoot, pkg: "./cmd/manager", platform: p, ldflags: ldflags, out: out}); err != nil {
			return nil, err
		}
		paths = append(paths, out)
	}
	return paths, nil
}

// imageIndex assembles the manager image the way ko does, without a
// container runtime: per platform one layer holding only the binary at
// /manager, no base image and no shell; the index holds every platform.
// Every timestamp is the commit's, so the same commit and version give the
// same index digest.
func imageIndex(version string, c commit, platforms []platform, binaries []string) (v1.ImageIndex, error) {
	annotations := imageAnnotations(version, c)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	adds := make([]mutate.IndexAddendum, 0, len(platforms))
	for i, p := range platforms {
		img, err := platformImage(p, binaries[i], c.time, annotations)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: p.os, Architecture: p.arch, Variant: p.variant},
			},
		})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, annotations).(v1.ImageIndex), nil
}

func platformImage(p platform, binary string, created time.Time, annotations map[string]string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the manager binary for %s: %w", p, err)
	}
	layerData, err := binaryLayer(data, created)
	if err != nil {
		return nil, fmt.Errorf("packing the manager binary for %s: %w", p, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("manager layer for %s: %w", p, err)
	}
	labels := make(map[string]string, len(annotations))
	for k, v := range annotations {
		labels[k] = v
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.arch,
		OS:           p.os,
		Variant:      p.variant,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{managerPath},
			User:       imageUser,
			WorkingDir: "/",
			Labels:     labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("manager image config for %s: %w", p, err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "capwright release: go build ./cmd/manager",
			Comment:   "the manager binary at " + managerPath,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("manager image for %s: %w", p, err)
	}
	return mutate.Annotations(img, annotations).(v1.Image), nil
}

// binaryLayer is a tar+gzip stream with one entry, the binary at
// /manager: mode 0755, owned by root, modified at the commit time, no user
// names, and a gzip header without name or time.
func binaryLayer(binary []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     managerPath[1:],
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  mtime,
		// USTAR: no PAX records of access or change times.
		Format: tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
