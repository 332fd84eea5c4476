package mirror_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// Benchmarks of mirroring the core, kubeadm bootstrap and kubeadm
// control-plane providers with their controller images at real size
// (mirrortest.RealSizeImage: amd64 and arm64, 27–36 MB per platform in
// five layers, the 2 MiB base shared by all) and an SBOM on each artifact and
// image index:
//
//	go test ./internal/mirror -run '^$' -bench . -benchtime 3x
//
// BenchmarkMirror runs the mirror; BenchmarkOrasExtendedCopy copies the
// same references (artifacts and images) one after another with
// oras.ExtendedCopy, which also copies the referrers of each root, like the
// mirror; BenchmarkMirrorAgain runs the mirror when the target holds
// everything, without and with the cache of the first run. Each iteration of the first two gets a fresh target
// registry, set up outside the timer. Both registries run in process; with
// latency=10ms each request to them waits 10 ms first, as over a WAN. They
// report MB/op: megabytes (10^6) of blobs uploaded.

var latencies = []time.Duration{0, 10 * time.Millisecond}

// benchSource is the source registry of the benchmarks.
type benchSource struct {
	access            artifact.Access
	artifacts, images []artifact.Reference
	setLatency        func(time.Duration)
}

// realSizeSource pushes the providers with real-size images to a registry
// reached through a proxy that can add latency, so that the image
// references of the components go through it too.
func realSizeSource(b *testing.B) benchSource {
	b.Helper()
	reg := registrytest.New(b, registrytest.Options{})
	host, setLatency := latencyProxy(b, reg.Host)
	src := benchSource{access: reg.Access(), setLatency: setLatency}
	for _, p := range mirrortest.CAPIProviders(b, clusterctltest.Current, host) {
		ref := artifact.Reference{Host: host, Repository: p.Repository(project)}
		pushed := mirrortest.PushProvider(b, src.access, ref, p, func(image string) mirrortest.Image {
			return mirrortest.RealSizeImage(mirrortest.ImageSeed(image))
		})
		src.artifacts = append(src.artifacts, pushed.Ref)
		mirrortest.PushReferrer(b, src.access, pushed.Ref, mirrortest.Resolve(b, src.access, pushed.Ref), "", []byte(`{"name":"artifact sbom"}`))
		for _, img := range pushed.Images {
			src.images = append(src.images, img.Ref)
			mirrortest.PushReferrer(b, src.access, img.Ref, img.Index, "", []byte(`{"name":"image sbom"}`))
		}
	}
	runtime.GC()
	return src
}

// latencyProxy serves host through a reverse proxy that waits before each
// request, as long as the returned function last set.
func latencyProxy(b *testing.B, host string) (string, func(time.Duration)) {
	b.Helper()
	var delay atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delay.Load()))
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func(d time.Duration) { delay.Store(int64(d)) }
}

// benchTarget starts a fresh target registry behind a latency proxy.
func benchTarget(b *testing.B, latency time.Duration) (string, artifact.Access, func()) {
	b.Helper()
	reg := registrytest.New(b, registrytest.Options{})
	host, setLatency := latencyProxy(b, reg.Host)
	setLatency(latency)
	runtime.GC()
	return host, reg.Access(), reg.Close
}

func BenchmarkMirror(b *testing.B) {
	src := realSizeSource(b)
	for _, latency := range latencies {
		// 4 is the default; 3 is oras-go's default, for the comparison.
		for _, concurrency := range []int{1, 3, mirror.DefaultConcurrency, 8} {
			b.Run(fmt.Sprintf("latency=%s/concurrency=%d", latency, concurrency), func(b *testing.B) {
				src.setLatency(latency)
				var copied int64
				for range b.N {
					b.StopTimer()
					host, access, stop := benchTarget(b, latency)
					b.StartTimer()
					summary, err := mirror.Run(context.Background(), src.artifacts, mirror.Options{
						Target:       mirror.Target{Host: host, Prefix: "mirror"},
						SourceAccess: src.access, TargetAccess: access, Concurrency: concurrency,
					})
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					copied += summary.Blobs.BytesCopied
					stop()
					b.StartTimer()
				}
				b.ReportMetric(float64(copied)/1e6/float64(b.N), "MB/op")
			})
		}
	}
}

func BenchmarkOrasExtendedCopy(b *testing.B) {
	src := realSizeSource(b)
	for _, latency := range latencies {
		b.Run(fmt.Sprintf("latency=%s", latency), func(b *testing.B) {
			src.setLatency(latency)
			var copied atomic.Int64
			opts := oras.ExtendedCopyOptions{ExtendedCopyGraphOptions: oras.ExtendedCopyGraphOptions{CopyGraphOptions: oras.CopyGraphOptions{
				PostCopy: func(_ context.Context, desc ocispec.Descriptor) error {
					if desc.MediaType != ocispec.MediaTypeImageManifest && desc.MediaType != ocispec.MediaTypeImageIndex {
						copied.Add(desc.Size)
					}
					return nil
				},
			}}}
			for range b.N {
				b.StopTimer()
				host, access, stop := benchTarget(b, latency)
				b.StartTimer()
				for _, ref := range slices.Concat(src.artifacts, src.images) {
					from, release, err := src.access.Repository(ref, mirror.DefaultMaxMetadataSize)
					if err != nil {
						b.Fatal(err)
					}
					to, releaseTo, err := access.Repository(artifact.Reference{Host: host, Repository: "mirror/" + ref.Repository}, mirror.DefaultMaxMetadataSize)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := oras.ExtendedCopy(context.Background(), from, ref.Tag, to, ref.Tag, opts); err != nil {
						b.Fatalf("copying %s: %v", ref, err)
					}
					release()
					releaseTo()
				}
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(copied.Load())/1e6/float64(b.N), "MB/op")
		})
	}
}

func BenchmarkMirrorAgain(b *testing.B) {
	src := realSizeSource(b)
	for _, latency := range latencies {
		// With a cache, the re-run checks tags instead of reading the
		// artifacts and walking their content again.
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("latency=%s/cache=%v", latency, cached), func(b *testing.B) {
				src.setLatency(latency)
				host, access, stop := benchTarget(b, latency)
				defer stop()
				opts := mirror.Options{Target: mirror.Target{Host: host, Prefix: "mirror"}, SourceAccess: src.access, TargetAccess: access}
				if cached {
					opts.Cache = mirror.NewCache(b.TempDir())
				}
				if _, err := mirror.Run(context.Background(), src.artifacts, opts); err != nil {
					b.Fatal(err)
				}
				var copied int64
				b.ResetTimer()
				for range b.N {
					summary, err := mirror.Run(context.Background(), src.artifacts, opts)
					if err != nil {
						b.Fatal(err)
					}
					copied += summary.Blobs.BytesCopied
					if summary.Blobs.Copied+summary.Manifests.Copied != 0 {
						b.Fatalf("the repeated run copied: %+v", summary.Blobs)
					}
					if cached && summary.Artifacts.Skipped != len(src.artifacts) {
						b.Fatalf("the cached re-run: artifacts %+v", summary.Artifacts)
					}
				}
				b.ReportMetric(float64(copied)/1e6/float64(b.N), "MB/op")
			})
		}
	}
}
