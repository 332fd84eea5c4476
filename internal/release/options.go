package release

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"oras.land/oras-go/v2/registry"
)

// Options say what to release and where to. Release and Image check them
// before anything is built or pushed.
type Options struct {
	// Version is vX.Y.Z[-pre]: the tag of every artifact, the chart's
	// version and appVersion, and what the binaries print.
	Version string
	// Registry is host[:port]/prefix the artifacts are named under, e.g.
	// ghcr.io/capwright.
	Registry string
	// PlainHTTP talks plain HTTP to Registry (a test registry).
	PlainHTTP bool
	// Output, when set, writes one OCI image layout holding every artifact
	// here instead of pushing (and the CLI under Output/cli).
	Output string
	// RepoRoot is the repository: go build runs here and the commit and its
	// time come from its git history.
	RepoRoot string
	// ManifestsDir is the kustomization the manifests artifact is built
	// from; default RepoRoot/manifests/default. Every base it refers to must
	// lie inside its parent directory (manifests/).
	ManifestsDir string
	// ChartDir is the Helm chart; default RepoRoot/charts/capwright.
	ChartDir string
	// ImagePlatforms are os/arch[/variant] of the manager image; default
	// linux/amd64 and linux/arm64.
	ImagePlatforms []string
	// CLIPlatforms are os/arch the CLI is built for; nil means linux and
	// darwin on amd64 and arm64, an empty non-nil slice skips the CLI.
	CLIPlatforms []string
	// CLIDir receives the CLI binaries and SHA256SUMS; default
	// RepoRoot/bin/release/<Version>, or Output/cli with Output.
	CLIDir string
	// AllowDirty releases from a working tree with uncommitted changes.
	AllowDirty bool
	// Signing, when set, signs the image, chart and manifests artifact
	// and attaches the SBOMs and provenance to the image as signed
	// attestations. Release only; it needs a registry (not Output).
	Signing *Signing
	// SBOMGenerator is the cyclonedx-gomod binary (make release:
	// bin/cyclonedx-gomod); empty writes no SBOM.
	SBOMGenerator string
	// FilesDir receives the SBOMs (sbom/) and the provenance statement
	// (provenance.intoto.json); default Output, or RepoRoot/bin/release/<Version>.
	FilesDir string
	// BuilderID names who built the release in its provenance (a CI
	// workflow's URL); default the release command's source.
	BuilderID string
	// InvocationID names this run in the provenance (a CI run's URL).
	InvocationID string
	// Log receives progress lines; nil discards them.
	Log io.Writer

	// build replaces go build in tests (nil: the go command).
	build buildFunc
}

// Artifact is one released artifact, pinned by digest.
type Artifact struct {
	// Repository is host/path.
	Repository string
	// Tag is the version.
	Tag string
	// Digest is the manifest's (the image index's for the image).
	Digest string
}

// Ref is host/path:tag@sha256:….
func (a Artifact) Ref() string {
	return a.Repository + ":" + a.Tag + "@" + a.Digest
}

// TagRef is host/path:tag, the name an OCI layout entry carries.
func (a Artifact) TagRef() string {
	return a.Repository + ":" + a.Tag
}

// Result is what a release produced. Image produces only Image.
type Result struct {
	Image, Chart, Manifests Artifact
	// CLI are the files written: one binary per platform and SHA256SUMS.
	CLI []string
	// SBOMs are the CycloneDX SBOMs written, of the manager (one per image
	// platform) and of the CLI (one per platform).
	SBOMs []string
	// Provenance is the in-toto statement written, "" for Image.
	Provenance string
	// Signed says the artifacts were signed and the image attested.
	Signed bool
	// PublicKey is the cosign.pub written beside the provenance for a
	// release signed with a key, "" otherwise.
	PublicKey string
}

// Repositories of the artifacts under Options.Registry.
const (
	imageRepository     = "capwright-manager"
	manifestsRepository = "capwright-manifests"
	chartRepository     = "charts/capwright"
)

var (
	defaultImagePlatforms = []string{"linux/amd64", "linux/arm64"}
	defaultCLIPlatforms   = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}
)

// target is Options.Registry split into the parts oras-go wants.
type target struct {
	host, prefix string
}

// repository is host/prefix/name.
func (t target) repository(name string) string {
	return t.host + "/" + t.path(name)
}

// path is prefix/name inside the registry.
func (t target) path(name string) string {
	if t.prefix == "" {
		return name
	}
	return t.prefix + "/" + name
}

// checkVersion accepts vX.Y.Z[-pre]: semver with a leading v and no build
// metadata (a "+" is not allowed in an OCI tag).
func checkVersion(v string) error {
	if v == "" {
		return errors.New("no version given: run make release VERSION=v0.1.0 REGISTRY=host/prefix (or set Options.Version)")
	}
	sv, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	if !strings.HasPrefix(v, "v") || err != nil || sv.Metadata() != "" {
		return fmt.Errorf("version %q is not vX.Y.Z[-prerelease] (e.g. v0.1.0 or v0.2.0-rc.1)", v)
	}
	return nil
}

// checkTag accepts any valid OCI tag, for development images (make image
// defaults to git describe).
func checkTag(v string) error {
	if v == "" {
		return errors.New("no version given: run make image VERSION=v0.1.0 (or set Options.Version)")
	}
	ref := registry.Reference{Registry: "localhost", Repository: "x", Reference: v}
	if err := ref.ValidateReferenceAsTag(); err != nil {
		return fmt.Errorf("version %q cannot be an image tag: %w", v, err)
	}
	return nil
}

// parseRegistry splits host[:port]/prefix and checks both with oras-go's
// rules.
func parseRegistry(r string) (target, error) {
	if r == "" {
		return target{}, errors.New("no registry given: run make release VERSION=v0.1.0 REGISTRY=host/prefix (or set Options.Registry)")
	}
	r = strings.TrimPrefix(r, "oci://")
	host, prefix, _ := strings.Cut(strings.TrimSuffix(r, "/"), "/")
	t := target{host: host, prefix: prefix}
	ref := registry.Reference{Registry: host, Repository: t.path(imageRepository)}
	if err := ref.ValidateRegistry(); err != nil {
		return target{}, fmt.Errorf("registry %q: %w", r, err)
	}
	if err := ref.ValidateRepository(); err != nil {
		return target{}, fmt.Errorf("registry %q: the prefix must be lower case a-z, 0-9 and . _ - / as separators: %w", r, err)
	}
	return t, nil
}

// withDefaults fills in what was left empty; RepoRoot becomes absolute.
func (o Options) withDefaults() (Options, error) {
	if o.RepoRoot == "" {
		o.RepoRoot = "."
	}
	root, err := filepath.Abs(o.RepoRoot)
	if err != nil {
		return o, fmt.Errorf("repository root %s: %w", o.RepoRoot, err)
	}
	o.RepoRoot = root
	if o.Output != "" {
		if o.Output, err = filepath.Abs(o.Output); err != nil {
			return o, err
		}
	}
	if o.ManifestsDir == "" {
		o.ManifestsDir = filepath.Join(root, "manifests", "default")
	}
	if o.ChartDir == "" {
		o.ChartDir = filepath.Join(root, "charts", "capwright")
	}
	if len(o.ImagePlatforms) == 0 {
		o.ImagePlatforms = defaultImagePlatforms
	}
	if o.CLIPlatforms == nil {
		o.CLIPlatforms = defaultCLIPlatforms
	}
	if o.CLIDir == "" {
		if o.Output != "" {
			o.CLIDir = filepath.Join(o.Output, "cli")
		} else {
			o.CLIDir = filepath.Join(root, "bin", "release", o.Version)
		}
	}
	if o.CLIDir, err = filepath.Abs(o.CLIDir); err != nil {
		return o, err
	}
	if o.FilesDir == "" {
		o.FilesDir = o.Output
		if o.FilesDir == "" {
			o.FilesDir = filepath.Join(root, "bin", "release", o.Version)
		}
	}
	if o.FilesDir, err = filepath.Abs(o.FilesDir); err != nil {
		return o, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.build == nil {
		o.build = goBuild
	}
	return o, nil
}

func (o Options) logf(format string, args ...any) {
	fmt.Fprintf(o.Log, format+"\n", args...)
}
