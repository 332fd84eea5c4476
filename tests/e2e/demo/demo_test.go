// Package demo runs `make demo`, the README's first command, the way a
// newcomer does: the Makefile rule, the tools it builds and the demo's
// story are tested together, so none of them can rot unnoticed. It starts
// no plane of its own: the demo starts and stops its own.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/bindir"
	"github.com/capwright/capwright/tests/plane"
)

// TestMakeDemo runs `make demo` in the repository root and reads its
// output for what the README promises: the real Cluster API core, kubeadm
// bootstrap and kubeadm control plane providers installed through
// Capwright and Flux from their GitHub releases (through the plane's
// stand-in for github.com), a tenant's stack on two workload clusters, a
// Cluster from a ClusterClass whose control plane is a chart, and the plane
// stopped at the end.
func TestMakeDemo(t *testing.T) {
	root, err := bindir.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The demo's own waits add up to 12 minutes; a hung demo is stopped as
	// Ctrl-C stops it, so that it stops its plane.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "demo")
	cmd.Dir = root
	cmd.Env = userEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = time.Minute
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if cmd.Process != nil {
		// Whatever outlived make (a plane whose stop hung) goes with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	output := out.String()
	if err != nil {
		t.Fatalf("make demo in %s: %v after %s; its output:\n%s", root, err, took.Round(time.Millisecond), output)
	}

	var failed []string
	for _, c := range promises(output) {
		if !c.re.MatchString(output) {
			failed = append(failed, fmt.Sprintf("%s: no line matching %s", c.what, c.re))
		}
	}
	runDir := firstSubmatch(regexp.MustCompile(`(?m)^demo: logs in (\S+)$`), output)
	if runDir == "" {
		failed = append(failed, "the demo names no log directory (demo: logs in DIR)")
	} else if left := processesUnder(runDir); len(left) > 0 {
		failed = append(failed, fmt.Sprintf("the demo said it stopped the plane, but these processes of its run %s still run:\n  %s",
			runDir, strings.Join(left, "\n  ")))
	}
	if len(failed) > 0 {
		t.Fatalf("make demo exited 0 in %s but its output does not show what the README promises:\n- %s\nits output:\n%s",
			took.Round(time.Millisecond), strings.Join(failed, "\n- "), output)
	}
	for _, l := range strings.Split(output, "\n") {
		if strings.HasPrefix(l, "demo: plane up in") || strings.HasPrefix(l, "demo: tenant team-a Ready") ||
			strings.HasPrefix(l, "demo: Cluster ") {
			t.Log(l)
		}
	}
	t.Logf("make demo: exit 0 in %s", took.Round(time.Millisecond))
	if os.Getenv("CAPWRIGHT_KEEP_RUNS") == "" && strings.HasPrefix(runDir, filepath.Join(root, "bin", "runs")+string(filepath.Separator)) {
		_ = os.RemoveAll(runDir)
	}
}

type promise struct {
	what string
	re   *regexp.Regexp
}

// promises are the lines of the demo's output that prove each thing the
// README's make demo promises.
func promises(output string) []promise {
	v := regexp.QuoteMeta(plane.CAPIVersion)
	// The stand-in's download host, where GitHub's redirect leads.
	download := regexp.QuoteMeta(firstSubmatch(regexp.MustCompile(`downloads redirected to (\S+)\)`), output))
	if download == "" {
		download = `(no download host printed)`
	}
	ps := []promise{{"the stand-in for github.com", regexp.MustCompile(`(?m)^demo: Cluster API ` + v +
		` releases served in GitHub's layout by the plane's stand-in for github.com at \S+ \(downloads redirected to \S+\)$`)}}
	for _, p := range []struct{ kind, namespace, name, release, components string }{
		{"CoreProvider", "capi-system", "cluster-api", "cluster-api", "core-components.yaml"},
		{"BootstrapProvider", "capi-kubeadm-bootstrap-system", "kubeadm", "cluster-api", "bootstrap-components.yaml"},
		{"ControlPlaneProvider", "capi-kubeadm-control-plane-system", "kubeadm", "cluster-api", "control-plane-components.yaml"},
	} {
		ref := regexp.QuoteMeta(p.namespace + "/" + p.name)
		ps = append(ps,
			promise{p.kind + " " + p.namespace + "/" + p.name + " installed at " + plane.CAPIVersion + ", contract v1beta2, Ready, pinned by digest",
				regexp.MustCompile(`(?m)^` + p.kind + `\s+` + ref + `\s+` + v + `\s+` + v + `\s+v1beta2\s+True\s+` + v + `@sha256:[0-9a-f]{64}\s*$`)},
			promise{p.kind + " " + p.namespace + "/" + p.name + "'s " + p.components + " fetched from its GitHub release, through the stand-in's download host",
				regexp.MustCompile(`(?m)^` + ref + `\s+https://github\.com/kubernetes-sigs/` + p.release + `/releases/\S+\s+` +
					regexp.QuoteMeta(p.components) + `\s+https://` + download + `/\S+\s*$`)},
			promise{p.kind + " " + p.namespace + "/" + p.name + "'s metadata.yaml fetched from its GitHub release, through the stand-in's download host",
				regexp.MustCompile(`(?m)^` + ref + `\s+https://github\.com/kubernetes-sigs/` + p.release + `/releases/\S+\s+metadata\.yaml\s+https://` +
					download + `/\S+\s*$`)},
		)
	}
	for _, o := range []string{"capi-system/core-cluster-api", "capi-kubeadm-bootstrap-system/bootstrap-kubeadm",
		"capi-kubeadm-control-plane-system/control-plane-kubeadm"} {
		for _, kind := range []string{"ExternalArtifact", "Kustomization"} {
			ps = append(ps, promise{"Flux's " + kind + " " + o + " Ready",
				regexp.MustCompile(`(?m)^` + kind + ` ` + regexp.QuoteMeta(o) + `\s+True\s*$`)})
		}
	}
	return append(ps,
		promise{"the three providers Ready, timed", regexp.MustCompile(`(?m)^demo: plane up in \S+; the three providers were Ready \S+ after their CRs were applied$`)},
		promise{"Tenant team-a Ready on both workload clusters", regexp.MustCompile(`(?m)^team-a\s+tenant-team-a\s+2/2\s+True \(Succeeded\)\s*$`)},
		promise{"team-a's stack Ready on workload-1", regexp.MustCompile(`(?m)^default/workload-1\s+Ready\s+v1\.0\.0@sha256:[0-9a-f]{64}\s`)},
		promise{"team-a's stack Ready on workload-2", regexp.MustCompile(`(?m)^default/workload-2\s+Ready\s+v1\.0\.0@sha256:[0-9a-f]{64}\s`)},
		promise{"team-a Ready, timed", regexp.MustCompile(`(?m)^demo: tenant team-a Ready on 2/2 clusters \S+ after it was applied$`)},
		promise{"the Cluster's chart control plane initialized at v1.31.0 with an endpoint, its Cluster Available",
			regexp.MustCompile(`(?m)^tenant-team-b/dev-\S+\s+true\s+true\s+v1\.31\.0\s+127\.0\.0\.1:[1-9][0-9]*\s+True\s`)},
		promise{"team-b's stack Ready on the new Cluster", regexp.MustCompile(`(?m)^tenant-team-b/dev\s+Ready\s+v1\.0\.0@sha256:[0-9a-f]{64}\s`)},
		promise{"the Cluster Available with the team's stack, timed",
			regexp.MustCompile(`(?m)^demo: Cluster tenant-team-b/dev Available \S+ after it was applied; the team's stack Ready on it after \S+$`)},
		promise{"the plane stopped at the end", regexp.MustCompile(`demo: stopping the plane\s*$`)},
	)
}

func firstSubmatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// userEnv is the test's environment as a user's shell would have it: no
// make variables of an enclosing make (make test), no request to keep the
// plane up.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CAPWRIGHT_DEMO_KEEP":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// processesUnder lists the processes whose command line names dir: every
// component the plane starts keeps its data, certificates or logs there.
func processesUnder(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var left []string
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if cmdline := strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "); strings.Contains(cmdline, dir) {
			left = append(left, filepath.Base(filepath.Dir(f))+": "+cmdline)
		}
	}
	return left
}
