package health

import (
	"strings"
	"unicode"
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
