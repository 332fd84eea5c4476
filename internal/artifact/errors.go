package artifact

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// AuthError is a registry refusing access (HTTP 401 or 403). It keeps only
// the status and the registry's own error codes: never the request, whose
// URL or headers may carry credentials.
type AuthError struct {
	Ref        string
	StatusCode int
	// Detail is what the registry said, e.g. "unauthorized: authentication required".
	Detail string
}

func (e *AuthError) Error() string {
	msg := fmt.Sprintf("registry refused access to %s (HTTP %d %s)", e.Ref, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + ": check the registry credentials (secretRef) and that they may read this repository"
}

// NotFoundError is a tag, digest or repository the registry does not have.
type NotFoundError struct {
	Ref string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found in the registry: check the repository URL and that the version is published (tag = version)", e.Ref)
}

// TooLargeError is content above the Fetcher's bound.
type TooLargeError struct {
	Ref string
	// What is too large: "manifest", "layer", "uncompressed layer".
	What string
	// Size in bytes, or -1 when reading stopped at the limit.
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	size := fmt.Sprintf("%d bytes", e.Size)
	if e.Size < 0 {
		size = "more than that"
	}
	return fmt.Sprintf("%s of %s exceeds the limit of %d bytes (%s): provider artifacts hold a few YAML files; check the reference, or raise the artifact size limit",
		e.What, e.Ref, e.Limit, size)
}

// DigestMismatchError is a tag that no longer resolves to the pinned digest.
type DigestMismatchError struct {
	Ref      string
	Expected string // the pinned digest
	Actual   string // what the tag resolves to now
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("tag %s resolves to %s, not to the pinned digest %s: the tag was re-pushed; pin the new digest after checking it, or remove the pin",
		e.Ref, e.Actual, e.Expected)
}

// LayoutError is an artifact that does not follow the Cluster API provider
// artifact contract. Problem says what the artifact is or has instead; Hint,
// when set, what to do about it.
type LayoutError struct {
	Ref     string
	Problem string
	Hint    string
}

func (e *LayoutError) Error() string {
	msg := fmt.Sprintf("%s is not a Cluster API provider artifact: %s", e.Ref, e.Problem)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// registryError turns oras-go errors into the errors above. Other errors
// (network, TLS) are wrapped unchanged: they name the registry URL, which
// holds no credentials.
func registryError(ref Reference, action string, err error) error {
	var resp *errcode.ErrorResponse
	switch {
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return &AuthError{Ref: ref.String(), StatusCode: resp.StatusCode, Detail: registryDetail(resp)}
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return &AuthError{Ref: ref.String(), StatusCode: http.StatusUnauthorized, Detail: "the registry requires credentials and none were given"}
	case errors.Is(err, errdef.ErrNotFound), errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return &NotFoundError{Ref: ref.String()}
	}
	return fmt.Errorf("%s %s: %w", action, ref, err)
}

// registryDetail is the registry's error codes and messages, without the
// request line.
func registryDetail(resp *errcode.ErrorResponse) string {
	parts := make([]string, 0, len(resp.Errors))
	for _, e := range resp.Errors {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// Unreachable tells whether err means the registry could not be reached
// or did not answer in time — refused or reset connections, timeouts,
// names that do not resolve, server errors (HTTP 5xx) and throttling
// (429) — rather than an answer about the content (not found, refused
// access, a bad artifact) or a TLS setup that does not verify. It is what
// may pass while what was fetched before still stands.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) {
		return false
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		return resp.StatusCode >= http.StatusInternalServerError || resp.StatusCode == http.StatusTooManyRequests
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout())
}
