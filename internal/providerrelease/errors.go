package providerrelease

import "fmt"

// Reason classifies an *Error, for exit codes and condition reasons.
type Reason string

const (
	// ReasonInvalidURL is a release URL that is not one of the forms, or
	// that is refused (plain HTTP, credentials in the URL).
	ReasonInvalidURL Reason = "InvalidURL"
	// ReasonInvalidVersion is a version that is not a release tag
	// ("latest", empty, not vMAJOR.MINOR.PATCH) or that contradicts the
	// version the URL names.
	ReasonInvalidVersion Reason = "InvalidVersion"
	// ReasonNotReleased is a file the host does not have (HTTP 404/410).
	ReasonNotReleased Reason = "NotReleased"
	// ReasonUnauthorized is the host refusing the credentials, or
	// requiring some (HTTP 401/403).
	ReasonUnauthorized Reason = "Unauthorized"
	// ReasonTooLarge is release files above the size bound.
	ReasonTooLarge Reason = "TooLarge"
	// ReasonNotYAML is an HTML page or a JSON error response where a
	// release file was expected.
	ReasonNotYAML Reason = "NotYAML"
	// ReasonRedirectRefused is a redirect to a host the rules do not
	// allow, or from HTTPS to plain HTTP.
	ReasonRedirectRefused Reason = "RedirectRefused"
	// ReasonInvalidRelease is release files that do not make a provider
	// release: metadata.yaml without the version's series, components that
	// do not parse.
	ReasonInvalidRelease Reason = "InvalidRelease"
	// ReasonHTTPError is any other unexpected HTTP status.
	ReasonHTTPError Reason = "HTTPError"
	// ReasonUnreachable is a connection or TLS failure; Err holds it.
	ReasonUnreachable Reason = "Unreachable"
)

// Error is a release that cannot be read or used. Problem names the URL
// concerned, Hint says what fixes it. Neither ever holds credentials.
type Error struct {
	Reason Reason
	// URL is the URL concerned, without credentials or query.
	URL     string
	Problem string
	Hint    string
	// Err is the underlying error (transport, TLS, parse), if any.
	Err error
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Problem
	}
	return e.Problem + "; " + e.Hint
}

func (e *Error) Unwrap() error { return e.Err }

func newError(reason Reason, url, hint, format string, args ...any) *Error {
	return &Error{Reason: reason, URL: url, Problem: fmt.Sprintf(format, args...), Hint: hint}
}

// Fields names the settings a user changes to fix an error, so that the
// messages of the CLI name its flags and those of the controller its spec
// fields. Empty fields take the controller's names (ControllerFields).
type Fields struct {
	// Version is where the version is set: "spec.version", "--version".
	Version string
	// URL is where the release URL is set.
	URL string
	// Credentials is where the token or basic auth comes from.
	Credentials string
	// CA is where the host's certificate authority is given.
	CA string
	// PlainHTTP is the setting that allows http:// URLs.
	PlainHTTP string
	// MaxSize is the setting that raises the size bound.
	MaxSize string
	// RedirectHosts is the setting that allows more redirect hosts.
	RedirectHosts string
}

// ControllerFields are the controller's names for the settings.
var ControllerFields = Fields{
	Version:       "spec.version",
	URL:           "spec.source.release.url",
	Credentials:   "spec.source.release.secretRef",
	CA:            "spec.source.release.certSecretRef",
	PlainHTTP:     "spec.source.release.insecure",
	MaxSize:       "the manager's --max-artifact-size",
	RedirectHosts: "the manager's --release-redirect-host",
}

// or fills the empty fields from ControllerFields.
func (f Fields) or() Fields {
	d := ControllerFields
	for _, p := range []struct{ v, def *string }{
		{&f.Version, &d.Version}, {&f.URL, &d.URL}, {&f.Credentials, &d.Credentials}, {&f.CA, &d.CA},
		{&f.PlainHTTP, &d.PlainHTTP}, {&f.MaxSize, &d.MaxSize}, {&f.RedirectHosts, &d.RedirectHosts},
	} {
		if *p.v == "" {
			*p.v = *p.def
		}
	}
	return f
}
