package artifact

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPlainHTTPCheck(t *testing.T) {
	badRequest := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "bad", http.StatusBadRequest) })
	tlsServer := httptest.NewTLSServer(badRequest)
	defer tlsServer.Close()
	plainServer := httptest.NewServer(badRequest)
	defer plainServer.Close()
	check := plainHTTPCheck{next: http.DefaultTransport}

	// Plain HTTP to the TLS server: Go's TLS server answers 400 itself.
	req, _ := http.NewRequest(http.MethodHead, "http://"+strings.TrimPrefix(tlsServer.URL, "https://")+"/v2/", nil)
	_, err := check.RoundTrip(req)
	var plainTLS *PlainHTTPToTLSError
	if !errors.As(err, &plainTLS) || !strings.Contains(err.Error(), "speaks TLS") {
		t.Errorf("plain HTTP to a TLS registry: %v, want a PlainHTTPToTLSError", err)
	}

	// A plain HTTP registry's own 400 stays a 400.
	req, _ = http.NewRequest(http.MethodHead, plainServer.URL+"/v2/", nil)
	resp, err := check.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP registry's 400: %v %v", resp, err)
	}
	resp.Body.Close()
}
