package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// server is an in-process OCI registry (go-containerregistry's, which
// speaks the distribution protocol with the referrers API) behind a
// reverse proxy that waits latency before each request, as over a WAN,
// and counts the requests it forwards.
type server struct {
	// Host is the proxy's host:port, what references name.
	Host     string
	requests atomic.Int64
	latency  atomic.Int64
	close    func()
}

func newServer(latency time.Duration) *server {
	backend := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: strings.TrimPrefix(backend.URL, "http://")})
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	s := &server{}
	s.latency.Store(int64(latency))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		time.Sleep(time.Duration(s.latency.Load()))
		proxy.ServeHTTP(w, r)
	}))
	s.Host = strings.TrimPrefix(front.URL, "http://")
	s.close = func() {
		front.Close()
		backend.Close()
	}
	return s
}

// Requests is the number of requests served so far.
func (s *server) Requests() int64 { return s.requests.Load() }
