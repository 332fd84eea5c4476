package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/providerrelease"
	"github.com/capwright/capwright/internal/status"
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
	// exitAttention: convert wrote its CRs, but fields need a human.
	exitAttention = 7
	// exitNotReady: build — the manager would refuse a custom resource;
	// status — something shown is not Ready.
	exitNotReady = 8
)

// usageError is a bad command line or bad input file.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// notReadyError is a refusal the manager would make, or an object not
// Ready: exit code 8.
type notReadyError struct{ err error }

func (e notReadyError) Error() string { return e.err.Error() }
func (e notReadyError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var (
		usage       usageError
		release     *artifact.ReleaseError
		auth        *artifact.AuthError
		notFound    *artifact.NotFoundError
		layout      *artifact.LayoutError
		tooLarge    *artifact.TooLargeError
		mismatch    *artifact.DigestMismatchError
		plainTLS    *artifact.PlainHTTPToTLSError
		unknownCA   x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalid     x509.CertificateInvalidError
		verify      *tls.CertificateVerificationError
		recordHdr   tls.RecordHeaderError
		netErr      net.Error
		opErr       *net.OpError
		fromRelease *providerrelease.Error
		attention   attentionError
		notReady    notReadyError
		differences differencesError
		diffFailed  diffFailedError
		kubeAuth    kubeAuthError
		absent      *status.NotFoundError
		uninstalled *notInstalledError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &attention):
		return exitAttention
	case errors.As(err, &notReady):
		return exitNotReady
	case errors.As(err, &differences):
		return exitFailure
	case errors.As(err, &kubeAuth):
		return exitAuth
	case errors.As(err, &absent), errors.As(err, &uninstalled):
		return exitNotFound
	case errors.As(err, &fromRelease):
		return releaseExitCode(fromRelease.Reason)
	case errors.As(err, &usage), errors.As(err, &release):
		return exitUsage
	case errors.As(err, &auth):
		return exitAuth
	case errors.As(err, &notFound):
		return exitNotFound
	case errors.As(err, &layout), errors.As(err, &tooLarge), errors.As(err, &mismatch):
		return exitContract
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &recordHdr), errors.As(err, &netErr), errors.As(err, &opErr),
		errors.As(err, &plainTLS):
		return exitNetwork
	case artifact.AnswersPlainHTTP(err):
		return exitNetwork
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "accepts "),
		strings.HasPrefix(err.Error(), "requires "):
		return exitUsage
	case errors.As(err, &diffFailed):
		return exitDiffFailed
	}
	return exitFailure
}

// withCLIHints rewords errors whose advice is written for the controller
// (credentials in a secretRef) or that lack the flag that fixes them
// (--ca-file, --plain-http). The
// exit code stays the same: the original error is still in the chain.
func withCLIHints(err error) error {
	var (
		auth        *artifact.AuthError
		unknownCA   x509.UnknownAuthorityError
		fromRelease *providerrelease.Error
	)
	switch {
	case errors.As(err, &fromRelease):
		// Release errors name the --release-* flags already.
		return err
	case errors.As(err, &auth):
		return cliAuthError{auth}
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w: trust the registry's certificate authority with --ca-file (or skip verification with --insecure, for testing only)", err)
	case artifact.AnswersPlainHTTP(err):
		return fmt.Errorf("%w: the registry speaks plain HTTP, without TLS: pass --plain-http to talk to it", err)
	}
	return err
}

// cliAuthError is an *artifact.AuthError pointing at the CLI's credential
// sources.
type cliAuthError struct{ *artifact.AuthError }

func (e cliAuthError) Error() string {
	msg := fmt.Sprintf("registry refused access to %s (HTTP %d %s)", e.Ref, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + ": check the credentials for this registry (docker login, or --registry-config) and that they may access this repository"
}

func (e cliAuthError) Unwrap() error { return e.AuthError }

// releaseExitCode maps the reason of a --from-release failure to the exit
// codes: what the user fixes on the command line or in the release is 2.
func releaseExitCode(reason providerrelease.Reason) int {
	switch reason {
	case providerrelease.ReasonNotReleased:
		return exitNotFound
	case providerrelease.ReasonUnauthorized:
		return exitAuth
	case providerrelease.ReasonUnreachable:
		return exitNetwork
	case providerrelease.ReasonHTTPError:
		return exitFailure
	}
	return exitUsage
}
