package plane

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI distribution registry served in-process on loopback
// (plain HTTP, no auth), with the referrers API. Flux reaches it with
// `spec.insecure: true`.
type Registry struct {
	// Host is host:port, e.g. 127.0.0.1:41234.
	Host   string
	server *http.Server
}

// StartRegistry serves a new in-memory registry on a free loopback port.
func StartRegistry() (*Registry, error) { return startRegistry() }

func startRegistry() (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, &ComponentError{Component: "registry", Cause: err}
	}
	handler := registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithReferrersSupport(true),
	)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &Registry{Host: l.Addr().String(), server: srv}, nil
}

// Close stops the registry.
func (r *Registry) Close() error { return r.close() }

func (r *Registry) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.server.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
