package mirror

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/capwright/capwright/internal/artifact"
)

// dockerHub is the registry of image names without a host, under the name
// the docker CLI, containerd and oras-go use for it.
const dockerHub = "docker.io"

// imageRef is a container image reference of a components file.
type imageRef struct {
	// Written is the reference as the components write it.
	Written string
	// Name is Written without tag and digest: what the controller's mirror
	// rules rewrite.
	Name string
	// Source is the normalized reference: docker.io/library/nginx:latest for
	// nginx.
	Source artifact.Reference
}

// parseImage normalizes a container image reference the way container
// runtimes read it: a first path element without a dot or a colon, other
// than localhost, is a Docker Hub repository (nginx is
// docker.io/library/nginx); no tag and no digest means :latest.
func parseImage(written string) (imageRef, error) {
	img := imageRef{Written: written}
	rest := written
	if before, digest, ok := strings.Cut(rest, "@"); ok {
		rest, img.Source.Digest = before, digest
	}
	if slash := strings.LastIndex(rest, "/"); strings.Contains(rest[slash+1:], ":") {
		colon := strings.LastIndex(rest, ":")
		rest, img.Source.Tag = rest[:colon], rest[colon+1:]
	}
	img.Name = rest
	first, path, hasPath := strings.Cut(rest, "/")
	if isHost := hasPath && looksLikeHost(first); !isHost {
		first, path = dockerHub, rest
	}
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = dockerHub
	}
	if first == dockerHub && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	img.Source.Host, img.Source.Repository = first, path
	if img.Source.Tag == "" && img.Source.Digest == "" {
		img.Source.Tag = "latest"
	}
	if err := validate(img.Source); err != nil {
		return imageRef{}, fmt.Errorf("image %q: %w", written, err)
	}
	return img, nil
}

// looksLikeHost tells a registry host from the first path element of a
// Docker Hub repository, as container runtimes do: it has a dot or a port,
// or is localhost.
func looksLikeHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost"
}

// validate checks a reference with oras-go's rules (distribution spec).
func validate(r artifact.Reference) error {
	ref := registry.Reference{Registry: r.Host, Repository: r.Repository}
	if err := ref.ValidateRegistry(); err != nil {
		return err
	}
	if err := ref.ValidateRepository(); err != nil {
		return err
	}
	if r.Tag != "" {
		ref.Reference = r.Tag
		if err := ref.ValidateReferenceAsTag(); err != nil {
			return err
		}
	}
	if r.Digest != "" {
		ref.Reference = r.Digest
		if err := ref.ValidateReferenceAsDigest(); err != nil {
			return err
		}
	}
	return nil
}
