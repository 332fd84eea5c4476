// Package release builds and publishes a Capwright release without a
// container runtime, the way ko does: the manager image (an OCI index of
// static binaries on no base image), the manifests artifact Flux consumes,
// the Helm chart, and the CLI binaries. Every artifact is reproducible:
// the same commit and version give the same digests, because every
// timestamp is the commit's.
//
// Everything is built and staged in memory first; then it is pushed by
// digest and tagged with the version only once all of it is in the
// registry, or written into one OCI image layout.
package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"oras.land/oras-go/v2/content/memory"

	"github.com/capwright/capwright/internal/artifact"
)

// Release builds the image, the manifests artifact, the chart and the CLI
// of o.Version and pushes them to o.Registry (or writes them to o.Output).
// It refuses a working tree with uncommitted changes unless o.AllowDirty.
func Release(ctx context.Context, o Options) (*Result, error) {
	if err := checkVersion(o.Version); err != nil {
		return nil, err
	}
	r, err := prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	if !r.opts.AllowDirty {
		// A release's own output in the tree (OUTPUT=dist) is no change.
		if err := checkClean(ctx, r.opts.RepoRoot, r.opts.Output, r.opts.CLIDir, r.opts.FilesDir); err != nil {
			return nil, err
		}
	}
	defer r.cleanup()

	image, err := r.stageImage(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := r.stageManifests(ctx, image.artifact)
	if err != nil {
		return nil, err
	}
	chart, err := r.stageChart(ctx, image.artifact)
	if err != nil {
		return nil, err
	}
	cli, err := buildCLI(ctx, r.opts, r.cliPlatforms)
	if err != nil {
		return nil, err
	}
	att, err := r.writeAttestations(ctx, image, chart, manifests, cli)
	if err != nil {
		return nil, err
	}
	var sign func(context.Context) error
	var publicKey string
	if r.opts.Signing != nil {
		if publicKey, err = r.opts.Signing.writePublicKey(ctx, filepath.Join(r.opts.FilesDir, PublicKeyFile)); err != nil {
			return nil, err
		}
		sign = func(ctx context.Context) error { return r.signAll(ctx, att, image, chart, manifests) }
	}
	if err := r.publish(ctx, sign, image, chart, manifests); err != nil {
		return nil, err
	}
	res := &Result{Image: image.artifact, Chart: chart.artifact, Manifests: manifests.artifact, CLI: cli,
		Provenance: att.provenance, Signed: r.opts.Signing != nil, PublicKey: publicKey}
	for _, f := range append(att.managerSBOMs, att.cliSBOMs...) {
		res.SBOMs = append(res.SBOMs, f.path)
	}
	return res, nil
}

// Image builds only the manager image and pushes it (or writes it to
// o.Output). o.Version may be any valid tag (make image defaults to git
// describe), and a working tree with changes is accepted: it is for
// development images.
func Image(ctx context.Context, o Options) (*Result, error) {
	if err := checkTag(o.Version); err != nil {
		return nil, err
	}
	r, err := prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	image, err := r.stageImage(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.publish(ctx, nil, image); err != nil {
		return nil, err
	}
	return &Result{Image: image.artifact}, nil
}

// run is one release in progress: checked options, the commit, and the
// artifacts staged in memory.
type run struct {
	opts           Options
	target         target
	commit         commit
	imagePlatforms []platform
	cliPlatforms   []platform
	store          *memory.Store
	tmp            string
	// managers are the manager binaries, in imagePlatforms' order.
	managers []string
	// platformDigests are the image's per-platform manifests, in
	// imagePlatforms' order.
	platformDigests []string
}

// prepare checks what can be checked before building and reads the
// commit.
func prepare(ctx context.Context, o Options) (*run, error) {
	t, err := parseRegistry(o.Registry)
	if err != nil {
		return nil, err
	}
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &run{opts: o, target: t, store: memory.New()}
	if r.imagePlatforms, err = parsePlatforms(o.ImagePlatforms); err != nil {
		return nil, fmt.Errorf("image platforms: %w", err)
	}
	if r.cliPlatforms, err = parsePlatforms(o.CLIPlatforms); err != nil {
		return nil, fmt.Errorf("CLI platforms: %w", err)
	}
	if o.Output != "" {
		if err := checkOutputDir(o.Output); err != nil {
			return nil, err
		}
		if o.Signing != nil {
			return nil, errors.New("signing needs the registry the release goes to (cosign writes signatures there): release to REGISTRY with COSIGN_KEY, then copy it with capwright mirror, which carries the signatures; OUTPUT releases are unsigned")
		}
	}
	if o.Signing != nil {
		if err := o.Signing.check(); err != nil {
			return nil, err
		}
	}
	if r.commit, err = headCommit(ctx, o.RepoRoot); err != nil {
		return nil, err
	}
	if r.tmp, err = os.MkdirTemp("", "capwright-release-"); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *run) cleanup() { os.RemoveAll(r.tmp) }

func (r *run) artifact(repository, digest string) Artifact {
	return Artifact{Repository: r.target.repository(repository), Tag: r.opts.Version, Digest: digest}
}

func (r *run) stageImage(ctx context.Context) (*staged, error) {
	binaries, err := buildManagers(ctx, r.opts, r.imagePlatforms, r.tmp)
	if err != nil {
		return nil, err
	}
	idx, err := imageIndex(r.opts.Version, r.commit, r.imagePlatforms, binaries)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	r.managers, r.platformDigests = binaries, nil
	for _, d := range im.Manifests {
		r.platformDigests = append(r.platformDigests, d.Digest.String())
	}
	desc, raw, err := stageIndex(ctx, r.store, idx)
	if err != nil {
		return nil, fmt.Errorf("staging the manager image: %w", err)
	}
	a := r.artifact(imageRepository, desc.Digest.String())
	r.opts.logf("image %s", a.Ref())
	return &staged{what: "image", path: r.target.path(imageRepository), artifact: a, desc: desc, manifest: raw}, nil
}

func (r *run) stageManifests(ctx context.Context, image Artifact) (*staged, error) {
	r.opts.logf("building the manifests in %s", r.opts.ManifestsDir)
	manifests, err := buildManifests(r.opts.ManifestsDir, image.Repository, image.Digest)
	if err != nil {
		return nil, err
	}
	img, err := manifestsArtifact(manifests, fluxAnnotations(r.opts.Version, r.commit))
	if err != nil {
		return nil, fmt.Errorf("packing the manifests: %w", err)
	}
	desc, raw, err := stageImage(ctx, r.store, img)
	if err != nil {
		return nil, fmt.Errorf("staging the manifests: %w", err)
	}
	a := r.artifact(manifestsRepository, desc.Digest.String())
	r.opts.logf("manifests %s", a.Ref())
	return &staged{what: "manifests", path: r.target.path(manifestsRepository), artifact: a, desc: desc, manifest: raw}, nil
}

func (r *run) stageChart(ctx context.Context, image Artifact) (*staged, error) {
	r.opts.logf("packaging the chart in %s", r.opts.ChartDir)
	files, err := readChart(r.opts.ChartDir)
	if err != nil {
		return nil, err
	}
	if err := stampChart(files, r.opts.Version, image.Repository, image.Digest); err != nil {
		return nil, fmt.Errorf("chart %s: %w", r.opts.ChartDir, err)
	}
	chart, err := packChart(files, r.commit.time)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", r.opts.ChartDir, err)
	}
	if _, err := pushBytes(ctx, r.store, artifact.HelmConfigMediaType, chart.config); err != nil {
		return nil, err
	}
	if _, err := pushBytes(ctx, r.store, artifact.HelmChartMediaType, chart.layer); err != nil {
		return nil, err
	}
	desc, err := pushBytes(ctx, r.store, "application/vnd.oci.image.manifest.v1+json", chart.manifest)
	if err != nil {
		return nil, err
	}
	a := r.artifact(chartRepository, desc.Digest.String())
	r.opts.logf("chart %s", a.Ref())
	return &staged{what: "chart", path: r.target.path(chartRepository), artifact: a, desc: desc, manifest: chart.manifest}, nil
}

// publish pushes the staged artifacts, runs beforeTag, and tags them; or
// writes them to the layout.
func (r *run) publish(ctx context.Context, beforeTag func(context.Context) error, arts ...*staged) error {
	if r.opts.Output != "" {
		r.opts.logf("writing the OCI layout %s", r.opts.Output)
		return writeLayout(ctx, r.opts.Output, r.store, arts)
	}
	return pushAll(ctx, r.opts, r.target, r.store, arts, beforeTag)
}
