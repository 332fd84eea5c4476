package plane

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// maxImageFile bounds what is read of a file in an image layer.
const maxImageFile = 512 << 20

// ImageFile is one file taken out of a container image.
type ImageFile struct {
	// Path is where the file was written.
	Path string
	// Config is the image configuration of this machine's platform.
	Config ocispec.ImageConfig
	// Platforms are the os/arch pairs of the image index.
	Platforms []string
	// Layers are the layers of this machine's image, and Files the paths
	// in them.
	Layers int
	Files  []string
}

// PullImageFile pulls ref (repository@digest, plain HTTP: the plane's
// registry) and writes file of this machine's platform's image to out,
// executable, as a container runtime would unpack it.
func PullImageFile(ctx context.Context, ref, file, out string) (*ImageFile, error) {
	repoName, dgst, ok := strings.Cut(ref, "@")
	if !ok {
		return nil, fmt.Errorf("image %q is not pinned by digest", ref)
	}
	repo, err := remote.NewRepository(repoName)
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = true
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	d, err := digest.Parse(dgst)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", ref, err)
	}
	indexDesc, err := repo.Resolve(ctx, d.String())
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	if indexDesc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, fmt.Errorf("%s is a %s, want an OCI image index", ref, indexDesc.MediaType)
	}
	var index ocispec.Index
	if err := fetchJSON(ctx, repo, indexDesc, &index); err != nil {
		return nil, fmt.Errorf("image index %s: %w", ref, err)
	}
	result := &ImageFile{Path: out}
	var manifestDesc *ocispec.Descriptor
	for i, m := range index.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("image index %s: manifest %s has no platform", ref, m.Digest)
		}
		result.Platforms = append(result.Platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			manifestDesc = &index.Manifests[i]
		}
	}
	if manifestDesc == nil {
		return nil, fmt.Errorf("image index %s has no linux/%s image", ref, runtime.GOARCH)
	}
	var manifest ocispec.Manifest
	if err := fetchJSON(ctx, repo, *manifestDesc, &manifest); err != nil {
		return nil, fmt.Errorf("image manifest of %s: %w", ref, err)
	}
	var config ocispec.Image
	if err := fetchJSON(ctx, repo, manifest.Config, &config); err != nil {
		return nil, fmt.Errorf("image config of %s: %w", ref, err)
	}
	result.Config, result.Layers = config.Config, len(manifest.Layers)
	found := false
	for _, layer := range manifest.Layers {
		files, ok, err := extractFile(ctx, repo, layer, file, out)
		if err != nil {
			return nil, fmt.Errorf("reading a layer of %s: %w", ref, err)
		}
		result.Files = append(result.Files, files...)
		found = found || ok
	}
	if !found {
		return nil, fmt.Errorf("image %s (linux/%s) has no /%s", ref, runtime.GOARCH, file)
	}
	return result, nil
}

// pullImageFile is PullImageFile for the pod runner, which needs the path
// only.
func (p *Plane) pullImageFile(ctx context.Context, ref, file, out string) (string, error) {
	f, err := PullImageFile(ctx, ref, file, out)
	if err != nil {
		return "", err
	}
	return f.Path, nil
}

// extractFile writes file of a tar+gzip layer to out, and lists the
// layer's paths.
func extractFile(ctx context.Context, repo *remote.Repository, layer ocispec.Descriptor, file, out string) ([]string, bool, error) {
	rc, err := repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(content.NewVerifyReader(rc, layer))
	if err != nil {
		return nil, false, err
	}
	tr := tar.NewReader(zr)
	var names []string
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, found, nil
		}
		if err != nil {
			return nil, false, err
		}
		names = append(names, h.Name)
		if strings.TrimPrefix(h.Name, "/") != file {
			continue
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return nil, false, err
		}
		if _, err := io.Copy(f, io.LimitReader(tr, maxImageFile)); err != nil {
			f.Close()
			return nil, false, err
		}
		if err := f.Close(); err != nil {
			return nil, false, err
		}
		found = true
	}
}

func fetchJSON(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, into any) error {
	if desc.Size > 4<<20 {
		return fmt.Errorf("%s is %d bytes, too large for a manifest or config", desc.Digest, desc.Size)
	}
	data, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	return json.Unmarshal(data, into)
}
