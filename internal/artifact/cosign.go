package artifact

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// What cosign (v2, its tag scheme) writes beside a manifest: a manifest
// tagged <alg>-<hex>.sig whose layers are simple-signing payloads, each
// signed in an annotation, and one tagged .att whose layers are DSSE
// envelopes of in-toto statements, the predicate type in an annotation.
const (
	cosignSignatureAnnotation   = "dev.cosignproject.cosign/signature"
	cosignCertificateAnnotation = "dev.sigstore.cosign/certificate"
	cosignPredicateAnnotation   = "predicateType"
	// maxCosignBlob bounds a signature payload or attestation envelope.
	maxCosignBlob = 16 << 20
)

// CosignTag is the tag cosign keeps what it attached to d under: suffix
// is sig, att or sbom.
func CosignTag(d digest.Digest, suffix string) string {
	return d.Algorithm().String() + "-" + d.Encoded() + "." + suffix
}

// CosignStatus is what cosign attached to one manifest, read from its
// repository.
type CosignStatus struct {
	// Signatures are the signatures of the manifest; Verified of them
	// verified with the public key given (none without one); Keyless of
	// them carry a certificate instead (verify them with cosign).
	Signatures int `json:"signatures"`
	Verified   int `json:"verified"`
	Keyless    int `json:"keyless,omitempty"`
	// SignatureTag and AttestationTag are the tags they live under, ""
	// when there is none.
	SignatureTag   string `json:"signatureTag,omitempty"`
	AttestationTag string `json:"attestationTag,omitempty"`
	// Attestations are the predicate types attached (an SBOM:
	// https://cyclonedx.org/bom; provenance: https://slsa.dev/provenance/v1),
	// one per attestation; VerifiedAttestations of them verified with the
	// key.
	Attestations         []string `json:"attestations,omitempty"`
	VerifiedAttestations int      `json:"verifiedAttestations"`
}

// LoadCosignPublicKey reads a cosign.pub (PEM) as a verifier.
func LoadCosignPublicKey(pemData []byte) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemData)
	if err != nil {
		return nil, fmt.Errorf("not a PEM public key (cosign.pub): %w", err)
	}
	return signature.LoadVerifier(pub, crypto.SHA256)
}

// ReadCosignStatus reads the signatures and attestations cosign tagged for
// d in repo, verifying them with verifier when it is not nil.
func ReadCosignStatus(ctx context.Context, repo content.ReadOnlyGraphStorage, resolver content.Resolver, d digest.Digest, verifier signature.Verifier) (CosignStatus, error) {
	var s CosignStatus
	sigs, tag, err := cosignLayers(ctx, repo, resolver, CosignTag(d, "sig"))
	if err != nil {
		return s, err
	}
	s.SignatureTag = tag
	for _, l := range sigs {
		s.Signatures++
		if l.desc.Annotations[cosignCertificateAnnotation] != "" {
			s.Keyless++
			continue
		}
		if verifier != nil && verifySimpleSigning(l, d, verifier) {
			s.Verified++
		}
	}
	atts, tag, err := cosignLayers(ctx, repo, resolver, CosignTag(d, "att"))
	if err != nil {
		return s, err
	}
	s.AttestationTag = tag
	for _, l := range atts {
		s.Attestations = append(s.Attestations, l.desc.Annotations[cosignPredicateAnnotation])
		if verifier != nil && verifyDSSE(l.data, verifier) {
			s.VerifiedAttestations++
		}
	}
	return s, nil
}

type cosignLayer struct {
	desc ocispec.Descriptor
	data []byte
}

// cosignLayers are the layers of the manifest tag names, and tag; none
// and "" when there is no such tag.
func cosignLayers(ctx context.Context, repo content.ReadOnlyStorage, resolver content.Resolver, tag string) ([]cosignLayer, string, error) {
	desc, err := resolver.Resolve(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	raw, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, "", err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", fmt.Errorf("%s: %w", tag, err)
	}
	var out []cosignLayer
	for _, l := range m.Layers {
		if l.Size > maxCosignBlob {
			return nil, "", fmt.Errorf("%s: a layer of %d bytes, more than a signature holds", tag, l.Size)
		}
		data, err := content.FetchAll(ctx, repo, l)
		if err != nil {
			return nil, "", err
		}
		out = append(out, cosignLayer{desc: l, data: data})
	}
	return out, tag, nil
}

// verifySimpleSigning says the layer's signature verifies its payload and
// the payload names d.
func verifySimpleSigning(l cosignLayer, d digest.Digest, verifier signature.Verifier) bool {
	sig, err := base64.StdEncoding.DecodeString(l.desc.Annotations[cosignSignatureAnnotation])
	if err != nil || verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.data)) != nil {
		return false
	}
	var payload struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	return json.Unmarshal(l.data, &payload) == nil && payload.Critical.Image.Digest == d.String()
}

// verifyDSSE says one signature of the DSSE envelope verifies its
// pre-authentication encoding.
func verifyDSSE(envelope []byte, verifier signature.Verifier) bool {
	var e struct {
		PayloadType string `json:"payloadType"`
		Payload     []byte `json:"payload"`
		Signatures  []struct {
			Sig []byte `json:"sig"`
		} `json:"signatures"`
	}
	if json.Unmarshal(envelope, &e) != nil {
		return false
	}
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(e.PayloadType), e.PayloadType, len(e.Payload), e.Payload)
	for _, s := range e.Signatures {
		if verifier.VerifySignature(bytes.NewReader(s.Sig), bytes.NewReader(pae)) == nil {
			return true
		}
	}
	return false
}
