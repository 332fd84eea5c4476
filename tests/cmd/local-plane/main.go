// Command local-plane runs the local management plane for people and
// scripts: `make plane-up` runs `local-plane up` in the background, `make
// plane-down` stops it, and `make demo` runs `local-plane demo`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/capwright/capwright/tests/plane"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "demo":
		err = demo(os.Args[2:])
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-plane:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `local-plane runs the local Kubernetes + Flux management plane.

Usage:
  local-plane up   [-state DIR] [-workload-clusters N] [-capwright=false] [-gitops=false]
                   start (Flux bootstrapped from the Git server's fleet.git, the Capwright manager), write DIR/kubeconfig,
                   DIR/registry and DIR/git-*, run until signalled
  local-plane down [-state DIR]                          stop a plane started with up
  local-plane demo                                       the GitOps demo: bootstrap, commit the example repository, upgrade by a commit, stop

Component binaries come from bin/ (make tools); CAPWRIGHT_BIN_DIR overrides.
`)
}

// stateFiles are the files up writes in the state directory (the pid
// file aside): removed before a start and after a stop, so that stale
// ones never look like a live plane's.
var stateFiles = []string{"kubeconfig", "registry", "ready", "run-dir", "git-url", "git-credentials", "git-ca.crt", "management-b.kubeconfig"}

type stateFlags struct {
	dir string
}

func (s *stateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.dir, "state", "bin/plane", "directory for kubeconfig, registry address, pid and logs link")
}

func (s *stateFlags) pidFile() string { return filepath.Join(s.dir, "pid") }

// up starts the plane, writes the state files people and scripts use, and
// runs until SIGINT or SIGTERM.
func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	var state stateFlags
	state.register(fs)
	workloads := fs.Int("workload-clusters", 0, "number of workload clusters to start")
	capwright := fs.Bool("capwright", true, "install the Capwright CRDs and run bin/capwright-manager against the plane")
	second := fs.Bool("management-b", false, "also start a second, empty management cluster, management-b, beside the first (its kubeconfig in management-b.kubeconfig), sharing its registry and Git server: bootstrap it at clusters/management-b of fleet.git and move Clusters to it as docs/gitops.md says")
	gitops := fs.Bool("gitops", true, "bootstrap the plane's Flux from its Git server's fleet.git with the flux CLI (flux bootstrap git, path clusters/management), so what is pushed there is applied; false starts the plane's own Flux controllers instead")
	_ = fs.Parse(args)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(state.dir, 0o755); err != nil {
		return err
	}
	// Stale files from an earlier run must not look like a live plane.
	for _, f := range stateFiles {
		_ = os.Remove(filepath.Join(state.dir, f))
	}
	if err := os.WriteFile(state.pidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(state.pidFile())

	p, err := plane.Start(ctx, plane.Options{Log: os.Stdout, RunDeployments: *gitops})
	if err != nil {
		return err
	}
	defer p.Stop()
	if *gitops {
		if err := bootstrapFleet(ctx, p); err != nil {
			return fmt.Errorf("bootstrapping Flux from fleet.git: %w", err)
		}
	}
	files := map[string][]byte{
		"registry": []byte(p.Registry.Host + "\n"),
		"run-dir":  []byte(p.RunDir + "\n"),
		// The Git server: fleet.git's HTTPS URL, the basic-auth
		// credentials as username= and password= lines (the key=value
		// form of git's credential protocol, which a shell can also
		// source), and the CA of its certificate.
		"git-url":         []byte(p.Git.HTTPSURL("fleet.git") + "\n"),
		"git-credentials": []byte("username=" + p.Git.Username + "\npassword=" + p.Git.Password + "\n"),
		"git-ca.crt":      p.Git.CACertPEM,
	}
	kubeconfig, err := os.ReadFile(p.Kubeconfig)
	if err != nil {
		return err
	}
	files["kubeconfig"] = kubeconfig
	// Workload clusters are registered as Cluster API Clusters (with their
	// kubeconfig Secrets) before the manager starts: it watches Clusters
	// only when their kind is served at start-up.
	for i := 1; i <= *workloads; i++ {
		w, err := p.StartWorkloadCluster(ctx, fmt.Sprintf("workload-%d", i), plane.WorkloadOptions{ControllerManager: true})
		if err != nil {
			return err
		}
		if _, err := p.RegisterWorkloadCluster(ctx, w, "default", w.Name); err != nil {
			return err
		}
		files[w.Name+".kubeconfig"] = w.Kubeconfig
	}
	if *second {
		m, err := p.StartManagementCluster(ctx, "management-b")
		if err != nil {
			return err
		}
		if files["management-b.kubeconfig"], err = os.ReadFile(m.Kubeconfig); err != nil {
			return err
		}
	}
	metrics := ""
	if *capwright {
		m, err := p.StartCapwright(ctx, plane.CapwrightOptions{Args: mirrorArgs(p)})
		if err != nil {
			return err
		}
		metrics = m.MetricsURL()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(state.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	// "ready" is written last: its presence means every file above is valid.
	if err := os.WriteFile(filepath.Join(state.dir, "ready"), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	printUsage(state.dir, p, *workloads, metrics)
	if *second {
		abs, _ := filepath.Abs(state.dir)
		fmt.Printf(`  management-b: %[1]s/management-b.kubeconfig   (a second management cluster, empty: no Flux yet)
               bootstrap it at clusters/management-b of fleet.git and move Clusters to it:
               docs/gitops.md, "A second management cluster, and moving Clusters to it"
`, abs)
	}
	<-ctx.Done()
	fmt.Println("local-plane: stopping")
	return p.Stop()
}

func printUsage(stateDir string, p *plane.Plane, workloads int, metrics string) {
	abs, _ := filepath.Abs(stateDir)
	defer func() {
		if metrics != "" {
			fmt.Printf("  metrics:     %s   (the Capwright manager's Prometheus metrics)\n", metrics)
		}
		for i := 1; i <= workloads; i++ {
			fmt.Printf("  workload cluster workload-%d: %s/workload-%d.kubeconfig (Cluster default/workload-%d on the management plane)\n", i, abs, i, i)
		}
	}()
	fmt.Printf(`
The local management plane is up.
  kubeconfig:  %[1]s/kubeconfig      (export KUBECONFIG=%[1]s/kubeconfig)
  registry:    %[2]s   (plain HTTP; use insecure: true in OCIRepository)
               the Capwright manager treats it as the mirror of registry.k8s.io/cluster-api/manifests:
               publish providers to %[2]s/cluster-api/manifests/<type>-<name>:<version>
  git:         %[4]s   (%[1]s/git-url: fleet.git, which Flux syncs)
               HTTPS with the plane's CA %[1]s/git-ca.crt; plain HTTP at %[5]s
               basic auth: %[1]s/git-credentials holds username=… and password=… lines
               (. %[1]s/git-credentials sets $username and $password in a shell)
               export GIT_SSL_CAINFO=%[1]s/git-ca.crt   (git's own setting loses to this variable where it is set)
               git clone %[6]s
               Flux syncs clusters/management of fleet.git (flux bootstrap git made it so): commit YAML there,
               push, and it is applied within a minute, or at once after
               %[7]s reconcile source git flux-system --kubeconfig %[1]s/kubeconfig
  logs:        %[3]s
Stop it with: make plane-down
`, abs, p.Registry.Host, p.RunDir, p.Git.HTTPSURL("fleet.git"), p.Git.HTTPURL("fleet.git"), gitURLWithCredentials(p.Git), fluxCLIPath())
}

// down signals the plane started by up and waits until it is gone.
func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	var state stateFlags
	state.register(fs)
	_ = fs.Parse(args)
	data, err := os.ReadFile(state.pidFile())
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("local-plane: no plane is running (no", state.pidFile()+")")
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		return fmt.Errorf("bad pid file %s: %w", state.pidFile(), err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			_ = os.Remove(state.pidFile())
			fmt.Println("local-plane: plane process", pid, "was already gone")
			return nil
		}
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			for _, f := range stateFiles {
				_ = os.Remove(filepath.Join(state.dir, f))
			}
			fmt.Println("local-plane: stopped")
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("plane process %d still running after 60s; kill it with: kill -9 -- %d", pid, pid)
}

// gitURLWithCredentials is fleet.git's HTTPS URL with the credentials in
// it, for a clone line a user can paste.
func gitURLWithCredentials(g *plane.GitServer) string {
	u, err := url.Parse(g.HTTPSURL("fleet.git"))
	if err != nil {
		return g.HTTPSURL("fleet.git")
	}
	u.User = url.UserPassword(g.Username, g.Password)
	return u.String()
}

// fluxCLIPath is the flux CLI make tools builds.
func fluxCLIPath() string {
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return "flux"
	}
	return filepath.Join(bin, "flux")
}
