package artifact

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Access is how to reach and authenticate to a registry. TLS certificates
// are verified for https unless InsecureSkipVerify is set, which only the
// CLI offers, on an explicit flag.
type Access struct {
	// PlainHTTP talks http instead of https (a source's insecure).
	PlainHTTP bool
	// RootCAs trusted for the registry's certificate; nil means the system
	// pool.
	RootCAs *x509.CertPool
	// InsecureSkipVerify accepts any certificate (the CLI's --insecure).
	InsecureSkipVerify bool
	// ClientCert is presented for mutual TLS.
	ClientCert *tls.Certificate
	// Username and Password for basic auth or a token exchange.
	Username, Password string
	// IdentityToken is an OAuth2 refresh token (the "identitytoken" of a
	// docker config), used instead of Username and Password.
	IdentityToken string
	// Credentials looks up credentials per registry host (e.g. the docker
	// credential chain of the CLI); when set it wins over Username,
	// Password and IdentityToken.
	Credentials auth.CredentialFunc
	// UserAgent identifies Capwright to the registry.
	UserAgent string
}

// ErrNoCertificate is PEM data that holds no certificate.
var ErrNoCertificate = errors.New("no PEM certificate in it")

// CertPool is the system's certificate authorities and those of pem: what
// a CA the user gives (the CLI's --ca-file and --release-ca-file, a
// Secret's ca.crt) is trusted as, in addition to the system's, as Flux's
// source-controller trusts it, so a host with a publicly signed
// certificate still passes. It fails with ErrNoCertificate when pem holds
// no certificate. Registries and release hosts alike take the pool.
func CertPool(pem []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, ErrNoCertificate
	}
	return pool, nil
}

// Repository returns an oras-go repository for ref with this access, and a
// function that releases its idle connections. maxMetadata bounds the
// manifests and other metadata the repository reads.
func (a Access) Repository(ref Reference, maxMetadata int64) (*remote.Repository, func(), error) {
	repo, err := remote.NewRepository(ref.Host + "/" + ref.Repository)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid repository %s: %w", ref.URL(), err)
	}
	repo.PlainHTTP = a.PlainHTTP
	repo.MaxMetadataBytes = maxMetadata

	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		IdleConnTimeout:       90 * time.Second,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    a.RootCAs,
			//nolint:gosec // only on the CLI's explicit --insecure flag
			InsecureSkipVerify: a.InsecureSkipVerify,
		},
	}
	if a.ClientCert != nil {
		transport.TLSClientConfig.Certificates = []tls.Certificate{*a.ClientCert}
	}
	var base http.RoundTripper = transport
	if a.PlainHTTP {
		base = plainHTTPCheck{next: transport}
	}
	client := &auth.Client{
		Client: &http.Client{Transport: retry.NewTransport(base)},
		Header: http.Header{},
		Cache:  auth.NewCache(),
	}
	if a.UserAgent != "" {
		client.Header.Set("User-Agent", a.UserAgent)
	}
	if a.Credentials != nil {
		client.Credential = a.Credentials
	} else if cred := a.credential(); cred != auth.EmptyCredential {
		client.Credential = auth.StaticCredential(ref.Host, cred)
	}
	repo.Client = client
	return repo, transport.CloseIdleConnections, nil
}

func (a Access) credential() auth.Credential {
	if a.IdentityToken != "" {
		return auth.Credential{Username: a.Username, RefreshToken: a.IdentityToken}
	}
	return auth.Credential{Username: a.Username, Password: a.Password}
}
