package health

import (
	"strings"
	"unicode"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// withHints is a message taken from a Flux object's condition followed by
// Capwright's hints on what to do about it ("; …", empty when none
// applies). Flux's messages often end with a newline (kustomize-controller
// ends each failed object's line with one): it is dropped before a hint,
// which would otherwise start on a line of its own after a dangling
// "\n;".
func withHints(message string, hints ...string) string {
	var b strings.Builder
	for _, h := range hints {
		b.WriteString(h)
	}
	if b.Len() == 0 {
		return message
	}
	return strings.TrimRightFunc(message, unicode.IsSpace) + b.String()
}

// verificationHint tells what to do when source-controller refused an
// artifact because no signature verified with the keys of the object's
// verify Secret: the artifact is unsigned, or signed with another key.
func (o Observation) verificationHint(reason string) string {
	if o.Kind != sourcev1.OCIRepositoryKind || reason != sourcev1.VerificationError {
		return ""
	}
	return "; sign the artifact with a key whose public half is in the Secret verify.secretRef names " +
		"(cosign sign --key cosign.key <repository>@<digest>), or point verify.secretRef at a Secret holding the signer's cosign.pub"
}
