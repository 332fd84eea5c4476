package dryrun

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMaskerHidesEveryForm(t *testing.T) {
	m := newMasker([]string{"s3cr3t", `pa"ss<w>rd`, "line\nbreak", "s3cr3t-longer", ""})
	for _, tc := range []struct{ in, want string }{
		{"value s3cr3t here", "value *** here"},
		// The longer value is hidden whole, not as *** plus its tail.
		{"name s3cr3t-longer", "name ***"},
		{`Invalid value: "pa\"ss<w>rd"`, `Invalid value: "***"`},
		{`{"v":"pa\"ss\u003cw\u003erd"}`, `{"v":"***"}`},
		{`"line\nbreak"`, `"***"`},
		{"nothing secret", "nothing secret"},
	} {
		if got := m.text(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (masker{}).text("plain"); got != "plain" {
		t.Errorf("a masker of nothing changed %q", got)
	}
}

func TestMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := bounded(long)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("bounded gave %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
	// Masking comes before the cut, so the cut never leaves part of a value.
	secret := strings.Repeat("x", 40)
	m := newMasker([]string{secret})
	text := strings.Repeat("a", maxMessage-20) + secret
	if got := m.text(text); strings.Contains(got, "xxxxx") {
		t.Errorf("a cut value shows: %q", got[len(got)-40:])
	}
}

func TestMaskErrorKeepsTheCause(t *testing.T) {
	err := maskError(newMasker([]string{"s3cr3t"}), fmt.Errorf("reading s3cr3t: %w", context.Canceled))
	if err.Error() != "reading ***: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("maskError = %q, Is(Canceled) %v", err, errors.Is(err, context.Canceled))
	}
	if maskError(masker{}, nil) != nil {
		t.Error("maskError(nil) is not nil")
	}
}

func TestSecretObjectValues(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "s"},
		"data":       map[string]any{"token": "czNjcjN0"}, // s3cr3t
		"stringData": map[string]any{"password": "hunter2"},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"},
		"data":     map[string]any{"plain": "visible"},
	}}
	got := strings.Join(secretObjectValues([]*unstructured.Unstructured{secret, cm}), ",")
	for _, want := range []string{"czNjcjN0", "s3cr3t", "hunter2", "aHVudGVyMg=="} {
		if !strings.Contains(got, want) {
			t.Errorf("values %s lack %s", got, want)
		}
	}
	if strings.Contains(got, "visible") {
		t.Errorf("a ConfigMap's value is masked: %s", got)
	}
}

// TestQuotedFormsAreMasked pins the forms against the encoders that
// produce them.
func TestQuotedFormsAreMasked(t *testing.T) {
	v := "tab\there \"q\" <&>"
	m := newMasker([]string{v})
	for _, quoted := range []string{strconv.Quote(v), fmt.Sprintf("%q", v)} {
		if got := m.text(quoted); got != `"***"` {
			t.Errorf("text(%s) = %s", quoted, got)
		}
	}
}
