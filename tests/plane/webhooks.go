package plane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhookRouter lets the API server reach admission and conversion webhooks
// that are served by local processes.
//
// Why: provider manifests point their webhooks at Services whose pods kwok
// only simulates, and there is no kube-proxy. The API server is configured
// with an egress selector whose "cluster" traffic (which includes every
// Service-based webhook call) goes through this HTTP CONNECT proxy on a Unix
// socket. The proxy finds the Service behind the requested ClusterIP (or
// endpoint IP) and, when a route was registered for it, connects to the local
// process serving it; otherwise it refuses, so the webhook fails as it would
// in a cluster whose webhook pods are down. Loopback targets pass through.
type WebhookRouter struct {
	socket       string
	egressConfig string
	listener     net.Listener
	log          *log.Logger
	logFile      *os.File

	mu     sync.RWMutex
	client kubernetes.Interface
	routes map[string]string
}

func newWebhookRouter(runDir string) (*WebhookRouter, error) {
	// Unix socket paths are limited to 108 bytes; run directories can be
	// deeper than that.
	sockDir, err := os.MkdirTemp("", "plane-egress-")
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(sockDir, "egress.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, &ComponentError{Component: "webhook-router", Cause: err}
	}
	logFile, err := os.Create(filepath.Join(runDir, "webhook-router.log"))
	if err != nil {
		l.Close()
		return nil, err
	}
	config := filepath.Join(runDir, "egress-selector.yaml")
	data := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socket)
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		l.Close()
		logFile.Close()
		return nil, err
	}
	return &WebhookRouter{
		socket:       socket,
		egressConfig: config,
		listener:     l,
		log:          log.New(logFile, "", log.LstdFlags|log.Lmicroseconds),
		logFile:      logFile,
		routes:       map[string]string{},
	}, nil
}

// Route sends webhook calls for Service namespace/name to addr (host:port
// of a local process serving TLS with a certificate the webhook's caBundle
// trusts).
func (r *WebhookRouter) Route(namespace, name, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes[namespace+"/"+name] = addr
	r.log.Printf("route service %s/%s -> %s", namespace, name, addr)
}

// Unroute removes the route of Service namespace/name.
func (r *WebhookRouter) Unroute(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.routes, namespace+"/"+name)
	r.log.Printf("unroute service %s/%s", namespace, name)
}

func (r *WebhookRouter) setClient(c kubernetes.Interface) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = c
}

func (r *WebhookRouter) serve(ctx context.Context) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handleConnect), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		_ = os.RemoveAll(filepath.Dir(r.socket))
		r.logFile.Close()
	}()
	_ = srv.Serve(r.listener)
}

func (r *WebhookRouter) handleConnect(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodConnect {
		http.Error(w, "only CONNECT is supported", http.StatusMethodNotAllowed)
		return
	}
	target, err := r.resolve(req.Context(), req.Host)
	if err != nil {
		r.log.Printf("CONNECT %s refused: %v", req.Host, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	upstream, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		r.log.Printf("CONNECT %s -> %s failed: %v", req.Host, target, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "hijacking not supported", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	r.log.Printf("CONNECT %s -> %s", req.Host, target)
	_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	pipe(conn, buf.Reader, upstream)
}

// resolve maps a CONNECT target to the local address serving it.
func (r *WebhookRouter) resolve(ctx context.Context, hostPort string) (string, error) {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", fmt.Errorf("bad CONNECT target %q: %w", hostPort, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return hostPort, nil
	}
	r.mu.RLock()
	client := r.client
	r.mu.RUnlock()
	if client == nil {
		return "", errors.New("the plane's API client is not ready")
	}
	service, err := serviceForIP(ctx, client, host)
	if err != nil {
		return "", err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	addr, ok := r.routes[service]
	if !ok {
		return "", fmt.Errorf("no local process serves Service %s (target %s)", service, hostPort)
	}
	return addr, nil
}

// serviceForIP finds the Service whose ClusterIP, or one of whose endpoint
// addresses, is ip, as namespace/name.
func serviceForIP(ctx context.Context, client kubernetes.Interface, ip string) (string, error) {
	services, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, s := range services.Items {
		for _, c := range s.Spec.ClusterIPs {
			if c == ip {
				return s.Namespace + "/" + s.Name, nil
			}
		}
	}
	slices, err := client.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				if a == ip {
					return s.Namespace + "/" + s.Labels["kubernetes.io/service-name"], nil
				}
			}
		}
	}
	return "", fmt.Errorf("no Service has address %s", ip)
}

// pipe copies both ways until either side closes.
func pipe(client net.Conn, clientBuf *bufio.Reader, upstream net.Conn) {
	defer client.Close()
	defer upstream.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, clientBuf)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
}
