package mirror_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/mirror"
)

// peak tracks the most requests of a kind in flight at once.
type peak struct{ now, max atomic.Int64 }

func (p *peak) enter() {
	n := p.now.Add(1)
	for m := p.max.Load(); n > m && !p.max.CompareAndSwap(m, n); m = p.max.Load() {
	}
}

func (p *peak) leave() { p.now.Add(-1) }

// TestMirrorConcurrency checks the bounds of a run: Concurrency blob
// uploads in flight at most, and MetadataRequestsPerTransfer times as many
// other requests, at a target that answers each request after a delay.
func TestMirrorConcurrency(t *testing.T) {
	src := newSource(t, registrytest.Options{})
	dst := registrytest.New(t, registrytest.Options{})
	var uploads, others peak
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: dst.Host})
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := &others
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/") {
			p = &uploads
		}
		p.enter()
		defer p.leave()
		time.Sleep(5 * time.Millisecond)
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	host := strings.TrimPrefix(front.URL, "http://")

	const concurrency = 2
	summary, err := mirror.Run(context.Background(), src.refs(), mirror.Options{
		Target:       mirror.Target{Host: host, Prefix: "mirror"},
		SourceAccess: src.reg.Access(), TargetAccess: artifact.Access{PlainHTTP: true},
		Concurrency: concurrency,
	})
	if err != nil {
		t.Fatal(err)
	}
	if summary.Blobs.Copied == 0 {
		t.Fatal("nothing was uploaded")
	}
	if got := uploads.max.Load(); got > concurrency {
		t.Errorf("%d blob uploads were in flight at once, want at most %d", got, concurrency)
	}
	// The uploads' own POSTs are among the others.
	if got, bound := others.max.Load(), int64(concurrency*(mirror.MetadataRequestsPerTransfer+1)); got > bound {
		t.Errorf("%d other requests were in flight at once, want at most %d", got, bound)
	}
	if others.max.Load() <= concurrency {
		t.Errorf("at most %d small requests were in flight at once: they wait for the transfer slots", others.max.Load())
	}
}
