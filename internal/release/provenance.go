package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// provenanceFile is the in-toto statement written under Options.FilesDir.
const provenanceFile = "provenance.intoto.json"

// SLSA provenance v1 (https://slsa.dev/provenance/v1) in an in-toto v1
// statement: what was built (subjects, by digest), from what (the
// commit, go.sum, the Go toolchain), how (the build command and its
// parameters) and by whom (the builder). It records what the release
// tooling saw; it is only as trustworthy as the machine that ran it.
const (
	inTotoStatementType     = "https://in-toto.io/Statement/v1"
	slsaProvenanceType      = "https://slsa.dev/provenance/v1"
	provenanceBuildType     = sourceURL + "/cmd/release@v1"
	defaultBuilderID        = sourceURL + "/cmd/release"
	gitCommitDigestAlg      = "gitCommit"
	sha256DigestAlg         = "sha256"
	cosignProvenanceType    = "slsaprovenance1"
	cosignCycloneDXType     = "cyclonedx"
	provenanceSourcePrefix  = "git+"
	provenanceToolchainKind = "pkg:golang/toolchain@"
)

type inTotoStatement struct {
	Type          string              `json:"_type"`
	Subject       []resourceDesc      `json:"subject"`
	PredicateType string              `json:"predicateType"`
	Predicate     provenancePredicate `json:"predicate"`
}

type resourceDesc struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest"`
}

type provenancePredicate struct {
	BuildDefinition buildDefinition `json:"buildDefinition"`
	RunDetails      runDetails      `json:"runDetails"`
}

type buildDefinition struct {
	BuildType            string             `json:"buildType"`
	ExternalParameters   externalParameters `json:"externalParameters"`
	InternalParameters   internalParameters `json:"internalParameters"`
	ResolvedDependencies []resourceDesc     `json:"resolvedDependencies"`
}

type externalParameters struct {
	// Source is the repository and commit built, as SLSA names a Git
	// source: git+https://…@<commit>.
	Source   string `json:"source"`
	Version  string `json:"version"`
	Registry string `json:"registry"`
	// Command is how the release was made.
	Command string `json:"command"`
}

type internalParameters struct {
	// GoBuild is the go build of every binary (GOOS/GOARCH per platform).
	GoBuild        string   `json:"goBuild"`
	ImagePlatforms []string `json:"imagePlatforms"`
	CLIPlatforms   []string `json:"cliPlatforms,omitempty"`
	// Dirty is true when the tree held uncommitted changes (ALLOW_DIRTY=1):
	// then the commit does not say everything that was built.
	Dirty bool `json:"dirty"`
}

type runDetails struct {
	Builder  builder     `json:"builder"`
	Metadata runMetadata `json:"metadata"`
}

type builder struct {
	ID string `json:"id"`
}

type runMetadata struct {
	// InvocationID is what the builder calls this run (a CI run's URL).
	InvocationID string `json:"invocationId,omitempty"`
}

// provenanceInput is what a release knows when it writes its provenance.
type provenanceInput struct {
	subjects []resourceDesc
	dirty    bool
}

// provenance is the statement for what a release built.
func (r *run) provenance(ctx context.Context, in provenanceInput) (*inTotoStatement, error) {
	deps := []resourceDesc{{
		URI:    provenanceSourcePrefix + sourceURL + "@" + r.commit.hash,
		Digest: map[string]string{gitCommitDigestAlg: r.commit.hash},
	}}
	// go.sum pins every module built by its hash: its digest stands for
	// all of them (the SBOMs list each module and version).
	if sum, err := fileSHA256(filepath.Join(r.opts.RepoRoot, "go.sum")); err == nil {
		deps = append(deps, resourceDesc{URI: provenanceSourcePrefix + sourceURL + "@" + r.commit.hash + "#go.sum", Digest: map[string]string{sha256DigestAlg: sum}})
	}
	goVersion, err := goToolchain(ctx, r.opts.RepoRoot)
	if err != nil {
		return nil, err
	}
	deps = append(deps, resourceDesc{URI: provenanceToolchainKind + goVersion, Digest: map[string]string{}})
	builderID := r.opts.BuilderID
	if builderID == "" {
		builderID = defaultBuilderID
	}
	var cli []string
	for _, p := range r.cliPlatforms {
		cli = append(cli, p.String())
	}
	var image []string
	for _, p := range r.imagePlatforms {
		image = append(image, p.String())
	}
	return &inTotoStatement{
		Type:          inTotoStatementType,
		Subject:       in.subjects,
		PredicateType: slsaProvenanceType,
		Predicate: provenancePredicate{
			BuildDefinition: buildDefinition{
				BuildType: provenanceBuildType,
				ExternalParameters: externalParameters{
					Source:   provenanceSourcePrefix + sourceURL + "@" + r.commit.hash,
					Version:  r.opts.Version,
					Registry: r.opts.Registry,
					Command:  r.opts.command(),
				},
				InternalParameters: internalParameters{
					GoBuild:        "CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -buildid= -X main.version=" + r.opts.Version + "' ./cmd/manager ./cmd/capwright",
					ImagePlatforms: image,
					CLIPlatforms:   cli,
					Dirty:          in.dirty,
				},
				ResolvedDependencies: deps,
			},
			RunDetails: runDetails{Builder: builder{ID: builderID}, Metadata: runMetadata{InvocationID: r.opts.InvocationID}},
		},
	}, nil
}

// command is the make command that stands for these options.
func (o Options) command() string {
	c := "make release VERSION=" + o.Version + " REGISTRY=" + o.Registry
	if o.Signing != nil && o.Signing.keyless() {
		c += " COSIGN_KEYLESS=1"
	} else if o.Signing != nil {
		c += " COSIGN_KEY=…"
	}
	return c
}

// goToolchain is the version of the go command that builds the release.
func goToolchain(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// writeProvenance writes the statement to FilesDir and, for cosign attest,
// its predicate alone to the release's temporary directory; it returns
// both paths.
func (r *run) writeProvenance(s *inTotoStatement) (statement, predicate string, err error) {
	if err := os.MkdirAll(r.opts.FilesDir, 0o755); err != nil {
		return "", "", fmt.Errorf("creating %s: %w", r.opts.FilesDir, err)
	}
	statement = filepath.Join(r.opts.FilesDir, provenanceFile)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(statement, append(data, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", statement, err)
	}
	predicate = filepath.Join(r.tmp, "provenance-predicate.json")
	if data, err = json.Marshal(s.Predicate); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(predicate, data, 0o644); err != nil {
		return "", "", err
	}
	r.opts.logf("wrote the provenance %s", statement)
	return statement, predicate, nil
}
