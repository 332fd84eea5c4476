package providerrelease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// checkMetadata parses metadata.yaml and returns the contract of version's
// release series; errors name the URL the file came from.
func checkMetadata(f File, version string) (string, error) {
	metadata, err := clusterctl.ParseMetadata(f.Data)
	if err != nil {
		return "", &Error{Reason: ReasonInvalidRelease, URL: f.URL, Err: err,
			Problem: fromURL(err, MetadataFile, f.URL),
			Hint:    "the URL must point to a clusterctl provider release, whose metadata.yaml maps release series to Cluster API contracts"}
	}
	contract, err := metadata.ContractFor(version)
	if err != nil {
		return "", &Error{Reason: ReasonInvalidRelease, URL: f.URL, Err: err,
			Problem: fromURL(err, MetadataFile, f.URL),
			Hint:    "a release's metadata.yaml must list its own release series: check that the URL and the version belong to the same project, or ask the project to fix its release"}
	}
	return contract, nil
}

// fromURL rewrites "metadata.yaml …" messages of internal/clusterctl to
// name the URL the file came from.
func fromURL(err error, file, url string) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, file); ok {
		return file + " from " + url + rest
	}
	return file + " from " + url + ": " + msg
}

// Check checks the release as `capwright publish` checks local files
// (artifact.Release.Check: provider type and name, version, file set,
// metadata.yaml covering the version, components Flux can substitute) for
// the provider name, and returns the version's contract. Errors are *Error
// with ReasonInvalidRelease, naming the file's URL; the *artifact.ReleaseError
// is in the chain.
func (r *Release) Check(name string) (string, error) {
	contract, err := checkMetadata(r.Metadata, r.Version)
	if err != nil {
		return "", err
	}
	if _, err := clusterctl.Decode(r.Components.Data); err != nil {
		return "", &Error{Reason: ReasonInvalidRelease, URL: r.Components.URL, Err: err,
			Problem: fmt.Sprintf("%s from %s: %v", r.Components.Name, r.Components.URL, err),
			Hint:    "the components file must be the Kubernetes YAML clusterctl installs: check the URL"}
	}
	rel := r.Artifact(name, "", nil)
	if _, err := rel.Check(); err != nil {
		url := r.Components.URL
		var releaseErr *artifact.ReleaseError
		if errors.As(err, &releaseErr) && strings.HasPrefix(releaseErr.Problem, MetadataFile) {
			url = r.Metadata.URL
		}
		return "", &Error{Reason: ReasonInvalidRelease, URL: url, Err: err,
			Problem: fmt.Sprintf("the release at %s", url), Hint: err.Error()}
	}
	return contract, nil
}

// Artifact is the release to publish as the provider artifact of
// internal/artifact: the same files, named as the contract names them.
// source is the annotation org.opencontainers.image.source; "" leaves it
// out (Source.ProjectURL is the usual value).
func (r *Release) Artifact(name, source string, annotations map[string]string) *artifact.Release {
	return &artifact.Release{
		Type: r.Type, Name: name, Version: r.Version, Source: source,
		Annotations: annotations, Files: r.Files(),
	}
}
