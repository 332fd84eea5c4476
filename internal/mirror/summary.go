package mirror

import "github.com/capwright/capwright/internal/artifact"

// Summary is what a run did.
type Summary struct {
	Target Target
	// Artifacts and Images count references: copied when anything was
	// written for them, skipped when the target held all of it.
	Artifacts, Images Tally
	Manifests         Tally
	Blobs             BlobTally
	// Results has one entry per artifact reference, in the given order.
	Results []Result
}

// Result is one artifact reference, or provider release, of a run.
type Result struct {
	// Source is the reference as given. For a provider release
	// (RunWithReleases) it is the OCI reference the provider's artifact
	// stands for: Cluster API's proposal path,
	// registry.k8s.io/cluster-api/manifests/{type}-{name}, for the
	// providers the catalog knows there; else only the path
	// manifests/{type}-{name}, without a host.
	Source artifact.Reference
	// Provider is TYPE/NAME of a provider release, and Release the URL its
	// components file was fetched from; both "" for a reference.
	Provider, Release string
	// Target is where it went: the target repository with the source's
	// tag, and the digest once copied.
	Target artifact.Reference
	// SourceDigest is the digest the source reference resolved to; Digest
	// is the one at the target, equal unless Repacked.
	SourceDigest, Digest string
	// Repacked says that the artifact was rebuilt in the contract layout,
	// so its digest changed.
	Repacked bool
	// Skipped says that the target held everything already.
	Skipped bool
	// Cached says that the cache's record of an earlier run vouched for
	// the reference (see Cache): its tags were checked, its content not
	// walked. Skipped too.
	Cached bool
	// Kind is what the reference is; "" when it could not be read.
	Kind Kind
	// Images are the container images it runs: those its components, its
	// YAML (a Flux artifact) or its artifacthub.io/images annotation (a
	// Helm chart) name. From an OCI layout, only those the layout holds.
	Images []Image
	// Notes are what to know about a reference mirrored all the same: a
	// chart that lists no images, an image a layout lacks.
	Notes []string
	// Err is why the reference was not mirrored; its tag was not written.
	Err error
}

// Image is a container image of an artifact.
type Image struct {
	// Written is the reference as in the artifact; Name is it without
	// tag and digest, what the controller's mirror rules rewrite.
	Written, Name string
	// Source is Written normalized (docker.io/library/nginx:latest for
	// nginx); Target is where it went.
	Source, Target artifact.Reference
}

// Failed returns the results with an error.
func (s *Summary) Failed() []Result {
	var failed []Result
	for _, r := range s.Results {
		if r.Err != nil {
			failed = append(failed, r)
		}
	}
	return failed
}

// Name is how the output names a result: oci://host/repository:tag for a
// reference, TYPE/NAME:VERSION for a provider release.
func (r Result) Name() string {
	if r.Provider != "" {
		return r.Provider + ":" + r.Source.Tag
	}
	return r.Source.URL() + tagOf(r.Source)
}
