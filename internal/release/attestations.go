package release

import (
	"context"
	"path/filepath"
	"strings"
)

// attestations are the SBOMs and provenance a release wrote to FilesDir.
type attestations struct {
	// managerSBOMs are in imagePlatforms' order, cliSBOMs in
	// cliPlatforms'; both empty without an SBOM generator.
	managerSBOMs, cliSBOMs []sbomFile
	// provenance is the statement written; predicate its predicate alone,
	// what cosign attest takes.
	provenance, predicate string
}

// writeAttestations writes the SBOM of every manager and CLI binary and
// the provenance of everything the release built.
func (r *run) writeAttestations(ctx context.Context, image, chart, manifests *staged, cli []string) (*attestations, error) {
	att := &attestations{}
	if r.opts.SBOMGenerator != "" {
		for i, p := range r.imagePlatforms {
			f, err := writeSBOM(ctx, r.opts, imageRepository, p, r.managers[i])
			if err != nil {
				return nil, err
			}
			att.managerSBOMs = append(att.managerSBOMs, f)
		}
		for i, p := range r.cliPlatforms {
			// cli lists one binary per platform, in order, then SHA256SUMS.
			f, err := writeSBOM(ctx, r.opts, "capwright", p, cli[i])
			if err != nil {
				return nil, err
			}
			att.cliSBOMs = append(att.cliSBOMs, f)
		}
	} else {
		r.opts.logf("no SBOM generator given: writing no SBOM")
	}
	subjects := []resourceDesc{ociSubject(image.artifact.Repository, image.artifact.Digest)}
	for _, d := range r.platformDigests {
		subjects = append(subjects, ociSubject(image.artifact.Repository, d))
	}
	subjects = append(subjects, ociSubject(chart.artifact.Repository, chart.artifact.Digest), ociSubject(manifests.artifact.Repository, manifests.artifact.Digest))
	for i := range r.cliPlatforms {
		sum, err := fileSHA256(cli[i])
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, resourceDesc{Name: filepath.Base(cli[i]), Digest: map[string]string{sha256DigestAlg: sum}})
	}
	dirty, err := dirtyFiles(ctx, r.opts.RepoRoot, r.opts.Output, r.opts.CLIDir, r.opts.FilesDir)
	if err != nil {
		return nil, err
	}
	stmt, err := r.provenance(ctx, provenanceInput{subjects: subjects, dirty: len(dirty) > 0})
	if err != nil {
		return nil, err
	}
	if att.provenance, att.predicate, err = r.writeProvenance(stmt); err != nil {
		return nil, err
	}
	return att, nil
}

// ociSubject names an OCI manifest of repository by its digest.
func ociSubject(repository, digest string) resourceDesc {
	alg, hex, _ := strings.Cut(digest, ":")
	return resourceDesc{Name: repository, Digest: map[string]string{alg: hex}}
}

// signAll signs the image index, each platform's manifest, the chart and
// the manifests artifact, then attaches to the index the provenance and
// every platform's SBOM, and to each platform's manifest its own SBOM.
func (r *run) signAll(ctx context.Context, att *attestations, image, chart, manifests *staged) error {
	s := r.opts.Signing
	index := image.artifact.Repository + "@" + image.artifact.Digest
	refs := []string{index}
	for _, d := range r.platformDigests {
		refs = append(refs, image.artifact.Repository+"@"+d)
	}
	refs = append(refs, chart.artifact.Repository+"@"+chart.artifact.Digest, manifests.artifact.Repository+"@"+manifests.artifact.Digest)
	if err := s.sign(ctx, r.opts, refs); err != nil {
		return err
	}
	for i, f := range att.managerSBOMs {
		for _, ref := range []string{index, image.artifact.Repository + "@" + r.platformDigests[i]} {
			if err := s.attest(ctx, r.opts, ref, cosignCycloneDXType, f.path); err != nil {
				return err
			}
		}
	}
	return s.attest(ctx, r.opts, index, cosignProvenanceType, att.predicate)
}
