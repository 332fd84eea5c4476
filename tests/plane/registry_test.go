package plane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// TestPrivateRegistry proves the TLS and basic-auth registry against what
// its clients on the plane expect: oras-go (the manager) retries a
// refused request with the credentials of the Basic challenge, and
// go-containerregistry (source-controller) first probes /v2/ without
// credentials and reads the challenge from its 401. Both trust only the
// registry's CA, and both are refused once the password rotated. The
// e2e suite proves the same with the real source-controller.
func TestPrivateRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, err := NewCA("private-registry-ca")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := StartRegistryWith(RegistryOptions{CA: ca, Username: "robot", Password: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Close() }()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(reg.CACertPEM) {
		t.Fatal("CACertPEM holds no certificate")
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}}}

	repo := func(user, pass string) *remote.Repository {
		r, err := remote.NewRepository(reg.Host + "/private/config")
		if err != nil {
			t.Fatal(err)
		}
		r.Client = &auth.Client{Client: trusting, Cache: auth.NewCache(),
			Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: user, Password: pass})}
		return r
	}
	blob := []byte(`{}`)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	if err := repo("robot", "first").Blobs().Push(ctx, desc, bytes.NewReader(blob)); err != nil {
		t.Fatalf("oras-go push with the credentials: %v", err)
	}

	// go-containerregistry's handshake: an anonymous GET /v2/ must answer
	// 401 with a Basic challenge (not 200, not Bearer), then basic auth
	// is sent on every request.
	probe := func(user, pass string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+reg.Host+"/v2/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := trusting.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := probe("", ""); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Basic realm="`) {
		t.Fatalf("anonymous /v2/ probe: %s, WWW-Authenticate %q; want 401 with a Basic challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := probe("robot", "first"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/v2/ with the credentials: %s", resp.Status)
	}

	if err := reg.SetCredentials("robot", "second"); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	if resp := probe("robot", "first"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v2/ with the old password: %s, want 401", resp.Status)
	}
	_, err = repo("robot", "first").Blobs().Resolve(ctx, desc.Digest.String())
	var eresp *errcode.ErrorResponse
	if !errors.As(err, &eresp) || eresp.StatusCode != http.StatusUnauthorized {
		t.Errorf("oras-go with the old password: %v, want 401", err)
	}
	if resp := probe("robot", "second"); resp.StatusCode != http.StatusOK {
		t.Errorf("/v2/ with the new password: %s", resp.Status)
	}
	if _, err := repo("robot", "second").Blobs().Resolve(ctx, desc.Digest.String()); err != nil {
		t.Errorf("oras-go with the new password: %v", err)
	}
	results := map[AuthResult]int{}
	for _, e := range reg.AuthLog(rotated) {
		results[e.Result]++
	}
	if results[AuthRefused] != 2 || results[AuthAccepted] != 2 || results[AuthChallenged] != 2 {
		t.Errorf("auth log since the rotation: %v; want 2 refused (old password), 2 accepted (new), 2 challenged (oras-go's first tries)", results)
	}

	// A client that trusts another CA does not get past the handshake.
	other, err := NewCA("another-ca")
	if err != nil {
		t.Fatal(err)
	}
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(other.CertPEM())
	distrusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: otherPool}}}
	var uerr x509.UnknownAuthorityError
	if _, err := distrusting.Get("https://" + reg.Host + "/v2/"); !errors.As(err, &uerr) {
		t.Errorf("a client trusting another CA: %v, want x509.UnknownAuthorityError", err)
	}

	plain, err := StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	if err := plain.SetCredentials("robot", "x"); err == nil {
		t.Error("SetCredentials on the plain registry succeeded")
	}
}

// TestRegistryOutages takes a registry down and up again, and makes it
// hang: while stopped, connections are refused; started again, it serves
// what it held on the same host; hanging, it answers nothing until Answer.
func TestRegistryOutages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Close() }()
	repo, err := remote.NewRepository(reg.Host + "/outage/config")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	blob := []byte(`{}`)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	if err := repo.Blobs().Push(ctx, desc, bytes.NewReader(blob)); err != nil {
		t.Fatal(err)
	}
	exists := func(ctx context.Context) error {
		_, err := repo.Blobs().Resolve(ctx, desc.Digest.String())
		return err
	}

	host := reg.Host
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := exists(ctx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a stopped registry: %v, want connection refused", err)
	}
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	if reg.Host != host {
		t.Errorf("started again on %s, not on %s", reg.Host, host)
	}
	if err := exists(ctx); err != nil {
		t.Errorf("the registry started again lost its content: %v", err)
	}

	reg.Hang()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := exists(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a hanging registry: %v, want no answer before the deadline", err)
	}
	reg.Answer()
	if err := exists(ctx); err != nil {
		t.Errorf("a registry that answers again: %v", err)
	}
}
