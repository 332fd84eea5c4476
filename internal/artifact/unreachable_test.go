package artifact_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

// TestUnreachableTellsOutagesFromAnswers resolves tags against registries
// that fail in different ways: those that cannot be reached or do not
// answer are outages; those that answer (not found, access refused) or
// whose certificate does not verify are not.
func TestUnreachableTellsOutagesFromAnswers(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	closed := registrytest.New(t, registrytest.Options{})
	closed.Close()
	stuck := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { <-req.Context().Done() }))
	t.Cleanup(stuck.Close)
	up := registrytest.New(t, registrytest.Options{})
	private := registrytest.New(t, registrytest.Options{Username: "robot", Password: "secret"})
	tlsReg := registrytest.New(t, registrytest.Options{TLS: true})

	tests := []struct {
		name        string
		host        string
		access      artifact.Access
		timeout     time.Duration
		unreachable bool
	}{
		{"connection refused", closed.Host, up.Access(), 0, true},
		{"no answer in time", strings.TrimPrefix(stuck.URL, "http://"), up.Access(), 200 * time.Millisecond, true},
		{"server error", status(http.StatusServiceUnavailable), up.Access(), 0, true},
		{"throttled", status(http.StatusTooManyRequests), up.Access(), 0, true},
		{"tag not found", up.Host, up.Access(), 0, false},
		{"access refused", private.Host, up.Access(), 0, false},
		{"certificate of an unknown authority", tlsReg.Host, artifact.Access{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			_, err := (&artifact.Fetcher{}).Resolve(ctx, artifact.Reference{Host: tt.host, Repository: "capi/core", Tag: "v1.14.2"}, tt.access)
			if err == nil {
				t.Fatal("Resolve succeeded")
			}
			if got := artifact.Unreachable(err); got != tt.unreachable {
				t.Errorf("Unreachable(%v) = %v, want %v", err, got, tt.unreachable)
			}
		})
	}
}
