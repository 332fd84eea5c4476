package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// bootstrapFleet makes the plane a management cluster synced from its Git
// server, as a user's is: it commits the example repository's flux-system
// customisation (docs/gitops.md) to fleet.git and runs the real `flux
// bootstrap git` for clusters/management, so Flux comes up from what the
// repository says and applies whatever is committed there. The Receiver
// the customisation lists gets a token of its own (Secret receiver-token).
func bootstrapFleet(ctx context.Context, p *plane.Plane) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(upFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	var rep upReporter
	dir := filepath.Join(p.RunDir, "bootstrap")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	w := framework.CloneFleet(rep, ctx, p.Git, dir)
	token, err := randomToken()
	if err != nil {
		return err
	}
	framework.CustomiseFluxSystem(rep, ctx, p, w, map[string]map[string]string{"receiver-token": {"token": token}})
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return err
	}
	fmt.Print(framework.Bootstrap(rep, ctx, p, framework.FluxCLI(rep, bin), dir, framework.ManagementPath))
	return nil
}

// upReporter lets the framework's helpers, written for tests, report to
// local-plane up: Fatalf ends bootstrapFleet with the error.
type upReporter struct{}

// upFailure carries a Fatalf out of the helpers.
type upFailure struct{ err error }

func (upReporter) Helper() {}

func (upReporter) Logf(format string, args ...any) { fmt.Printf("plane: "+format+"\n", args...) }

func (upReporter) Fatalf(format string, args ...any) { panic(upFailure{fmt.Errorf(format, args...)}) }
