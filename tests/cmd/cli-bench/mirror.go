package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// Issue 33's mirror targets.
const (
	mirrorSpeedup      = 2.0
	warmRequestsPerRef = 1.0
)

// source is the registry the mirror reads, with what it holds.
type source struct {
	*server
	artifacts, images []artifact.Reference
}

// realSizeSource pushes the three providers with their controller images
// at real size and an SBOM referrer on each artifact and image index, as
// internal/mirror's benchmarks do.
func realSizeSource(h *harness, latency time.Duration) source {
	s := source{server: newServer(0)}
	h.Cleanup(s.close)
	access := artifact.Access{PlainHTTP: true}
	for _, p := range mirrortest.CAPIProviders(h, clusterctltest.Current, s.Host) {
		ref := artifact.Reference{Host: s.Host, Repository: p.Repository("capi")}
		pushed := mirrortest.PushProvider(h, access, ref, p, func(image string) mirrortest.Image {
			return mirrortest.RealSizeImage(mirrortest.ImageSeed(image))
		})
		s.artifacts = append(s.artifacts, pushed.Ref)
		mirrortest.PushReferrer(h, access, pushed.Ref, mirrortest.Resolve(h, access, pushed.Ref), "", []byte(`{"name":"artifact sbom"}`))
		for _, img := range pushed.Images {
			s.images = append(s.images, img.Ref)
			mirrortest.PushReferrer(h, access, img.Ref, img.Index, "", []byte(`{"name":"image sbom"}`))
		}
	}
	s.latency.Store(int64(latency))
	return s
}

// benchMirror times cold mirrors against sequential skopeo copies, each
// into a fresh target, then warm re-runs into a target that holds
// everything.
func benchMirror(h *harness, cli string, runs int, latency time.Duration) {
	src := realSizeSource(h, latency)
	skopeo, skopeoErr := exec.LookPath("skopeo")

	mirrorArgs := func(target string) []string {
		args := []string{"mirror", "--plain-http", "--to", target + "/mirror"}
		for _, ref := range src.artifacts {
			args = append(args, "oci://"+ref.String())
		}
		return args
	}
	// Each cold run gets its own cache, as a first run on a machine does.
	var coldRequests int64
	var coldCPU timings
	cold := func() time.Duration {
		target := newServer(latency)
		defer target.close()
		before := src.Requests()
		took, cpu := runCPU(h, []string{"XDG_CACHE_HOME=" + h.TempDir()}, cli, mirrorArgs(target.Host)...)
		coldRequests = src.Requests() - before + target.Requests()
		coldCPU = append(coldCPU, cpu)
		return took
	}
	var skopeoRequests int64
	sequential := func() time.Duration {
		target := newServer(latency)
		defer target.close()
		before := src.Requests()
		defer func() { skopeoRequests = src.Requests() - before + target.Requests() }()
		start := time.Now()
		for _, ref := range append(append([]artifact.Reference{}, src.artifacts...), src.images...) {
			run(h, nil, skopeo, "--insecure-policy", "copy", "--all", "--quiet",
				"--src-tls-verify=false", "--dest-tls-verify=false",
				"docker://"+ref.String(), "docker://"+target.Host+"/mirror/"+ref.Repository+":"+ref.Tag)
		}
		return time.Since(start)
	}

	var mirrorTimes, skopeoTimes timings
	for range runs {
		mirrorTimes = append(mirrorTimes, cold())
		if skopeoErr == nil {
			skopeoTimes = append(skopeoTimes, sequential())
		}
	}

	// Warm: one target that holds everything, one cache, as a scheduled
	// re-run on the same machine; and the same without the cache.
	target := newServer(latency)
	h.Cleanup(target.close)
	cache := []string{"XDG_CACHE_HOME=" + h.TempDir()}
	run(h, cache, cli, mirrorArgs(target.Host)...)
	var warm, uncached timings
	var warmRequests, warmSource, uncachedRequests int64
	for range runs {
		before, beforeSource := src.Requests()+target.Requests(), src.Requests()
		warm = append(warm, run(h, cache, cli, mirrorArgs(target.Host)...))
		warmRequests, warmSource = src.Requests()+target.Requests()-before, src.Requests()-beforeSource
		before = src.Requests() + target.Requests()
		uncached = append(uncached, run(h, cache, cli, append(mirrorArgs(target.Host), "--no-cache")...))
		uncachedRequests = src.Requests() + target.Requests() - before
	}

	refs := len(src.artifacts)
	fmt.Printf("\nmirror of %d providers with their %d images (2 platforms, real size) and SBOMs, %s before every registry request:\n", refs, len(src.images), latency)
	fmt.Printf("  capwright mirror (cold)            %s, %d requests; CPU %s\n", mirrorTimes, coldRequests, coldCPU)
	if skopeoErr != nil {
		fmt.Printf("  sequential skopeo copy --all       not measured: skopeo is not installed (%v); install it (apt-get install skopeo) for the comparison\n", skopeoErr)
	} else {
		speedup := float64(skopeoTimes.median()) / float64(mirrorTimes.median())
		fmt.Printf("  sequential skopeo copy --all       %s, %d requests (%s, %d references, no referrers)\n", skopeoTimes, skopeoRequests, filepath.Base(skopeo), refs+len(src.images))
		fmt.Printf("  speed-up                           %.2f× (target ≥ %.0f×)  %s\n", speedup, mirrorSpeedup, verdict(speedup >= mirrorSpeedup))
	}
	perRef := float64(warmRequests) / float64(refs)
	perAnyRef := float64(warmRequests) / float64(refs+len(src.images))
	// A reference is what skopeo copies one by one above: each artifact
	// and each image it runs.
	fmt.Printf("  capwright mirror (warm, cache)     %s, %d requests (%d at the source, %d at the target) = %.2f per reference of the %d skopeo copies (target ≤ %.0f)  %s; %.2f per artifact reference (one at each end)\n",
		warm, warmRequests, warmSource, warmRequests-warmSource, perAnyRef, refs+len(src.images), warmRequestsPerRef, verdict(perAnyRef <= warmRequestsPerRef), perRef)
	fmt.Printf("  capwright mirror (warm, no cache)  %s, %d requests\n", uncached, uncachedRequests)
	fmt.Printf("  warm with cache / cold             %.2f\n", float64(warm.median())/float64(mirrorTimes.median()))
}
