// Package providers is the end-to-end suite of the provider kinds: real
// Cluster API release artifacts published to the plane's registry,
// installed, upgraded and deleted through the real Flux controllers by the
// Capwright manager built from the working tree.
package providers

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var env *plane.Plane

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	start := time.Now()
	p, err := plane.Start(ctx, plane.Options{Log: os.Stderr, AuditLog: true})
	if err == nil {
		err = p.BuildCapwright(ctx)
	}
	if err == nil {
		// Catalog providers (no spec.source) come from registry.k8s.io; the
		// plane's registry stands in as its mirror, as at an air-gapped site.
		_, err = p.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{
			"--resync-interval=30s",
			"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
			"--insecure-registry=" + p.Registry.Host,
		}})
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if p != nil {
			_ = p.Stop()
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "e2e: plane and Capwright up in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), p.RunDir)
	env = p
	code := m.Run()
	_ = p.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; component logs are in %s\n", p.RunDir)
	} else if os.Getenv("CAPWRIGHT_KEEP_RUNS") == "" {
		_ = os.RemoveAll(p.RunDir)
	}
	os.Exit(code)
}
