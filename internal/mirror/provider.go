package mirror

import (
	"context"
	"fmt"
	"strings"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
)

// ProviderRelease is a provider release fetched from where its project
// publishes it (a GitHub release, say) and checked as `capwright publish`
// checks one: what `capwright mirror --provider` pushes to the target as
// a provider artifact, with the container images its components run.
type ProviderRelease struct {
	// Type and Name are the provider's (infrastructure, aws); Version is
	// the release, and the artifact's tag.
	Type, Name, Version string
	// URL is where the components file was fetched from, for the output.
	URL string
	// Files are the release files, named as the artifact names them:
	// metadata.yaml and {type}-components.yaml.
	Files map[string][]byte
	// Annotations are the artifact manifest's
	// (artifact.Release.ManifestAnnotations).
	Annotations map[string]string
}

// Provider is TYPE/NAME, the FROM of a mirror rule for the provider.
func (p ProviderRelease) Provider() string { return p.Type + "/" + p.Name }

// String is TYPE/NAME:VERSION, as `capwright mirror --provider` takes it.
func (p ProviderRelease) String() string { return p.Provider() + ":" + p.Version }

// reference is the OCI reference the provider's artifact stands for: for
// the providers Cluster API is to publish as provider artifacts, the OCI
// repository of the proposal (catalog.Repository), so that the artifact
// lands where mirroring that repository would land it and the mirror rule
// for that repository sends the provider to it; for every other provider
// only the path manifests/{type}-{name}, without a host: the mirror rules
// then send the provider there by TYPE/NAME.
func (p ProviderRelease) reference() artifact.Reference {
	ref := artifact.Reference{Repository: "manifests/" + p.Type + "-" + p.Name, Tag: p.Version}
	if repo, ok := catalog.Repository(p.Type, p.Name); ok {
		ref.Host, ref.Repository, _ = strings.Cut(repo, "/")
	}
	return ref
}

// RunWithReleases mirrors provider releases and artifact references in
// one run. Each release is packed into a provider artifact as `capwright
// publish` packs it (the same files and annotations give the same digest)
// and pushed to the target with the images its components run, as Run
// mirrors a provider artifact: images and their referrers first, the
// artifact's tag last. Its Result names the provider (Result.Provider),
// and Summary.Rules sends the provider to its copy. Releases fail
// independently of each other and of the references, as references do.
func RunWithReleases(ctx context.Context, refs []artifact.Reference, releases []ProviderRelease, opts Options) (*Summary, error) {
	r, summary := newRunner(opts)
	defer r.close()

	plans := append(r.planAll(ctx, dedupe(refs)), r.planReleases(ctx, releases)...)
	if err := checkConflicts(r.opts.Target, plans); err != nil {
		return summary.of(plans), err
	}
	r.mirrorAll(ctx, plans)
	return summary.of(plans), summary.err()
}

// planReleases stages each release as a provider artifact in memory and
// lists the images its components run.
func (r *runner) planReleases(ctx context.Context, releases []ProviderRelease) []*plan {
	plans := make([]*plan, 0, len(releases))
	seen := map[string]bool{}
	for _, rel := range releases {
		if seen[rel.String()] {
			continue
		}
		seen[rel.String()] = true
		src := rel.reference()
		p := &plan{result: Result{
			Source:   src,
			Target:   r.targetOf(src),
			Kind:     KindProvider,
			Provider: rel.Provider(),
			Release:  rel.URL,
		}}
		r.rec.emit(Event{Kind: RefStarted, Ref: p.name()})
		if err := r.readProviderRelease(ctx, p, rel); err != nil {
			p.result.Err = err
			r.rec.emit(Event{Kind: RefFailed, Ref: p.name(), ArtifactKind: KindProvider, Err: err})
		} else {
			r.rec.emit(Event{Kind: RefPlanned, Ref: p.name(), Images: len(p.images), ArtifactKind: KindProvider})
		}
		plans = append(plans, p)
	}
	return plans
}

// readProviderRelease stages a release's artifact and lists its images.
func (r *runner) readProviderRelease(ctx context.Context, p *plan, rel ProviderRelease) error {
	components, ok := rel.Files[clusterctl.ComponentsFile(rel.Type)]
	if !ok {
		return fmt.Errorf("%s: the release holds no %s", rel, clusterctl.ComponentsFile(rel.Type))
	}
	staged, desc, err := artifact.Stage(ctx, rel.Files, rel.Annotations, rel.Version)
	if err != nil {
		return fmt.Errorf("%s: packing its artifact: %w", rel, err)
	}
	p.staged, p.desc = staged, desc
	p.result.SourceDigest = desc.Digest.String()
	written, err := clusterctl.Images(components)
	if err != nil {
		return &artifact.LayoutError{Ref: rel.String(), Problem: fmt.Sprintf("its container images cannot be listed: %v", err)}
	}
	return r.addImages(p, written)
}
