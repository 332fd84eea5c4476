package plane

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Service stands in for a Kubernetes Service in front of the replicas of
// a component running on the plane: an HTTP proxy on loopback that sends
// each request to the next backend in turn, skipping one that refuses the
// connection (a replica that is gone, as a Service's endpoints drop a pod
// that is not ready).
type Service struct {
	// URL is http://host:port of the Service.
	URL      string
	backends atomic.Pointer[[]string]
	next     atomic.Uint64
	server   *http.Server
}

// StartService serves a Service; SetBackends gives it its replicas (which
// may need its URL to start).
func StartService() (*Service, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, &ComponentError{Component: "service", Cause: err}
	}
	s := &Service{URL: "http://" + l.Addr().String()}
	s.server = &http.Server{Handler: http.HandlerFunc(s.proxy), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// SetBackends makes backends (host:port each) the Service's replicas.
func (s *Service) SetBackends(backends ...string) { s.backends.Store(&backends) }

// Close stops the Service.
func (s *Service) Close() error { return s.server.Close() }

func (s *Service) proxy(w http.ResponseWriter, r *http.Request) {
	var backends []string
	if b := s.backends.Load(); b != nil {
		backends = *b
	}
	start := s.next.Add(1)
	for i := range uint64(len(backends)) {
		backend := backends[(start+i)%uint64(len(backends))]
		out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+backend+r.URL.RequestURI(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			continue // gone: the next replica answers
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		_ = resp.Body.Close()
		return
	}
	http.Error(w, "no replica answers", http.StatusServiceUnavailable)
}
