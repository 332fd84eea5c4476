package plane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// processSpec describes one component process of the plane.
type processSpec struct {
	// Name names the component in errors and log files (etcd, kube-apiserver…).
	Name   string
	Binary string
	Args   []string
	// Env is added to the harness's own environment.
	Env []string
	// LogDir receives <Name>.log with the component's stdout and stderr.
	LogDir string
}

// process is a started component. Each runs in its own process group, so a
// stop reaches whatever it forked, and with a parent-death signal, so a
// harness that dies without cleaning up (a test timeout, a panic) still takes
// it down.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	// spec started the process, and ready is the check waitReady was
	// given: what restart needs to start it again.
	spec  processSpec
	ready func(context.Context) error
}

// ComponentError is returned when a component cannot start or dies: it names
// the component, the cause and the log file to read.
type ComponentError struct {
	Component string
	Cause     error
	LogPath   string
	// LogTail holds the last lines of the log, to spare a trip to the file.
	LogTail string
}

func (e *ComponentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "component %s: %v", e.Component, e.Cause)
	if e.LogPath != "" {
		fmt.Fprintf(&b, " (log: %s)", e.LogPath)
	}
	if e.LogTail != "" {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", filepath.Base(e.LogPath), e.LogTail)
	}
	return b.String()
}

func (e *ComponentError) Unwrap() error { return e.Cause }

func startProcess(spec processSpec) (*process, error) {
	if _, err := os.Stat(spec.Binary); err != nil {
		return nil, &ComponentError{
			Component: spec.Name,
			Cause:     fmt.Errorf("binary %s not found; build it with `make tools`: %w", spec.Binary, err),
		}
	}
	logPath := filepath.Join(spec.LogDir, spec.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, &ComponentError{Component: spec.Name, Cause: fmt.Errorf("opening log file: %w", err)}
	}
	fmt.Fprintf(logFile, "# %s %s\n", spec.Binary, strings.Join(spec.Args, " "))
	cmd := exec.Command(spec.Binary, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, &ComponentError{Component: spec.Name, Cause: fmt.Errorf("starting: %w", err), LogPath: logPath}
	}
	p := &process{name: spec.Name, logPath: logPath, cmd: cmd, done: make(chan struct{}), spec: spec}
	go func() {
		p.exitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure describes why the process is not usable, with its log tail.
func (p *process) failure(cause error) *ComponentError {
	return &ComponentError{Component: p.name, Cause: cause, LogPath: p.logPath, LogTail: tailFile(p.logPath, 15)}
}

// waitReady polls check until it succeeds, the process exits, or the timeout
// passes; the error names the component and its log either way.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	p.ready = check
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p.exited() {
			return p.failure(fmt.Errorf("exited early (%v)", p.exitErr))
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return p.failure(fmt.Errorf("not ready after %s: %v", timeout, last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the component forked into its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// kill ends the process group at once, as a crash or an OOM kill does.
func (p *process) kill() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// restart starts the process again with its spec, once it has ended
// (kill or stop it first), and waits for the readiness check it was
// started with; the new process logs to the same file.
func (p *process) restart(ctx context.Context) (*process, error) {
	if !p.exited() {
		return nil, fmt.Errorf("component %s still runs: kill or stop it first", p.name)
	}
	next, err := startProcess(p.spec)
	if err != nil {
		return nil, err
	}
	check := p.ready
	if check == nil {
		check = func(context.Context) error { return nil }
	}
	if err := next.waitReady(ctx, 90*time.Second, check); err != nil {
		next.stop(10 * time.Second)
		return nil, err
	}
	return next, nil
}

// pid is the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

func tailFile(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	data = bytes.TrimRight(data, "\n")
	parts := bytes.Split(data, []byte("\n"))
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return string(bytes.Join(parts, []byte("\n")))
}
