package providers

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admitAll serves the admission webhooks of Service namespace/name with
// an answer that admits everything, under the certificate certsim issued
// for the provider's own webhook Certificate (secret), so the caBundle
// Capwright's namespace fixes pointed at it trusts it. It stands in for
// the provider's webhook server, whose pod kwok only simulates, where a
// test needs an object of the provider's kinds and not its validation.
func admitAll(t *testing.T, ctx context.Context, c client.Client, namespace, name, secret string) {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secret}, &s); err != nil {
		t.Fatalf("webhook certificate Secret %s/%s: %v", namespace, secret, err)
	}
	cert, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	env.Webhooks.Route(namespace, name, l.Addr().String())
	t.Cleanup(func() {
		env.Webhooks.Unroute(namespace, name)
		_ = srv.Close()
	})
}
