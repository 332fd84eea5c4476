package plane

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ProcessOptions describe a process a test runs next to the plane, e.g. a
// controller taken out of a released image.
type ProcessOptions struct {
	// Name names the process in errors and its log file (<Name>.log).
	Name   string
	Binary string
	Args   []string
	// Env is added to the test's own environment.
	Env []string
	// ReadyURL, when set, is polled until it answers 200.
	ReadyURL string
}

// Process is a process started by StartProcess; the plane stops it on
// Stop if the test has not.
type Process struct{ proc *process }

// StartProcess runs a process tracked by the plane and, with ReadyURL, waits
// until it answers.
func (p *Plane) StartProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	proc, err := startProcess(processSpec{Name: o.Name, Binary: o.Binary, Args: o.Args, Env: o.Env, LogDir: p.tracker.logDir})
	if err != nil {
		return nil, err
	}
	p.tracker.add(proc)
	if o.ReadyURL != "" {
		if err := proc.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, http.DefaultClient, o.ReadyURL) }); err != nil {
			proc.stop(5 * time.Second)
			return nil, err
		}
	}
	return &Process{proc: proc}, nil
}

// Stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *Process) Stop() { p.proc.stop(10 * time.Second) }

// LogPath is the process's log file.
func (p *Process) LogPath() string { return p.proc.logPath }

// PID is the process id, which is also its process group id.
func (p *Process) PID() int { return p.proc.pid() }

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount namespace/name with a token from the TokenRequest API, as
// a pod of that ServiceAccount would, and returns its path.
func (p *Plane) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	cs, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["plane"] = &clientcmdapi.Cluster{Server: p.api.URL(), CertificateAuthorityData: p.api.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["plane"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: user}
	cfg.CurrentContext = "plane"
	path := filepath.Join(p.api.pkiDir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
