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
// output for what the README promises: Capwright used the GitOps way, a
// Git repository that `flux bootstrap git` (the real flux CLI) makes the
// plane sync from, then commits of the example repository; Capwright, the
// real Cluster API core, kubeadm bootstrap and kubeadm control plane
// providers (from their GitHub releases, through the plane's stand-in for
// github.com) and a Tenant installed by Flux from the first push, every
// Kustomization Ready, the tenant's stack on two workload clusters, a
// provider upgraded by a commit, and the plane stopped at the end.
func TestMakeDemo(t *testing.T) {
	root, err := bindir.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The demo's own waits are bounded well below this; a hung demo is
	// stopped as Ctrl-C stops it, so that it stops its plane.
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

	failed := check(output)
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
		for _, prefix := range []string{"demo: flux bootstrap git took", "demo: Capwright, the three providers", "demo: tenant team-a Ready",
			"demo: ControlPlaneProvider ", "demo: done in"} {
			if strings.HasPrefix(l, prefix) {
				t.Log(l)
			}
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

func line(what, re string) promise { return promise{what, regexp.MustCompile(`(?m)` + re)} }

// check reads the demo's output for each thing the README's make demo
// promises, by the line that proves it: the story's lines in their order
// (each after the one before), the details anywhere. It returns what is
// missing.
func check(output string) []string {
	var failed []string
	rest := output
	for _, p := range story() {
		loc := p.re.FindStringIndex(rest)
		if loc == nil {
			where := "after the story's previous line"
			if p.re.MatchString(output) {
				where += " (it is there, out of order)"
			}
			failed = append(failed, fmt.Sprintf("%s: no line matching %s %s", p.what, p.re, where))
			continue
		}
		rest = rest[loc[1]:]
	}
	for _, p := range details(output) {
		if !p.re.MatchString(output) {
			failed = append(failed, fmt.Sprintf("%s: no line matching %s", p.what, p.re))
		}
	}
	return append(failed, fluxGetAllReady(output)...)
}

var (
	v        = regexp.QuoteMeta(plane.CAPIVersion)
	previous = regexp.QuoteMeta("v1.13.6")
	digest   = `@sha256:[0-9a-f]{64}`
)

// story is the demo's steps, in order.
func story() []promise {
	return []promise{
		line("the stand-in for github.com serving Cluster API's releases", `^demo: Cluster API `+previous+` and `+v+
			` releases served in GitHub's layout by the plane's stand-in for github.com at \S+ \(downloads redirected to \S+\)$`),
		line("Capwright v0.1.0 released to the plane's registry", `^  release: manifests \S+/capwright/capwright-manifests:v0\.1\.0`+digest+`$`),
		line("team A's stack v1.0.0 published", `^demo: team A's stack oci://\S+/example/stacks/baseline:v1\.0\.0 published`),
		line("flux-system's customisation committed before bootstrap", `^demo: pushed [0-9a-f]{12}: Customise Flux for Capwright$`),
		line("the Secrets the repository names created", `^demo: created Secrets flux-system/receiver-token and flux-system/platform-webhook`),
		line("flux bootstrap git run", `^\$ flux bootstrap git --url=https://\S+/fleet\.git --branch=main --path=clusters/management --token-auth`),
		line("bootstrap committed its component manifests", `^\s*✔ committed component manifests to "main"`),
		line("bootstrap's Kustomization reconciled", `^\s*✔ Kustomization reconciled successfully$`),
		line("bootstrap found Flux healthy", `^\s*✔ all components are healthy$`),
		line("the first push committed", `^demo: pushed [0-9a-f]{12}: Install Capwright, cert-manager, the Cluster API providers and team A$`),
		line("the Receiver called for it", `^demo: called the Receiver`),
		line("the first push's commit shown", `^\$ git log --oneline -1\n[0-9a-f]{7,} Install Capwright, cert-manager, the Cluster API providers and team A$`),
		line("flux get kustomizations -A run with the flux CLI", `^\$ flux get kustomizations -A\nNAMESPACE\s+NAME\s+REVISION\s+SUSPENDED\s+READY\s+MESSAGE`),
		line("the ControlPlaneProvider installed at "+"v1.13.6"+" first, Ready, pinned by digest",
			`^ControlPlaneProvider\s+capi-kubeadm-control-plane-system/kubeadm\s+`+previous+`\s+`+previous+`\s+v1beta2\s+True\s+`+previous+digest+`\s*$`),
		line("Tenant team-a Ready once the providers were", `^team-a\s+tenant-team-a\s+0/0\s+True \(Succeeded\)\s*$`),
		line("the first push Ready, timed", `^demo: Capwright, the three providers and Tenant team-a Ready \S+ after the push$`),
		line("the workload clusters registered as team A's Clusters", `^plane: workload cluster workload-\d registered as Cluster tenant-team-a/workload-\d$`),
		line("Tenant team-a Ready on both workload clusters", `^team-a\s+tenant-team-a\s+2/2\s+True \(Succeeded\)\s*$`),
		line("team-a Ready on both, timed", `^demo: tenant team-a Ready on 2/2 clusters \S+ after they were registered$`),
		line("team A's stack on workload-1", `^demo: on workload-1: ConfigMap team-a/baseline, version v1\.0\.0$`),
		line("team A's stack on workload-2", `^demo: on workload-2: ConfigMap team-a/baseline, version v1\.0\.0$`),
		line("the upgrade committed", `^demo: pushed [0-9a-f]{12}: Upgrade the kubeadm control plane provider to `+v+`$`),
		line("the upgrade's commit shown", `^\$ git log --oneline -1\n[0-9a-f]{7,} Upgrade the kubeadm control plane provider to `+v+`$`),
		line("the ControlPlaneProvider installed at "+plane.CAPIVersion+" after the upgrade, Ready, pinned by digest",
			`^ControlPlaneProvider\s+capi-kubeadm-control-plane-system/kubeadm\s+`+v+`\s+`+v+`\s+v1beta2\s+True\s+`+v+digest+`\s*$`),
		line("the upgrade, timed", `^demo: ControlPlaneProvider capi-kubeadm-control-plane-system/kubeadm upgraded from `+previous+` to `+v+`, Ready \S+ after the push$`),
		line("the run time", `^demo: done in \S+$`),
		line("the plane stopped at the end", `demo: stopping the plane\s*$`),
	}
}

// details are lines anywhere in the output.
func details(output string) []promise {
	// The stand-in's download host, where GitHub's redirect leads.
	download := regexp.QuoteMeta(firstSubmatch(regexp.MustCompile(`downloads redirected to (\S+)\)`), output))
	if download == "" {
		download = `(no download host printed)`
	}
	var ps []promise
	for _, p := range []struct{ kind, namespace, name, version, components, flux string }{
		{"CoreProvider", "capi-system", "cluster-api", v, "core-components.yaml", "core-cluster-api"},
		{"BootstrapProvider", "capi-kubeadm-bootstrap-system", "kubeadm", v, "bootstrap-components.yaml", "bootstrap-kubeadm"},
		{"ControlPlaneProvider", "capi-kubeadm-control-plane-system", "kubeadm", previous, "control-plane-components.yaml", "control-plane-kubeadm"},
	} {
		ref := regexp.QuoteMeta(p.namespace + "/" + p.name)
		ps = append(ps,
			line(p.kind+" "+p.namespace+"/"+p.name+" installed, contract v1beta2, Ready, pinned by digest",
				`^`+p.kind+`\s+`+ref+`\s+`+p.version+`\s+`+p.version+`\s+v1beta2\s+True\s+`+p.version+digest+`\s*$`),
			line(p.kind+" "+p.namespace+"/"+p.name+"'s "+p.components+" fetched from its GitHub release, through the stand-in's download host",
				`^`+ref+`\s+https://github\.com/kubernetes-sigs/cluster-api/releases/\S+\s+`+regexp.QuoteMeta(p.components)+`\s+https://`+download+`/\S+\s*$`),
			line(p.kind+" "+p.namespace+"/"+p.name+"'s metadata.yaml fetched from its GitHub release, through the stand-in's download host",
				`^`+ref+`\s+https://github\.com/kubernetes-sigs/cluster-api/releases/\S+\s+metadata\.yaml\s+https://`+download+`/\S+\s*$`),
			line("flux get: the provider's Kustomization "+p.namespace+"/"+p.flux+" Ready",
				`^`+regexp.QuoteMeta(p.namespace)+`\s+`+regexp.QuoteMeta(p.flux)+`\s+sha256:[0-9a-f]+\s+False\s+True\s+Applied revision`),
		)
		for _, kind := range []string{"ExternalArtifact", "Kustomization"} {
			o := regexp.QuoteMeta(p.namespace + "/" + p.flux)
			ps = append(ps, line("Flux's "+kind+" "+p.namespace+"/"+p.flux+" Ready", `^`+kind+` `+o+`\s+True\s*$`))
		}
	}
	for _, name := range []string{"flux-system", "cert-manager", "providers", "tenants", "tenant-alerts"} {
		ps = append(ps, line("flux get: Kustomization flux-system/"+name+" Ready at the first push",
			`^flux-system\s+`+name+`\s+main@sha1:[0-9a-f]+\s+False\s+True\s+Applied revision: main@sha1:`))
	}
	ps = append(ps,
		line("flux get: Kustomization flux-system/capwright Ready at Capwright's release", `^flux-system\s+capwright\s+v0\.1\.0@sha256:[0-9a-f]+\s+False\s+True\s+Applied revision`),
		line("team A's stack Ready on workload-1", `^tenant-team-a/workload-1\s+Ready\s+v1\.0\.0`+digest+`\s`),
		line("team A's stack Ready on workload-2", `^tenant-team-a/workload-2\s+Ready\s+v1\.0\.0`+digest+`\s`),
	)
	return ps
}

// fluxGetAllReady checks that every row `flux get kustomizations -A`
// printed is Ready.
func fluxGetAllReady(output string) []string {
	_, table, ok := strings.Cut(output, "$ flux get kustomizations -A\n")
	if !ok {
		return []string{"no `flux get kustomizations -A` in the output"}
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(rows) < 2 {
		return []string{"`flux get kustomizations -A` printed no Kustomization"}
	}
	var failed []string
	for _, row := range rows[1:] {
		if f := strings.Fields(row); len(f) < 5 || f[4] != "True" {
			failed = append(failed, "flux get kustomizations -A: not Ready: "+row)
		}
	}
	return failed
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
