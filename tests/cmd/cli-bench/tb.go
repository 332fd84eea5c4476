package main

import (
	"fmt"
	"os"
	"testing"
)

// harness lets the tool use the test helpers that push fixtures
// (registrytest, mirrortest), which take a testing.TB: it implements what
// they call (Helper, Fatal, Fatalf, Cleanup, TempDir, Logf); any other
// method panics on the nil TB it embeds.
type harness struct {
	testing.TB
	cleanups []func()
}

func (h *harness) Helper() {}

func (h *harness) Fatal(args ...any) { h.fail(fmt.Sprint(args...)) }

func (h *harness) Fatalf(format string, args ...any) { h.fail(fmt.Sprintf(format, args...)) }

func (h *harness) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (h *harness) Cleanup(fn func()) { h.cleanups = append(h.cleanups, fn) }

func (h *harness) TempDir() string {
	dir, err := os.MkdirTemp("", "cli-bench-")
	if err != nil {
		h.fail(err.Error())
	}
	h.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// close runs the cleanups, last registered first.
func (h *harness) close() {
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
	h.cleanups = nil
}

func (h *harness) fail(msg string) {
	fmt.Fprintln(os.Stderr, "cli-bench:", msg)
	h.close()
	os.Exit(1)
}
