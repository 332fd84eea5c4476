package plane

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CapwrightUser is the user the Capwright manager authenticates as.
const CapwrightUser = "capwright-manager"

// managerUserBinding grants the manager's ClusterRoles (its own, and the
// aggregated reader of backend kinds) to CapwrightUser (the manifests bind
// them to the ServiceAccount of the in-cluster Deployment).
const managerUserBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: capwright-manager-plane-user
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: capwright-manager
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: capwright-manager
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: capwright-backend-reader-plane-user
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: capwright-backend-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: capwright-manager
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: capwright-manager-release-copies-plane-user
  namespace: capwright-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: capwright-manager-release-copies
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: capwright-manager
`

// ManagerNamespace is the manager's namespace on the plane
// (RUNTIME_NAMESPACE), as manifests/manager places it in a cluster: where
// its release copies live (manifests/rbac/release_copies.yaml).
const ManagerNamespace = "capwright-system"

// CapwrightOptions configure the Capwright manager on the plane.
type CapwrightOptions struct {
	// Binary is the manager; default <BinDir>/capwright-manager, which
	// BuildCapwright builds from the working tree.
	Binary string
	// Args are extra manager arguments (e.g. --registry-mirror).
	Args []string
	// Env is added to the manager's environment (e.g. RUNTIME_NAMESPACE,
	// where its leader election lease lives).
	Env []string
	// Name names the process and its log (<Name>.log); default
	// capwright-manager. Replicas of one installation need a name each.
	Name string
}

// Capwright is the running Capwright manager.
type Capwright struct {
	proc     *process
	tracker  *tracker
	metrics  string
	storage  string
	artifact string
}

// ArtifactAddr is the host:port the manager serves its artifacts on.
func (c *Capwright) ArtifactAddr() string { return c.artifact }

// MetricsURL is where the manager serves its Prometheus metrics, e.g.
// http://127.0.0.1:PORT/metrics.
func (c *Capwright) MetricsURL() string { return c.metrics }

// Stop stops the manager.
func (c *Capwright) Stop() { c.proc.stop(10 * time.Second) }

// Kill SIGKILLs the manager, as a crash or an OOM kill does.
func (c *Capwright) Kill() { c.proc.kill() }

// Exited reports whether the manager's process has exited: killed or
// stopped, or by itself (a leader that loses its lease exits).
func (c *Capwright) Exited() bool { return c.proc.exited() }

// Restart starts a stopped or killed manager again with the same
// arguments and returns once it is ready; a running one is killed first.
func (c *Capwright) Restart(ctx context.Context) error {
	c.proc.kill()
	next, err := c.tracker.restart(ctx, c.proc)
	if err != nil {
		return err
	}
	c.proc = next
	return nil
}

// ArtifactStorage is the directory the manager stores the artifacts it
// serves to Flux in (its --artifact-storage-path; in a cluster, an
// emptyDir that a new pod starts without).
func (c *Capwright) ArtifactStorage() string { return c.storage }

// RepoRoot is the repository root: the parent of the default bin/.
func (p *Plane) RepoRoot() string { return filepath.Dir(p.opts.BinDir) }

// BuildCapwright builds the manager from the working tree into
// <BinDir>/capwright-manager.
func (p *Plane) BuildCapwright(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(p.opts.BinDir, "capwright-manager"), "./cmd/manager")
	cmd.Dir = p.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("building the Capwright manager: %w\n%s", err, out)
	}
	return nil
}

// BuildCLI builds the capwright CLI from the working tree into
// <BinDir>/capwright and returns its path.
func (p *Plane) BuildCLI(ctx context.Context) (string, error) {
	out := filepath.Join(p.opts.BinDir, "capwright")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/capwright")
	cmd.Dir = p.RepoRoot()
	if log, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the capwright CLI: %w\n%s", err, log)
	}
	return out, nil
}

// InstallCapwrightCRDs installs the Capwright CRDs and clusterctl's
// inventory CRD from manifests/ and waits until they are established, as
// a chart or the release manifests install them ahead of the manager.
// StartCapwright installs them too; installing them earlier spares the
// first custom resource the API server's wait for a CRD established less
// than two seconds before.
func (p *Plane) InstallCapwrightCRDs(ctx context.Context) error {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return err
	}
	for _, dir := range []string{"manifests/crd/bases", "manifests/clusterctl"} {
		objs, err := applier.ApplyFiles(ctx, filepath.Join(p.RepoRoot(), dir))
		if err != nil {
			return fmt.Errorf("installing Capwright CRDs: %w", err)
		}
		if err := waitCRDsEstablished(ctx, p.Config, objs); err != nil {
			return err
		}
	}
	return nil
}

// StartCapwright installs the Capwright CRDs and clusterctl's inventory CRD
// from manifests/ and runs the manager against the plane; its log is
// capwright-manager.log.
func (p *Plane) StartCapwright(ctx context.Context, opts CapwrightOptions) (*Capwright, error) {
	if opts.Binary == "" {
		opts.Binary = filepath.Join(p.opts.BinDir, "capwright-manager")
	}
	if err := p.InstallCapwrightCRDs(ctx); err != nil {
		return nil, err
	}
	applier, err := NewApplier(p.Config)
	if err != nil {
		return nil, err
	}
	// The manager runs as its own user, bound to the ClusterRole generated
	// from its RBAC markers and nothing more, so missing permissions show
	// up here as they would in a cluster.
	ns, err := DecodeYAML(strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ManagerNamespace + "\n"))
	if err != nil {
		return nil, err
	}
	if err := applier.Apply(ctx, ns...); err != nil {
		return nil, err
	}
	if _, err := applier.ApplyFiles(ctx, filepath.Join(p.RepoRoot(), "manifests/rbac")); err != nil {
		return nil, fmt.Errorf("installing Capwright RBAC: %w", err)
	}
	binding, err := DecodeYAML(strings.NewReader(managerUserBinding))
	if err != nil {
		return nil, err
	}
	if err := applier.Apply(ctx, binding...); err != nil {
		return nil, err
	}
	// The admission policy that keeps the manager's namespace writes to
	// Tenants' namespaces, for the plane's user of the manager instead of
	// the in-cluster ServiceAccount the manifests name.
	policy, err := os.ReadFile(filepath.Join(p.RepoRoot(), "manifests/rbac/manager_admission.yaml"))
	if err != nil {
		return nil, err
	}
	const saUser = "system:serviceaccount:capwright-system:capwright-manager"
	if !bytes.Contains(policy, []byte(saUser)) {
		return nil, fmt.Errorf("manifests/rbac/manager_admission.yaml no longer names %s: the plane cannot point it at its manager user", saUser)
	}
	admission, err := DecodeYAML(bytes.NewReader(bytes.ReplaceAll(policy, []byte(saUser), []byte(CapwrightUser))))
	if err != nil {
		return nil, err
	}
	if err := applier.Apply(ctx, admission...); err != nil {
		return nil, fmt.Errorf("installing the manager's admission policy: %w", err)
	}
	kubeconfig, err := p.api.componentKubeconfig(CapwrightUser)
	if err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	artifactPort, err := freePort()
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "capwright-manager"
	}
	storage := filepath.Join(p.RunDir, name+"-artifacts")
	if name == "capwright-manager" {
		storage = filepath.Join(p.RunDir, "capwright-artifacts")
	}
	artifactAddr := "127.0.0.1:" + strconv.Itoa(artifactPort)
	proc, err := startProcess(processSpec{
		Name:   name,
		Binary: opts.Binary,
		Args: append([]string{
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(metricsPort),
			"--health-addr=127.0.0.1:" + strconv.Itoa(probePort),
			// Artifacts of additional manifests, fetched by the plane's
			// kustomize-controller over loopback.
			"--artifact-storage-path=" + storage,
			"--artifact-bind-address=" + artifactAddr,
		}, opts.Args...),
		Env:    append([]string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + ManagerNamespace}, opts.Env...),
		LogDir: p.tracker.logDir,
	})
	if err != nil {
		return nil, err
	}
	p.tracker.add(proc)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	if err := proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, http.DefaultClient, url) }); err != nil {
		return nil, err
	}
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	p.logf("capwright manager running (log %s, metrics %s)", p.LogPath(name), metrics)
	return &Capwright{proc: proc, tracker: p.tracker, metrics: metrics, storage: storage, artifact: artifactAddr}, nil
}

// InstallProviderInstallerRole applies the ClusterRole Capwright binds
// each provider's installer ServiceAccount to
// (manifests/rbac/provider_installer.yaml), for Flux objects rendered
// without a manager (StartCapwright applies it with the rest of the RBAC).
func (p *Plane) InstallProviderInstallerRole(ctx context.Context) error {
	f, err := os.Open(filepath.Join(p.RepoRoot(), "manifests/rbac/provider_installer.yaml"))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := p.applyYAML(ctx, f); err != nil {
		return fmt.Errorf("installing the provider installer role: %w", err)
	}
	return nil
}

// PID is the manager's process id.
func (c *Capwright) PID() int { return c.proc.pid() }

// LogPath is the manager's log file.
func (c *Capwright) LogPath() string { return c.proc.logPath }
