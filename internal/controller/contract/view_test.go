package contract

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
)

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]clustersv1alpha1.APIEndpoint{
		"https://10.0.0.1:6443":   {Host: "10.0.0.1", Port: 6443},
		"https://cp.example.com":  {Host: "cp.example.com", Port: 443},
		"https://cp.example.com/": {Host: "cp.example.com", Port: 443},
		"cp.example.com:6443":     {Host: "cp.example.com", Port: 6443},
		"cp.example.com":          {Host: "cp.example.com", Port: 443},
		"[::1]:6443":              {Host: "::1", Port: 6443},
	} {
		got, err := parseEndpoint(in)
		if err != nil || got != want {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"http://cp:6443", "ftp://x", "https://cp:99999", "cp:port", "https://user@cp:6443", "https://cp/api", "a b", "https://"} {
		if got, err := parseEndpoint(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want an error naming it", bad, got, err)
		}
	}
}

func obj(content map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: content}
}

func TestDefaultExpressionsReadTheNormalizedStatus(t *testing.T) {
	var c expressionCache
	x, err := c.compile(&clustersv1alpha1.StatusFrom{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// No status at all: not ready, no error.
	v, err := x.evaluate(ctx, obj(map[string]any{"apiVersion": "x/v1", "kind": "X", "metadata": map[string]any{"name": "a"}}))
	if err != nil || v.Ready || !v.Endpoint.IsZero() {
		t.Fatalf("an object without status: %+v, %v", v, err)
	}
	v, err = x.evaluate(ctx, obj(map[string]any{"metadata": map[string]any{"name": "a", "generation": int64(2)},
		"status": map[string]any{"ready": true, "endpoint": "https://10.1.2.3:6443", "version": "v1.31.0", "observedGeneration": int64(2)}}))
	if err != nil || !v.Ready || v.Endpoint.Port != 6443 || v.Version != "v1.31.0" {
		t.Fatalf("a ready object: %+v, %v", v, err)
	}
	// A status behind the generation is not ready whatever it says.
	v, err = x.evaluate(ctx, obj(map[string]any{"metadata": map[string]any{"name": "a", "generation": int64(3)},
		"status": map[string]any{"ready": true, "observedGeneration": int64(2)}}))
	if err != nil || v.Ready || !v.Stale {
		t.Fatalf("a stale object: %+v, %v", v, err)
	}
	v, err = x.evaluate(ctx, obj(map[string]any{"status": map[string]any{"ready": false, "reason": "QuotaExceeded", "message": "no room"}}))
	if err != nil || v.Ready || v.Reason != "QuotaExceeded" || v.Message != "no room" {
		t.Fatalf("a failing object: %+v, %v", v, err)
	}
}

func TestBadExpressionsNameTheirField(t *testing.T) {
	var c expressionCache
	if _, err := c.compile(&clustersv1alpha1.StatusFrom{Ready: "status.ready =="}); err == nil || !strings.Contains(err.Error(), "spec.statusFrom.ready") {
		t.Fatalf("a ready expression that does not parse: %v", err)
	}
	x, err := c.compile(&clustersv1alpha1.StatusFrom{Endpoint: "status.port"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.evaluate(context.Background(), obj(map[string]any{"status": map[string]any{"port": int64(6443)}}))
	if err == nil || !strings.Contains(err.Error(), "spec.statusFrom.endpoint") {
		t.Fatalf("an endpoint expression of the wrong type: %v", err)
	}
	x, err = c.compile(&clustersv1alpha1.StatusFrom{Endpoint: `"ftp://cp"`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = x.evaluate(context.Background(), obj(map[string]any{})); err == nil || !strings.Contains(err.Error(), "neither host[:port] nor an https:// URL") {
		t.Fatalf("an endpoint that is no endpoint: %v", err)
	}
}
