package artifact

import (
	"errors"
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"
)

// urlScheme prefixes OCI repository URLs, as in Flux's OCIRepository.
const urlScheme = "oci://"

// Reference points to an artifact: a repository and a tag, a digest or both.
type Reference struct {
	// Host is the registry, with its port if any (localhost:5000).
	Host string
	// Repository is the path inside the registry (capi/manifests/core-cluster-api).
	Repository string
	// Tag is the version tag, e.g. v1.14.2.
	Tag string
	// Digest pins the manifest, e.g. sha256:…. With a tag too, the tag must
	// still resolve to it.
	Digest string
}

// ParseURL parses oci://host[:port]/path[:tag][@digest].
func ParseURL(url string) (Reference, error) {
	rest, ok := strings.CutPrefix(url, urlScheme)
	if !ok {
		return Reference{}, fmt.Errorf("OCI URL %q must start with %s", url, urlScheme)
	}
	var ref Reference
	if before, digest, found := strings.Cut(rest, "@"); found {
		rest, ref.Digest = before, digest
	}
	host, path, found := strings.Cut(rest, "/")
	if !found || host == "" || path == "" {
		return Reference{}, fmt.Errorf("OCI URL %q must be oci://host[:port]/repository[:tag][@digest]", url)
	}
	ref.Host, ref.Repository = host, path
	if slash := strings.LastIndex(path, "/"); strings.Contains(path[slash+1:], ":") {
		colon := strings.LastIndex(path, ":")
		ref.Repository, ref.Tag = path[:colon], path[colon+1:]
	}
	if err := ref.validate(); err != nil {
		return Reference{}, fmt.Errorf("OCI URL %q: %w", url, err)
	}
	return ref, nil
}

// validate checks each part with oras-go's rules (distribution spec names).
func (r Reference) validate() error {
	oras := registry.Reference{Registry: r.Host, Repository: r.Repository}
	if err := oras.ValidateRegistry(); err != nil {
		return err
	}
	if err := oras.ValidateRepository(); err != nil {
		return fmt.Errorf("%w (repositories are lower case: a-z, 0-9, and . _ - / as separators)", err)
	}
	if r.Tag != "" {
		oras.Reference = r.Tag
		if err := oras.ValidateReferenceAsTag(); err != nil {
			return err
		}
	}
	if r.Digest != "" {
		oras.Reference = r.Digest
		if err := oras.ValidateReferenceAsDigest(); err != nil {
			return err
		}
	}
	return nil
}

// URL is oci://host/repository, without tag or digest (the form of
// OCIRepository spec.url and provider spec.source.oci.url).
func (r Reference) URL() string {
	return urlScheme + r.Host + "/" + r.Repository
}

// String is host/repository[:tag][@digest].
func (r Reference) String() string {
	s := r.Host + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// reference is what to ask the registry for: the tag, else the digest.
func (r Reference) reference() (string, error) {
	switch {
	case r.Tag != "":
		return r.Tag, nil
	case r.Digest != "":
		return r.Digest, nil
	}
	return "", errors.New("the reference has neither a tag nor a digest")
}
