package framework

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/mirror"
)

// CosignKey is a cosign signing key made for a test.
type CosignKey struct {
	signer signature.SignerVerifier
	// PublicPEM is the public key as `cosign generate-key-pair` writes
	// cosign.pub, and as a Flux verify Secret holds it.
	PublicPEM []byte
}

// NewCosignKey makes an ECDSA P-256 key, the kind cosign generates.
func NewCosignKey() (*CosignKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return &CosignKey{signer: signer, PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// Cosign's signature layout without the referrers API: a manifest tagged
// sha256-<hex>.sig in the signed image's repository, one layer per
// signature holding the signed payload, the signature in an annotation.
const (
	cosignPayloadMediaType  = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignSignatureAnnotate = "dev.cosignproject.cosign/signature"
)

// CosignSign signs the manifest ref (host/repository@sha256:…) names, as
// `cosign sign --key` does without a transparency log: the simple-signing
// payload sigstore's payload package builds, signed with key, pushed to
// the plain-HTTP registry under the tag cosign looks it up by.
func CosignSign(ctx context.Context, ref string, key *CosignKey) error {
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("cosign: %s is not a reference by digest: %w", ref, err)
	}
	body, err := json.Marshal(payload.Cosign{Image: d, ClaimedIdentity: d.Repository.Name()}.SimpleContainerImage())
	if err != nil {
		return err
	}
	sig, err := key.signer.SignMessage(bytes.NewReader(body))
	if err != nil {
		return err
	}
	repo, err := remote.NewRepository(d.Repository.Name())
	if err != nil {
		return err
	}
	repo.PlainHTTP = true
	// The config names the payload as an image's rootfs, as cosign's does.
	config, err := json.Marshal(ocispec.Image{RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(body)}}})
	if err != nil {
		return err
	}
	configDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	layer := ocispec.Descriptor{MediaType: cosignPayloadMediaType, Digest: digest.FromBytes(body), Size: int64(len(body)),
		Annotations: map[string]string{cosignSignatureAnnotate: base64.StdEncoding.EncodeToString(sig)}}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{configDesc, config}, {layer, body}} {
		if err := repo.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return fmt.Errorf("cosign: pushing to %s: %w", d.Repository.Name(), err)
		}
	}
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: configDesc, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	dd, err := digest.Parse(d.DigestStr())
	if err != nil {
		return err
	}
	tag := mirror.CosignTag(dd, "sig")
	if err := repo.PushReference(ctx, desc, bytes.NewReader(manifest), tag); err != nil {
		return fmt.Errorf("cosign: tagging %s:%s: %w", d.Repository.Name(), tag, err)
	}
	return nil
}
