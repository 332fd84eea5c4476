package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Signing says how a release signs what it publishes, with the cosign
// CLI: the manager image (its index and every platform's manifest), the
// chart and the manifests artifact get a signature, and the image gets
// its SBOMs and provenance as signed attestations. cosign writes them
// beside each artifact under its tag scheme (sha256-<hex>.sig, .att), so
// signing never changes an artifact's digest.
type Signing struct {
	// Cosign is the cosign binary (make release: bin/cosign).
	Cosign string
	// Key is the private key as cosign takes it: a cosign.key file from
	// `cosign generate-key-pair`, env://VAR or a KMS URI. Its password
	// comes from COSIGN_PASSWORD, as cosign reads it. Empty signs keyless:
	// cosign gets a certificate for the identity of a hosted CI's OIDC
	// token and records the signature in Sigstore's transparency log.
	Key string
	// Env is added to cosign's environment (e.g. COSIGN_PASSWORD for a
	// caller that does not hold it in its own). It is never logged.
	Env []string
}

// keyless is signing with a CI's identity instead of a key.
func (s *Signing) keyless() bool { return s.Key == "" }

// check refuses a cosign binary that is not there before anything is
// built.
func (s *Signing) check() error {
	if s.Cosign == "" {
		return errors.New("signing needs the cosign CLI: run make release (it builds bin/cosign), or pass -cosign")
	}
	if _, err := os.Stat(s.Cosign); err != nil {
		return fmt.Errorf("the cosign CLI %s: %w; run make tools, or make release, which builds it", s.Cosign, err)
	}
	return nil
}

// flags are what every cosign sign and attest of the release passes.
// With a key, the key is the root of trust and nothing goes to the
// public transparency log (verify with --insecure-ignore-tlog); keyless
// signatures must be logged, so there cosign's defaults stay.
func (s *Signing) flags(plainHTTP bool) []string {
	f := []string{"--yes"}
	if !s.keyless() {
		f = append(f, "--key", s.Key, "--tlog-upload=false")
	}
	if plainHTTP {
		f = append(f, "--allow-http-registry", "--allow-insecure-registry")
	}
	return f
}

// sign signs every reference (host/path@sha256:…) in one cosign call.
func (s *Signing) sign(ctx context.Context, o Options, refs []string) error {
	args := append(append([]string{"sign"}, s.flags(o.PlainHTTP)...), refs...)
	for _, ref := range refs {
		o.logf("signing %s", ref)
	}
	return s.run(ctx, args)
}

// attest attaches predicateFile to ref as a signed in-toto attestation of
// predicateType (a cosign --type: cyclonedx, slsaprovenance1).
func (s *Signing) attest(ctx context.Context, o Options, ref, predicateType, predicateFile string) error {
	o.logf("attesting %s of %s", predicateType, ref)
	args := append([]string{"attest"}, s.flags(o.PlainHTTP)...)
	args = append(args, "--type", predicateType, "--predicate", predicateFile, ref)
	return s.run(ctx, args)
}

// PublicKeyFile is the file beside the release's SBOMs and provenance that
// holds the public half of a key-signed release's key: what users verify
// with and put into the install's capwright-cosign-key Secret.
const PublicKeyFile = "cosign.pub"

// writePublicKey writes the public half of s.Key to path with `cosign
// public-key`, before anything is pushed, so a key cosign cannot read stops
// the release early. Keyless releases have no key to publish.
func (s *Signing) writePublicKey(ctx context.Context, path string) (string, error) {
	if s.keyless() {
		return "", nil
	}
	if err := s.run(ctx, []string{"public-key", "--key", s.Key, "--outfile", path}); err != nil {
		return "", err
	}
	return path, nil
}

// run runs cosign; an error carries what cosign said, which never holds
// the key or its password.
func (s *Signing) run(ctx context.Context, args []string) error {
	cmd := exec.CommandContext(ctx, s.Cosign, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cosign %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}
