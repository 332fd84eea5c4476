package plane

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Components are told their ports on the command line, so the harness must
// choose ports before the component binds them. Asking the kernel for port 0
// and closing the listener races with everything else on the machine: the
// kernel hands out the same ephemeral range for outgoing connections, and a
// component's own client connections (or a test package running in parallel)
// can take the port before the component binds it. CI saw exactly that
// ("bind: address already in use" from source-controller).
//
// freePort therefore picks ports below the kernel's ephemeral range, which
// the kernel never uses for outgoing connections, and reserves each one for
// the life of this process: in-process with a set, across processes with an
// advisory lock file, so two planes started at once never pick the same port.

const (
	portRangeLow  = 10000
	portAttempts  = 200
	lockDirPrefix = "capwright-ports-"
)

var ports struct {
	sync.Mutex
	taken map[int]*os.File
}

// freePort reserves a free loopback port outside the ephemeral range.
func freePort() (int, error) {
	lo, hi := portRange()
	ports.Lock()
	defer ports.Unlock()
	if ports.taken == nil {
		ports.taken = map[int]*os.File{}
	}
	dir := filepath.Join(os.TempDir(), lockDirPrefix+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	for range portAttempts {
		port := lo + rand.IntN(hi-lo)
		if _, ok := ports.taken[port]; ok {
			continue
		}
		lock, ok := lockPort(dir, port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			lock.Close()
			continue
		}
		l.Close()
		ports.taken[port] = lock
		return port, nil
	}
	return 0, fmt.Errorf("finding a free loopback port: no free port in %d-%d after %d attempts", lo, hi-1, portAttempts)
}

// lockPort takes the advisory lock for port; the kernel releases it when this
// process exits, however it exits.
func lockPort(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// portRange is [portRangeLow, start of the ephemeral range), or a fixed range
// when the kernel's setting cannot be read or leaves too little room below.
func portRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if start, err := strconv.Atoi(f[0]); err == nil {
				hi = start
			}
		}
	}
	if hi-portRangeLow < 1000 {
		return 1024, 1024 + 8000
	}
	return portRangeLow, hi
}
