package fluxartifact

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// Handler serves stored artifacts read-only: GET and HEAD of a file's
// exact path. Directories are not listed, so an artifact can only be
// fetched by the path its ExternalArtifact's status names, which holds its
// digest.
func (s *Storage) Handler() http.Handler {
	files := http.FileServer(http.Dir(s.root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		clean := path.Clean("/" + r.URL.Path)
		if clean != r.URL.Path || strings.Contains(clean, "/.") {
			http.NotFound(w, r)
			return
		}
		if !s.present(clean) && !s.restore(r.Context(), clean) {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// present tells whether the file at the URL path p is stored.
func (s *Storage) present(p string) bool {
	fi, err := os.Stat(s.local(strings.TrimPrefix(p, "/")))
	return err == nil && fi.Mode().IsRegular()
}

// restore asks Restore to store again the artifact of the object whose
// file p names (<kind>/<namespace>/<name>/<file>), and tells whether p is
// stored now: a replica that did not store an artifact, or lost it, can
// still serve it.
func (s *Storage) restore(ctx context.Context, p string) bool {
	if s.Restore == nil {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) != 4 {
		return false
	}
	if _, err := objectDir(parts[0], parts[1], parts[2]); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Restore(ctx, parts[0], parts[1], parts[2]); err != nil {
		return false
	}
	return s.present(p)
}

// Server serves the storage on an address until its context ends; it is a
// controller-runtime Runnable that runs on every replica, leader or not.
type Server struct {
	Storage *Storage
	Addr    string
	// Listening, when set, receives the address once it is bound.
	Listening func(addr string)
}

// Start serves until ctx ends.
func (srv *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		return err
	}
	if srv.Listening != nil {
		srv.Listening(ln.Addr().String())
	}
	hs := &http.Server{Handler: srv.Storage.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(shutdown); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// NeedLeaderElection is false: the server runs on every replica, since
// the Service may send kustomize-controller to any of them. The leader
// stores artifacts as it reconciles; another replica asked for one it
// does not hold packs it again (Storage.Restore).
func (srv *Server) NeedLeaderElection() bool { return false }
