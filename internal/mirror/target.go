package mirror

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"
)

// Target is where a mirror copies to: a registry and an optional path
// prefix inside it.
type Target struct {
	// Host is the registry, host[:port].
	Host string
	// Prefix is prepended to every source repository path; may be "".
	Prefix string
}

// ParseTarget parses HOST[:PORT][/PREFIX] (an oci:// scheme is tolerated).
func ParseTarget(s string) (Target, error) {
	rest := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "oci://"), "/")
	if rest == "" || strings.Contains(rest, "://") {
		return Target{}, fmt.Errorf("target %q: want HOST[:PORT][/PREFIX], e.g. mirror.example.com:5000/capi", s)
	}
	host, prefix, _ := strings.Cut(rest, "/")
	ref := registry.Reference{Registry: host, Repository: prefix}
	if err := ref.ValidateRegistry(); err != nil {
		return Target{}, fmt.Errorf("target %q: %w", s, err)
	}
	if prefix != "" {
		if err := ref.ValidateRepository(); err != nil {
			return Target{}, fmt.Errorf("target %q: the prefix %q is not a valid repository path (lower case: a-z, 0-9, and . _ - / as separators): %w", s, prefix, err)
		}
	}
	return Target{Host: host, Prefix: prefix}, nil
}

// String is HOST[/PREFIX], the form of the --to flag and of mirror rules.
func (t Target) String() string {
	if t.Prefix == "" {
		return t.Host
	}
	return t.Host + "/" + t.Prefix
}

// Repository is where the source repository path lands: PREFIX/path.
func (t Target) Repository(sourcePath string) string {
	if t.Prefix == "" {
		return sourcePath
	}
	return t.Prefix + "/" + sourcePath
}
