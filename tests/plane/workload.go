package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
)

// WorkloadCluster is an extra API server (its own etcd and kube-apiserver)
// standing in for a cluster that Cluster API manages: what the management
// plane's Flux controllers deliver to through a kubeconfig Secret.
type WorkloadCluster struct {
	Name string
	// Kubeconfig is the admin kubeconfig (embedded credentials), the value a
	// CAPI `<cluster>-kubeconfig` Secret carries under key `value`.
	Kubeconfig []byte
	// KubeconfigPath is the same kubeconfig on disk.
	KubeconfigPath string
	Config         *rest.Config
	// RunDir holds its data and certificates; its logs are in the plane's
	// run directory, prefixed with Name.
	RunDir  string
	tracker *tracker
}

// WorkloadOptions configure a workload cluster.
type WorkloadOptions struct {
	// ControllerManager also runs kube-controller-manager, which finalizes
	// deleted namespaces and runs garbage collection; without it a deleted
	// namespace stays Terminating.
	ControllerManager bool
}

// StartWorkloadCluster starts a workload cluster named name (a DNS label).
// The plane stops it on Stop; failures tear down what it started.
func (p *Plane) StartWorkloadCluster(ctx context.Context, name string, opts WorkloadOptions) (*WorkloadCluster, error) {
	dir := filepath.Join(p.RunDir, "workload", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &WorkloadCluster{Name: name, RunDir: dir, tracker: &tracker{logDir: p.RunDir}}
	p.mu.Lock()
	p.workloads = append(p.workloads, w)
	p.mu.Unlock()
	api, err := startAPIServer(ctx, apiServerOptions{
		Name:    name,
		Dir:     dir,
		BinDir:  p.opts.BinDir,
		Extra:   p.opts.ExtraArgs,
		Tracker: w.tracker,
	})
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("starting workload cluster %s (logs in %s): %w", name, p.RunDir, err)
	}
	if opts.ControllerManager {
		wait, err := startControllerManager(api, w.tracker, p.opts.ExtraArgs)
		if err == nil {
			err = wait(ctx)
		}
		if err != nil {
			w.stop()
			return nil, fmt.Errorf("starting workload cluster %s (logs in %s): %w", name, p.RunDir, err)
		}
	}
	w.Kubeconfig, w.KubeconfigPath, w.Config = api.Kubeconfig, api.KubeconfigPath, api.Config
	p.logf("workload cluster %s ready at %s", name, api.URL())
	return w, nil
}

func (w *WorkloadCluster) stop() { w.tracker.stopAll() }

// Stop stops the workload cluster's processes and returns once they are
// gone; the plane's Stop does it for every workload cluster.
func (w *WorkloadCluster) Stop() { w.stop() }

// PIDs lists the process ids of the workload cluster's processes.
func (w *WorkloadCluster) PIDs() []int { return w.tracker.pids() }

// Kill SIGKILLs a component of the workload cluster (etcd,
// kube-apiserver, kube-controller-manager): with its API server gone, the
// cluster is unreachable. Restart brings it back.
func (w *WorkloadCluster) Kill(component string) error {
	return w.tracker.kill(w.Name + "-" + component)
}

// Restart starts a component of the workload cluster again with the
// arguments it had, killing it first if it runs, and waits until it is
// ready.
func (w *WorkloadCluster) Restart(ctx context.Context, component string) error {
	return w.tracker.restartNamed(ctx, w.Name+"-"+component)
}
