// Command cli-bench times the capwright CLI as users run it, a process per
// command, against in-process registries, and prints medians with their
// spread against issue 33's targets:
//
//   - publish and inspect of a 5 MiB components file (the real Cluster API
//     core components grown with copies of its CRDs, several times the
//     largest provider) on loopback: at most 0.3 s each;
//   - mirror of the core, kubeadm bootstrap and kubeadm control-plane
//     providers with their controller images at real size (two platforms,
//     27–36 MB each) and an SBOM on each artifact and image index, where
//     every request to the source and the target waits -latency (10 ms)
//     first, as over a WAN: at least twice as fast as `skopeo copy --all`
//     of the same six references one after another (skipped, with a note,
//     when skopeo is not installed; skopeo copies no referrers, so it does
//     less work);
//   - a warm re-run of that mirror, the target holding everything: at
//     most one request per reference, counted at both registries, and
//     the components not read again (its cache).
//
// Runs alternate between the systems compared, so drift of the machine
// hits both. `make bench` runs it after building bin/capwright.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/capwright/capwright/tests/bindir"
)

func main() {
	runs := flag.Int("runs", 7, "runs of each measurement")
	latency := flag.Duration("latency", 10*time.Millisecond, "delay before each registry request of the mirror measurements")
	cli := flag.String("capwright", "", "the CLI binary (default: capwright in $CAPWRIGHT_BIN_DIR, else bin/)")
	only := flag.String("only", "", "run only publish (publish and inspect) or mirror")
	flag.Parse()
	if *cli == "" {
		bin, err := bindir.Default()
		if err != nil {
			fatal(err)
		}
		*cli = filepath.Join(bin, "capwright")
	}
	if _, err := os.Stat(*cli); err != nil {
		fatal(fmt.Errorf("%w: build it with make bin/capwright", err))
	}
	h := &harness{}
	defer h.close()
	// No credential helpers or stored logins: the registries are local.
	home := h.TempDir()
	for key, value := range map[string]string{"DOCKER_CONFIG": home, "REGISTRY_AUTH_FILE": filepath.Join(home, "auth.json")} {
		if err := os.Setenv(key, value); err != nil {
			fatal(err)
		}
	}

	if *only == "" || *only == "publish" {
		benchPublishInspect(h, *cli, *runs)
	}
	if *only == "" || *only == "mirror" {
		benchMirror(h, *cli, *runs, *latency)
	}
}

// run runs a command and returns its wall-clock time; a failure ends the
// tool with its output.
func run(h *harness, env []string, name string, args ...string) time.Duration {
	wall, _ := runCPU(h, env, name, args...)
	return wall
}

// runCPU is run that also returns the CPU time (user and system) the
// command used: on a machine shared with other work, the wall-clock time
// also holds the waits for a CPU.
func runCPU(h *harness, env []string, name string, args ...string) (wall, cpu time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		h.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
	}
	return took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cli-bench:", err)
	os.Exit(1)
}
