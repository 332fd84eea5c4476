package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/internal/release"
	"github.com/capwright/capwright/tests/bindir"
)

// The suites sign with the real cosign CLI (bin/cosign, built by `make
// tools` from github.com/sigstore/cosign/v2 at the version
// tests/tools/cosign pins), as a publisher without a transparency log
// does: a key pair from `cosign generate-key-pair`, `cosign sign --key`
// with --tlog-upload=false. cosign v2 writes the signature as a manifest
// tagged sha256-<hex>.sig in the signed artifact's repository, the
// simple-signing payload as its layer, the signature in an annotation:
// what `capwright mirror` copies, and what Flux's source-controller
// verifies when it finds no Sigstore bundle (cosign v3's default).

// cosignPassword encrypts the test keys' private halves; cosign reads it
// from COSIGN_PASSWORD. The keys live for one test run.
const cosignPassword = "capwright-e2e"

// CosignKey is a key pair `cosign generate-key-pair` made for a test.
type CosignKey struct {
	// private is cosign.key: the encrypted private key, handed to cosign
	// sign through the environment (--key env://…), never written to
	// disk again.
	private []byte
	// PublicPEM is cosign.pub, as a Flux verify Secret holds it.
	PublicPEM []byte
}

// NewCosignKey runs `cosign generate-key-pair` in a directory it removes
// again, keeping both halves in memory.
func NewCosignKey() (*CosignKey, error) {
	dir, err := os.MkdirTemp("", "cosign-key-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runCosign(ctx, dir, nil, "generate-key-pair"); err != nil {
		return nil, err
	}
	private, err := os.ReadFile(filepath.Join(dir, "cosign.key"))
	if err != nil {
		return nil, fmt.Errorf("cosign generate-key-pair wrote no cosign.key: %w", err)
	}
	public, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	if err != nil {
		return nil, fmt.Errorf("cosign generate-key-pair wrote no cosign.pub: %w", err)
	}
	return &CosignKey{private: private, PublicPEM: public}, nil
}

// CosignSign signs the manifest ref (host/repository@sha256:…) names in
// the plane's plain-HTTP registry with `cosign sign`, without a
// transparency log. Signing an artifact again adds a signature beside the
// ones it has.
func CosignSign(ctx context.Context, ref string, key *CosignKey) error {
	if !strings.Contains(ref, "@sha256:") {
		return fmt.Errorf("cosign: %s is not a reference by digest", ref)
	}
	_, err := runCosign(ctx, "", []string{"COSIGN_PRIVATE_KEY=" + string(key.private)},
		"sign", "--key", "env://COSIGN_PRIVATE_KEY", "--tlog-upload=false",
		"--allow-insecure-registry", "--allow-http-registry", "--yes", ref)
	return err
}

// CosignSignPrivate signs ref in a registry with its own CA and basic
// auth, as a team signs in its private registry: cosign logs in with the
// credentials of dockerConfig (a docker config.json) and trusts the
// registry's certificate through caPEM.
func CosignSignPrivate(ctx context.Context, ref string, key *CosignKey, dockerConfig, caPEM []byte) error {
	if !strings.Contains(ref, "@sha256:") {
		return fmt.Errorf("cosign: %s is not a reference by digest", ref)
	}
	dir, err := os.MkdirTemp("", "cosign-auth-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), dockerConfig, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		return err
	}
	_, err = runCosign(ctx, "", []string{"COSIGN_PRIVATE_KEY=" + string(key.private), "DOCKER_CONFIG=" + dir, "SSL_CERT_FILE=" + ca},
		"sign", "--key", "env://COSIGN_PRIVATE_KEY", "--tlog-upload=false", "--yes", ref)
	return err
}

// CosignSignTag signs what tag names in the plain-HTTP repository url
// (oci://host/repository, as PushChart returns it) with CosignSign: cosign
// signs a digest, so the tag is resolved first.
func CosignSignTag(ctx context.Context, url, tag string, key *CosignKey) error {
	repository := strings.TrimPrefix(url, "oci://")
	repo, err := remote.NewRepository(repository)
	if err != nil {
		return err
	}
	repo.PlainHTTP = true
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return fmt.Errorf("cosign: resolving %s:%s: %w", repository, tag, err)
	}
	return CosignSign(ctx, repository+"@"+desc.Digest.String(), key)
}

// runCosign runs bin/cosign with args in dir, its password and env in the
// environment, and returns its output; an error carries what cosign said.
func runCosign(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	bin, err := bindir.Default()
	if err != nil {
		return nil, err
	}
	cosign := filepath.Join(bin, "cosign")
	if _, err := os.Stat(cosign); err != nil {
		return nil, fmt.Errorf("the cosign CLI is not built: %w; run make tools", err)
	}
	cmd := exec.CommandContext(ctx, cosign, args...)
	cmd.Dir = dir
	// HOME keeps cosign's caches out of the user's; no tlog, no TUF.
	home, err := os.MkdirTemp("", "cosign-home-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(home) }()
	cmd.Env = append(os.Environ(), append(env, "COSIGN_PASSWORD="+cosignPassword, "HOME="+home)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("cosign %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}

// releaseKey is the key the suites sign their releases of Capwright with,
// one per test process, so that a suite's releases and the public key it
// puts in the guide's examples always match.
var releaseKey struct {
	sync.Once
	key *CosignKey
	err error
}

// ReleaseKey is the key releases of Capwright are signed with in this
// test process (see ReleaseSigning).
func ReleaseKey() (*CosignKey, error) {
	releaseKey.Do(func() { releaseKey.key, releaseKey.err = NewCosignKey() })
	return releaseKey.key, releaseKey.err
}

// ReleaseSigning is how `make release COSIGN_KEY=…` signs with key: the
// real cosign CLI, the private half handed over in the environment.
func ReleaseSigning(key *CosignKey) (*release.Signing, error) {
	bin, err := bindir.Default()
	if err != nil {
		return nil, err
	}
	return &release.Signing{
		Cosign: filepath.Join(bin, "cosign"),
		Key:    "env://COSIGN_PRIVATE_KEY",
		Env:    []string{"COSIGN_PRIVATE_KEY=" + string(key.private), "COSIGN_PASSWORD=" + cosignPassword},
	}, nil
}

// CosignVerifyAttestations runs `cosign verify-attestation` of
// predicateType (cosign's --type: cyclonedx, slsaprovenance1) on ref in
// the plane's plain-HTTP registry with key's public half, as
// docs/security.md tells users to, and returns the in-toto statements
// whose signatures verified.
func CosignVerifyAttestations(ctx context.Context, ref, predicateType string, key *CosignKey) ([][]byte, error) {
	dir, err := os.MkdirTemp("", "cosign-pub-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	pub := filepath.Join(dir, "cosign.pub")
	if err := os.WriteFile(pub, key.PublicPEM, 0o600); err != nil {
		return nil, err
	}
	out, err := runCosignStdout(ctx, "verify-attestation", "--key", pub, "--type", predicateType,
		"--insecure-ignore-tlog", "--allow-http-registry", "--allow-insecure-registry", ref)
	if err != nil {
		return nil, err
	}
	var statements [][]byte
	for line := range strings.Lines(string(out)) {
		var envelope struct {
			Payload []byte `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &envelope); err != nil {
			return nil, fmt.Errorf("cosign verify-attestation printed %q: %w", line, err)
		}
		statements = append(statements, envelope.Payload)
	}
	return statements, nil
}

// runCosignStdout is runCosign keeping stdout (what cosign verified) apart
// from stderr (its warnings).
func runCosignStdout(ctx context.Context, args ...string) ([]byte, error) {
	bin, err := bindir.Default()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "cosign-home-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(home) }()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "cosign"), args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cosign %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
