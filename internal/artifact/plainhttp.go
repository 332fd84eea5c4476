package artifact

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// PlainHTTPToTLSError is a registry asked for plain HTTP that speaks TLS:
// Go's TLS servers, and most registries behind one, answer a plain HTTP
// request with a bare "400 Bad Request", which says nothing of the cause.
type PlainHTTPToTLSError struct {
	Host string
}

func (e *PlainHTTPToTLSError) Error() string {
	return fmt.Sprintf("registry %s speaks TLS (https), but plain HTTP was asked for: drop --plain-http (CLI) or spec.source.oci.insecure (provider), and trust its certificate authority if it is private", e.Host)
}

// AnswersPlainHTTP tells whether err is a registry reached over HTTPS
// answering plain HTTP (a registry without TLS). net/http reports it with
// an untyped error, so its text is what there is to recognise.
func AnswersPlainHTTP(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// plainHTTPCheck tells a TLS registry reached over plain HTTP from any
// other 400: on a 400 to an http:// URL it tries a TLS handshake with the
// host (no request is sent, the certificate is not judged: it only asks
// whether the host speaks TLS).
type plainHTTPCheck struct {
	next http.RoundTripper
}

func (c plainHTTPCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest || req.URL.Scheme != "http" {
		return resp, err
	}
	if speaksTLS(req.Context(), req.URL.Host) {
		resp.Body.Close()
		return nil, &PlainHTTPToTLSError{Host: req.URL.Host}
	}
	return resp, nil
}

func speaksTLS(ctx context.Context, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dialer := &tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{
		MinVersion: tls.VersionTLS12,
		//nolint:gosec // only asks whether the host speaks TLS; nothing is sent over it
		InsecureSkipVerify: true,
	}}
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
