package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/capwright/capwright/internal/artifact"
)

// defaultReleaseRegistry is where the project publishes its releases.
const defaultReleaseRegistry = "ghcr.io/capwright"

// releaseRepositories are a release's artifacts under its registry, as
// make release names them.
var releaseRepositories = []string{"capwright-manager", "charts/capwright", "capwright-manifests"}

// releaseStatus is what `capwright version --release` reports of a
// release in a registry: each artifact's digest, signatures and
// attestations (where the SBOMs and provenance live).
type releaseStatus struct {
	Version  string `json:"version"`
	Registry string `json:"registry"`
	// Key is the public key the signatures were checked with, "" for none.
	Key       string            `json:"key,omitempty"`
	Artifacts []releaseArtifact `json:"artifacts"`
}

type releaseArtifact struct {
	Reference string `json:"reference"`
	// Platform is set for an image's platform manifest.
	Platform string `json:"platform,omitempty"`
	artifact.CosignStatus
}

// readRelease reads every artifact of version under registry, and for the
// image each platform's manifest, with what cosign attached to them.
func readRelease(ctx context.Context, reg *registryOptions, registry, version, keyFile string) (*releaseStatus, error) {
	var verifier signature.Verifier
	if keyFile != "" {
		pemData, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("--key: %w", err)
		}
		if verifier, err = artifact.LoadCosignPublicKey(pemData); err != nil {
			return nil, fmt.Errorf("--key %s: %w", keyFile, err)
		}
	}
	access, err := reg.access()
	if err != nil {
		return nil, err
	}
	s := &releaseStatus{Version: version, Registry: registry, Key: keyFile}
	for _, name := range releaseRepositories {
		ref, err := artifact.ParseURL("oci://" + strings.TrimSuffix(registry, "/") + "/" + name + ":" + version)
		if err != nil {
			return nil, usageErrorf("--release-registry %q: %v", registry, err)
		}
		repo, release, err := access.Repository(ref, maxImageManifest)
		if err != nil {
			return nil, err
		}
		defer release()
		desc, err := repo.Resolve(ctx, version)
		if err != nil {
			return nil, withCLIHints(artifact.RegistryError(ref, "reading the release", err))
		}
		subjects := []releaseArtifact{{Reference: ref.Host + "/" + ref.Repository + "@" + desc.Digest.String()}}
		digests := []digest.Digest{desc.Digest}
		if desc.MediaType == ocispec.MediaTypeImageIndex {
			_, rc, err := repo.FetchReference(ctx, desc.Digest.String())
			if err != nil {
				return nil, withCLIHints(artifact.RegistryError(ref, "reading the image index", err))
			}
			var index ocispec.Index
			err = json.NewDecoder(io.LimitReader(rc, maxImageManifest)).Decode(&index)
			rc.Close()
			if err != nil {
				return nil, fmt.Errorf("the image index of %s: %w", ref.URL(), err)
			}
			for _, m := range index.Manifests {
				p := ""
				if m.Platform != nil {
					p = m.Platform.OS + "/" + m.Platform.Architecture
				}
				subjects = append(subjects, releaseArtifact{Reference: ref.Host + "/" + ref.Repository + "@" + m.Digest.String(), Platform: p})
				digests = append(digests, m.Digest)
			}
		}
		for i := range subjects {
			st, err := artifact.ReadCosignStatus(ctx, repo, repo, digests[i], verifier)
			if err != nil {
				return nil, withCLIHints(artifact.RegistryError(ref, "reading signatures", err))
			}
			subjects[i].CosignStatus = st
		}
		s.Artifacts = append(s.Artifacts, subjects...)
	}
	return s, nil
}

// printRelease prints s as text.
func printRelease(w io.Writer, s *releaseStatus) {
	fmt.Fprintf(w, "release %s in %s:\n", s.Version, s.Registry)
	for _, a := range s.Artifacts {
		name := a.Reference
		if a.Platform != "" {
			name += " (" + a.Platform + ")"
		}
		fmt.Fprintf(w, "  %s\n    signature: %s\n", name, signatureText(a.CosignStatus, s.Key))
		if len(a.Attestations) > 0 {
			repo, _, _ := strings.Cut(a.Reference, "@")
			fmt.Fprintf(w, "    attestations (%s) at %s:%s", strings.Join(predicateNames(a.Attestations), ", "), repo, a.AttestationTag)
			if s.Key != "" {
				fmt.Fprintf(w, ", %d of %d verified with the key", a.VerifiedAttestations, len(a.Attestations))
			}
			fmt.Fprintln(w)
		}
	}
}

// signatureText says whether an artifact is signed, and by the key.
func signatureText(st artifact.CosignStatus, key string) string {
	switch {
	case st.Signatures == 0:
		return "UNSIGNED"
	case key != "" && st.Verified > 0:
		return fmt.Sprintf("signed, verified with %s (%d of %d signatures)", key, st.Verified, st.Signatures)
	case key != "" && st.Keyless > 0:
		return fmt.Sprintf("signed keyless (%d signatures): verify the signer's identity with cosign verify", st.Keyless)
	case key != "":
		return fmt.Sprintf("NOT signed by %s (%d other signatures)", key, st.Signatures)
	default:
		return fmt.Sprintf("%d signatures, not verified: pass --key cosign.pub", st.Signatures)
	}
}

// predicateNames shortens the predicate types users see.
func predicateNames(types []string) []string {
	out := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "https://cyclonedx.org/bom":
			out[i] = "SBOM (CycloneDX)"
		case "https://slsa.dev/provenance/v1":
			out[i] = "provenance (SLSA v1)"
		default:
			out[i] = t
		}
	}
	return out
}
