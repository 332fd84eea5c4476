package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/plane"
)

// RunSuite is the TestMain of an e2e package: it starts a plane, runs
// setup on it, hands it to use, runs the tests and stops the plane. A
// failing run prints where the component logs are; a passing one removes
// them unless CAPWRIGHT_KEEP_RUNS is set. It returns the exit code.
func RunSuite(m *testing.M, opts plane.Options, setup func(context.Context, *plane.Plane) error, use func(*plane.Plane)) int {
	opts.Log = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	start := time.Now()
	p, err := plane.Start(ctx, opts)
	if err == nil && setup != nil {
		if err = setup(ctx, p); err != nil {
			_ = p.Stop()
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: local management plane up in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), p.RunDir)
	use(p)
	code := m.Run()
	if err := p.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the plane:", err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; component logs are in %s\n", p.RunDir)
	} else if os.Getenv("CAPWRIGHT_KEEP_RUNS") == "" {
		_ = os.RemoveAll(p.RunDir)
	}
	return code
}

// CreateWithRetry creates obj, retrying while its admission webhook cannot
// be reached yet (a webhook server that has just started).
func CreateWithRetry(ctx context.Context, c client.Client, obj client.Object) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, obj)
		if last != nil && strings.Contains(last.Error(), "failed calling webhook") {
			return false, nil
		}
		return true, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
