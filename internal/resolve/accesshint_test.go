package resolve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

func TestAccessHintNamesTheSecretToFix(t *testing.T) {
	refused := fmt.Errorf("resolving: %w", &artifact.AuthError{Ref: "r.example/p:v1", StatusCode: 401})
	// As oras-go returns a handshake with an unknown CA: url.Error around
	// tls.CertificateVerificationError around x509.UnknownAuthorityError.
	unknownCA := fmt.Errorf("resolving r.example/p:v1: %w", &url.Error{Op: "Head", URL: "https://r.example/v2/p/manifests/v1",
		Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}})
	access := func(secret, ca string) v1alpha1.OCIRegistryAccess {
		a := v1alpha1.OCIRegistryAccess{URL: "oci://r.example/p"}
		if secret != "" {
			a.SecretRef = &meta.LocalObjectReference{Name: secret}
		}
		if ca != "" {
			a.CertSecretRef = &meta.LocalObjectReference{Name: ca}
		}
		return a
	}
	// What Go's HTTP client says of a registry without TLS reached over
	// HTTPS.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	resp, noTLS := http.Get("https://" + plain.Listener.Addr().String() + "/v2/")
	if noTLS == nil {
		resp.Body.Close()
		t.Fatal("HTTPS to a plain HTTP server succeeded")
	}
	insecure := access("", "")
	insecure.Insecure = true
	provider := func(src *v1alpha1.ProviderSource) v1alpha1.Provider {
		return &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"}, Spec: v1alpha1.ProviderSpec{Version: "v1.0.0", Source: src}}
	}
	oci := func(a v1alpha1.OCIRegistryAccess) v1alpha1.Provider {
		return provider(&v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: a}})
	}
	chart := func(a v1alpha1.OCIRegistryAccess) v1alpha1.Provider {
		return provider(&v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: a}})
	}
	tests := []struct {
		name string
		obj  v1alpha1.Provider
		err  error
		want string // "" wants no hint
	}{
		{"refused credentials of a Secret", oci(access("creds", "ca")), refused,
			"; the credentials come from Secret team/creds (spec.source.oci.secretRef): update it"},
		{"refused credentials of a chart's Secret", chart(access("creds", "")), refused,
			"; the credentials come from Secret team/creds (spec.source.chart.secretRef)"},
		{"refused without credentials", oci(access("", "ca")), refused,
			"; spec.source.oci.secretRef is not set: name a kubernetes.io/dockerconfigjson Secret"},
		{"unknown CA with a CA Secret", oci(access("creds", "ca")), unknownCA,
			"; the registry's certificate is not signed by the CA in ca.crt of Secret team/ca (spec.source.oci.certSecretRef)"},
		{"unknown CA without a CA Secret", chart(access("creds", "")), unknownCA,
			"; spec.source.chart.certSecretRef is not set, so only the system's CAs are trusted"},
		{"HTTPS to a registry without TLS", oci(access("", "")), fmt.Errorf("resolving r.example/p:v1: %w", noTLS),
			"; the registry speaks plain HTTP, without TLS: set spec.source.oci.insecure: true"},
		{"plain HTTP allowed already", oci(insecure), noTLS, ""},
		{"another error", oci(access("creds", "ca")), &artifact.NotFoundError{Ref: "r.example/p:v1"}, ""},
		{"a catalog provider", provider(nil), refused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := (&Resolver{}).about(tt.obj)
			got := accessHint(&q, tt.err)
			if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
				t.Errorf("hint %q, want it to start with %q", got, tt.want)
			}
		})
	}
	if !errors.As(unknownCA, new(x509.UnknownAuthorityError)) {
		t.Fatal("the test's unknown-CA error does not unwrap to x509.UnknownAuthorityError")
	}
}
