package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/capwright/capwright/internal/artifact"
)

// Exit codes scripts can rely on; the root command's help lists them.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
	exitAuth     = 4
	exitNetwork  = 5
	exitContract = 6
)

// usageError is a bad command line or bad input file.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var (
		usage     usageError
		auth      *artifact.AuthError
		notFound  *artifact.NotFoundError
		layout    *artifact.LayoutError
		tooLarge  *artifact.TooLargeError
		mismatch  *artifact.DigestMismatchError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		recordHdr tls.RecordHeaderError
		netErr    net.Error
		opErr     *net.OpError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &auth):
		return exitAuth
	case errors.As(err, &notFound):
		return exitNotFound
	case errors.As(err, &layout), errors.As(err, &tooLarge), errors.As(err, &mismatch):
		return exitContract
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &recordHdr), errors.As(err, &netErr), errors.As(err, &opErr):
		return exitNetwork
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return exitNetwork
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "accepts "),
		strings.HasPrefix(err.Error(), "requires "):
		return exitUsage
	}
	return exitFailure
}
