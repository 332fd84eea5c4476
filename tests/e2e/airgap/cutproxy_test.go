package airgap

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// cutProxy stands between `capwright mirror` and the site's registry as
// the network does: it forwards every request, and while cutting it lets
// the first uploads of blobs through, then drops the connection in the
// middle of every further blob upload, as a lost link or a killed copy
// leaves a mirror. It records the digests of the blob uploads the
// registry completed.
type cutProxy struct {
	*httptest.Server
	// Host is host:port of the proxy.
	Host string

	mu      sync.Mutex
	cutting bool
	allowed int
	// uploaded are the digests of completed blob uploads, in order.
	uploaded []string
	// uploadedBytes is the body bytes of completed blob uploads.
	uploadedBytes int64
	cut           int
}

// newCutProxy forwards to the plain-HTTP registry at host.
func newCutProxy(host string) *cutProxy {
	p := &cutProxy{}
	forward := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A blob upload ends with a PUT carrying the blob's digest (or a
		// POST with it, monolithic); a mount carries no body.
		digest := r.URL.Query().Get("digest")
		upload := strings.Contains(r.URL.Path, "/blobs/uploads/") && digest != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost)
		if upload && p.cutNow() {
			// Read part of the blob, then drop the connection.
			_, _ = io.CopyN(io.Discard, r.Body, r.ContentLength/2)
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		rec := &statusRecorder{ResponseWriter: w}
		forward.ServeHTTP(rec, r)
		if upload && rec.status == http.StatusCreated {
			p.mu.Lock()
			p.uploaded = append(p.uploaded, digest)
			p.uploadedBytes += r.ContentLength
			p.mu.Unlock()
		}
	}))
	p.Host = strings.TrimPrefix(p.URL, "http://")
	return p
}

// cutAfter lets allowed more blob uploads through, then cuts every
// further one until stopCutting.
func (p *cutProxy) cutAfter(allowed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutting, p.allowed = true, allowed
}

// stopCutting forwards every request from now on.
func (p *cutProxy) stopCutting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutting = false
}

func (p *cutProxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cutting {
		return false
	}
	if p.allowed > 0 {
		p.allowed--
		return false
	}
	p.cut++
	return true
}

// takeUploads returns the completed blob uploads since the last call,
// their body bytes and how many uploads were cut, and starts counting anew.
func (p *cutProxy) takeUploads() (digests []string, bytes int64, cut int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	digests, bytes, cut = p.uploaded, p.uploadedBytes, p.cut
	p.uploaded, p.uploadedBytes, p.cut = nil, 0, 0
	return digests, bytes, cut
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
