package dryrun

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxMessage bounds every message the package returns (a refusal, a
// skipped object, a CRD that blocks rollback, an error), in bytes.
const maxMessage = 1024

// Masked is what a Secret's value reads as in a message.
const Masked = "***"

// masker hides Secret values in text, and bounds its length.
type masker struct {
	replacer *strings.Replacer
}

// newMasker hides values in every form an API server or kustomize message
// may quote them in: as they are, JSON-escaped, and Go-quoted.
func newMasker(values []string) masker {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		forms = append(forms, v, quotedInner(strconv.Quote(v)), jsonInner(v, true), jsonInner(v, false))
	}
	forms = slices.DeleteFunc(forms, func(s string) bool { return s == "" })
	// Longest first: the replacer tries the forms in order at each
	// position, so a value containing another is hidden whole.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	forms = slices.Compact(forms)
	if len(forms) == 0 {
		return masker{}
	}
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Masked)
	}
	return masker{replacer: strings.NewReplacer(pairs...)}
}

// text is s with every value hidden, cut to maxMessage. Hiding comes
// first, so a cut never leaves part of a value.
func (m masker) text(s string) string {
	if m.replacer != nil {
		s = m.replacer.Replace(s)
	}
	return bounded(s)
}

// bounded cuts s to at most maxMessage bytes, on a character boundary,
// ending in "…" when cut.
func bounded(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	const more = "…"
	cut := maxMessage - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

func quotedInner(q string) string { return q[1 : len(q)-1] }

// jsonInner is v JSON-encoded, without its quotes, with or without
// escaping <, > and &.
func jsonInner(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return quotedInner(strings.TrimSuffix(b.String(), "\n"))
}

// secretObjectValues are the values of the Secrets among objects: each of
// data as written (base64) and decoded, and each of stringData.
func secretObjectValues(objects []*unstructured.Unstructured) []string {
	var values []string
	for _, o := range objects {
		if o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for _, v := range data {
			values = append(values, v)
			if decoded, err := base64.StdEncoding.DecodeString(v); err == nil {
				values = append(values, string(decoded))
			}
		}
		stringData, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
		for _, v := range stringData {
			values = append(values, v, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	return values
}

// maskedError is an error whose text has Secret values hidden; it still
// unwraps to the original for errors.Is and errors.As, whose text must not
// be shown.
type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

// maskError hides m's values in err's text and bounds it.
func maskError(m masker, err error) error {
	if err == nil {
		return nil
	}
	return &maskedError{text: m.text(err.Error()), err: err}
}
