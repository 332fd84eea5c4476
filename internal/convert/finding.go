package convert

import (
	"fmt"
	"io"
	"strings"
)

// Severity tells whether a finding needs a human before the converted CR is
// applied.
type Severity string

const (
	// Attention: the converted CR does not do what the operator did until
	// someone acts (a field without equivalent, a reference to fix, input
	// the converter could not read).
	Attention Severity = "attention"
	// Note: converted, with a difference worth knowing.
	Note Severity = "note"
)

// Finding is one field of one operator CR the converter has something to
// say about: what happens to it, and what to do.
type Finding struct {
	// Object is the operator CR, e.g. "InfrastructureProvider capa-system/aws"
	// (or the input document when no CR could be read from it).
	Object string `json:"object"`
	// Field is the path of the operator field, e.g. spec.fetchConfig.oci.
	Field    string   `json:"field"`
	Severity Severity `json:"severity"`
	// Message says what the converter did with the field and what to do.
	Message string `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s: %s", f.Severity, f.Field, f.Message)
}

// findings collects the findings of one CR.
type findings struct {
	object string
	list   []Finding
}

func (fs *findings) attention(field, format string, args ...any) {
	fs.list = append(fs.list, Finding{Object: fs.object, Field: field, Severity: Attention, Message: fmt.Sprintf(format, args...)})
}

func (fs *findings) note(field, format string, args ...any) {
	fs.list = append(fs.list, Finding{Object: fs.object, Field: field, Severity: Note, Message: fmt.Sprintf(format, args...)})
}

// NeedAttention tells whether any finding needs a human.
func NeedAttention(list []Finding) bool {
	for _, f := range list {
		if f.Severity == Attention {
			return true
		}
	}
	return false
}

// WriteReport writes the findings as text, grouped by object, attention
// first within each object.
func WriteReport(w io.Writer, list []Finding) error {
	var b strings.Builder
	var order []string
	byObject := map[string][]Finding{}
	for _, f := range list {
		if _, seen := byObject[f.Object]; !seen {
			order = append(order, f.Object)
		}
		byObject[f.Object] = append(byObject[f.Object], f)
	}
	for _, object := range order {
		fmt.Fprintf(&b, "%s\n", object)
		for _, sev := range []Severity{Attention, Note} {
			for _, f := range byObject[object] {
				if f.Severity == sev {
					fmt.Fprintf(&b, "  %-9s %s: %s\n", f.Severity, f.Field, f.Message)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
