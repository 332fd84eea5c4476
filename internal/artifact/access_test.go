package artifact_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

func TestRegistryCredentials(t *testing.T) {
	const user, password = "capwright", "s3cret-Passw0rd"
	ref := registrytest.New(t, registrytest.Options{Username: user, Password: password}).Ref("private/core", "v1.14.2")
	files := map[string][]byte{"metadata.yaml": []byte("m")}
	ctx := context.Background()

	good := artifact.Access{PlainHTTP: true, Username: user, Password: password}
	if _, err := artifact.Push(ctx, ref, files, nil, good); err != nil {
		t.Fatalf("Push with credentials: %v", err)
	}
	if _, err := (&artifact.Fetcher{}).Fetch(ctx, ref, good); err != nil {
		t.Fatalf("Fetch with credentials: %v", err)
	}

	tests := []struct {
		name   string
		access artifact.Access
	}{
		{"wrong password", artifact.Access{PlainHTTP: true, Username: user, Password: "wrong-" + password}},
		{"no credentials", artifact.Access{PlainHTTP: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&artifact.Fetcher{}).Fetch(ctx, ref, tt.access)
			var authErr *artifact.AuthError
			if !errors.As(err, &authErr) || authErr.StatusCode != 401 {
				t.Fatalf("Fetch error = %v, want *AuthError with status 401", err)
			}
			if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), user) {
				t.Errorf("error %q leaks credentials", err)
			}
			if !strings.Contains(err.Error(), ref.String()) || !strings.Contains(err.Error(), "credentials") {
				t.Errorf("error %q should name the artifact and point at the credentials", err)
			}
			_, err = artifact.Push(ctx, ref, files, nil, tt.access)
			if !errors.As(err, &authErr) {
				t.Errorf("Push error = %v, want *AuthError", err)
			}
		})
	}
}

func TestRegistryTLS(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{TLS: true})
	ref := reg.Ref("tls/core", "v1.14.2")
	ctx := context.Background()

	trusted := artifact.Access{RootCAs: reg.RootCAs}
	if _, err := artifact.Push(ctx, ref, map[string][]byte{"metadata.yaml": []byte("m")}, nil, trusted); err != nil {
		t.Fatalf("Push over TLS with the registry's CA: %v", err)
	}
	if _, err := (&artifact.Fetcher{}).Fetch(ctx, ref, trusted); err != nil {
		t.Fatalf("Fetch over TLS with the registry's CA: %v", err)
	}
	_, err := (&artifact.Fetcher{}).Fetch(ctx, ref, artifact.Access{})
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Fatalf("Fetch without the CA = %v, want a certificate verification error", err)
	}
}

// TestCertPool: a CA the user gives is trusted beside the system's; PEM
// without a certificate is refused.
func TestCertPool(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	pool, err := artifact.CertPool(ca)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Certificate().Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("the given CA is not trusted: %v", err)
	}
	if _, err := artifact.CertPool([]byte("not a certificate")); !errors.Is(err, artifact.ErrNoCertificate) {
		t.Errorf("PEM without a certificate: %v, want ErrNoCertificate", err)
	}
}
