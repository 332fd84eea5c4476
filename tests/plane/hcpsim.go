package plane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// StartHCPSim installs the SimulatedControlPlane CRD, waits until it is
// Established and runs hcpsim, the stand-in for a hosted-control-plane
// operator, in this process until Stop (log hcpsim.log in the run
// directory). Each SimulatedControlPlane gets a workload cluster of its own
// (a real etcd and kube-apiserver). Calling it again does nothing more.
func (p *Plane) StartHCPSim(ctx context.Context) error {
	p.mu.Lock()
	running := p.hcpsim != nil
	p.mu.Unlock()
	if running {
		return nil
	}
	objs, err := DecodeYAML(strings.NewReader(hcpsim.CRDManifest))
	if err != nil {
		return err
	}
	if err := p.ApplyCRDs(ctx, objs); err != nil {
		return fmt.Errorf("installing the %s CRD: %w", hcpsim.CRDName, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hcpsim != nil {
		return nil
	}
	if p.runCtx.Err() != nil {
		return errors.New("starting hcpsim: the plane is stopped")
	}
	logFile, err := os.OpenFile(p.LogPath("hcpsim"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting hcpsim: %w", err)
	}
	op, err := hcpsim.New(p.Config, hcpsim.Options{
		Backend: hcpsimBackend{p},
		Logf: func(format string, args ...any) {
			fmt.Fprintf(logFile, time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
		},
	})
	if err != nil {
		logFile.Close()
		return err
	}
	runCtx, cancel := context.WithCancel(p.runCtx)
	run := &hcpsimRun{operator: op, cancel: cancel, done: make(chan struct{})}
	p.hcpsim = run
	go func() {
		defer close(run.done)
		defer logFile.Close()
		if err := op.Run(runCtx); err != nil {
			fmt.Fprintf(logFile, "hcpsim stopped: %v\n", err)
		}
	}()
	p.logf("hcpsim running (log %s)", p.LogPath("hcpsim"))
	return nil
}

// hcpsimRun is the operator StartHCPSim runs.
type hcpsimRun struct {
	operator *hcpsim.Operator
	cancel   context.CancelFunc
	done     chan struct{}
}

// stop ends the operator, which stops every control plane it runs, and
// returns once it has.
func (r *hcpsimRun) stop() {
	r.cancel()
	<-r.done
}

// HCPSimWorkloadCluster is the workload cluster hcpsim runs for the
// SimulatedControlPlane namespace/name, if it runs one: tests Kill and
// Restart its components to simulate an outage of the hosted control plane.
func (p *Plane) HCPSimWorkloadCluster(namespace, name string) (*WorkloadCluster, bool) {
	p.mu.Lock()
	run := p.hcpsim
	p.mu.Unlock()
	if run == nil {
		return nil, false
	}
	cp, ok := run.operator.ControlPlane(namespace, name)
	if !ok {
		return nil, false
	}
	return cp.(hcpsimControlPlane).w, true
}

// HCPSimRunning reports whether hcpsim runs the etcd and kube-apiserver of
// the SimulatedControlPlane namespace/name and both processes are alive.
func (p *Plane) HCPSimRunning(namespace, name string) bool {
	w, ok := p.HCPSimWorkloadCluster(namespace, name)
	if !ok {
		return false
	}
	w.tracker.mu.Lock()
	defer w.tracker.mu.Unlock()
	if len(w.tracker.procs) == 0 {
		return false
	}
	for _, proc := range w.tracker.procs {
		if proc.exited() {
			return false
		}
	}
	return true
}

// HCPSimPIDs lists the process ids of the etcd and kube-apiserver hcpsim
// runs for the SimulatedControlPlane namespace/name; none when it runs
// none.
func (p *Plane) HCPSimPIDs(namespace, name string) []int {
	w, ok := p.HCPSimWorkloadCluster(namespace, name)
	if !ok {
		return nil
	}
	return w.PIDs()
}

// hcpsimBackend runs hcpsim's control planes as workload clusters: etcd
// and kube-apiserver only, like the control plane pods of a hosted
// backend, without kube-controller-manager.
type hcpsimBackend struct{ p *Plane }

func (b hcpsimBackend) Start(ctx context.Context, name string) (hcpsim.ControlPlane, error) {
	// The name is unique per object; a leftover directory would only be
	// one of a failed start.
	if err := os.RemoveAll(filepath.Join(b.p.RunDir, "workload", name)); err != nil {
		return nil, err
	}
	w, err := b.p.StartWorkloadCluster(ctx, name, WorkloadOptions{})
	if err != nil {
		return nil, err
	}
	return hcpsimControlPlane{w}, nil
}

type hcpsimControlPlane struct{ w *WorkloadCluster }

func (c hcpsimControlPlane) Endpoint() string   { return c.w.Config.Host }
func (c hcpsimControlPlane) Kubeconfig() []byte { return c.w.Kubeconfig }
func (c hcpsimControlPlane) Stop()              { c.w.Stop() }
