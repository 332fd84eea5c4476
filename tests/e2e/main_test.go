// Package e2e holds end-to-end suites that run against the local management
// plane: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok, and the real Flux controllers.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/plane"
)

// env is the plane every test in this package shares.
var env *plane.Plane

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	start := time.Now()
	p, err := plane.Start(ctx, plane.Options{Log: os.Stderr})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "e2e: local management plane up in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), p.RunDir)
	env = p
	code := m.Run()
	if err := p.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the plane:", err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; component logs are in %s\n", p.RunDir)
	} else if os.Getenv("CAPWRIGHT_KEEP_RUNS") == "" {
		_ = os.RemoveAll(p.RunDir)
	}
	os.Exit(code)
}
