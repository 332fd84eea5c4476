package render

import (
	"fmt"
	"regexp"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// The checks of spec fields the API server cannot make — CEL compiles no
// regular expression, and the CRDs cannot bound Flux's own types enough
// for a CEL rule over them — made before anything is written: what Flux
// would refuse only later (or never say), Capwright refuses at once,
// naming the field.

// imageDigest and imageTag are what a container image's digest and tag
// may be (the OCI distribution spec's, sha256 and sha512 for a digest);
// kustomize writes a tag after the image's name as it is, so a tag may
// carry a digest too (v1.2.3@sha256:…).
var (
	imageDigest = regexp.MustCompile(`^sha(256:[a-f0-9]{64}|512:[a-f0-9]{128})$`)
	imageTag    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha(256:[a-f0-9]{64}|512:[a-f0-9]{128}))?$`)
)

// CheckProviderSpec refuses a provider spec Flux would take and then fail
// on: a keyless signing identity of spec.source.oci.verify or
// spec.source.chart.verify that is not a regular expression, an image
// override whose digest or tag no Pod can pull.
func CheckProviderSpec(spec *v1alpha1.ProviderSpec) error {
	if s := spec.Source; s != nil {
		if s.OCI != nil {
			if err := checkIdentities("spec.source.oci.verify", verification(s.OCI.Verify)); err != nil {
				return err
			}
		}
		if s.Chart != nil {
			if err := checkIdentities("spec.source.chart.verify", verification(s.Chart.Verify)); err != nil {
				return err
			}
		}
	}
	for i, img := range spec.Images {
		if img.Digest != "" && !imageDigest.MatchString(img.Digest) {
			return fmt.Errorf("spec.images[%d].digest: %q is not an image digest: write sha256: and the 64 lower-case hex digits of the image's digest, without its name", i, img.Digest)
		}
		if img.NewTag != "" && !imageTag.MatchString(img.NewTag) {
			return fmt.Errorf("spec.images[%d].newTag: %q is not an image tag: use letters, digits, _, . and -, not starting with . or -, at most 128 characters (set digest for a digest)", i, img.NewTag)
		}
	}
	return nil
}

// CheckBackend refuses a backend whose keyless signing identities are not
// regular expressions.
func CheckBackend(b *clustersv1alpha1.Backend) error {
	switch {
	case b == nil:
		return nil
	case b.Chart != nil:
		return checkIdentities("spec.backend.chart.verify", verification(b.Chart.Verify))
	case b.Kustomize != nil:
		return checkIdentities("spec.backend.kustomize.verify", verification(b.Kustomize.Verify))
	}
	return nil
}

// checkIdentities refuses a keyless signing identity whose issuer or
// subject is not a Go regular expression: source-controller compiles them
// (cosign's) only when it verifies an artifact, and fails every
// verification on one that does not compile.
func checkIdentities(field string, v *sourcev1.OCIRepositoryVerification) error {
	if v == nil {
		return nil
	}
	for i, id := range v.MatchOIDCIdentity {
		for _, p := range []struct{ name, expr string }{{"issuer", id.Issuer}, {"subject", id.Subject}} {
			if _, err := regexp.Compile(p.expr); err != nil {
				return fmt.Errorf("%s.matchOIDCIdentity[%d].%s is not a regular expression (%v): Flux matches it as a Go regular expression, so write e.g. ^.*@example\\.com$ rather than a glob such as *@example.com",
					field, i, p.name, err)
			}
		}
	}
	return nil
}
