package plane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminUser is the identity of the plane's admin kubeconfig; the group
// system:masters makes it cluster-admin without any RBAC object.
const adminUser = "capwright-admin"

// apiServerOptions configure one etcd + kube-apiserver pair.
type apiServerOptions struct {
	// Name prefixes component names (log files, errors): "" for the
	// management plane, "workload-1" for a workload cluster.
	Name   string
	Dir    string
	BinDir string
	Port   int
	Extra  map[string][]string
	Egress string // egress selector config file, optional
	// AuditLog records every write request in <Dir>/audit.log.
	AuditLog bool
	Tracker  *tracker
	// Context names the admin kubeconfig's cluster and context when Name
	// does not (a second management cluster, whose components keep their
	// plain names in a run directory of their own).
	Context string
}

// apiServer is a running etcd + kube-apiserver with its PKI and an admin
// kubeconfig.
type apiServer struct {
	opts       apiServerOptions
	ca         *certAuthority
	port       int
	Kubeconfig []byte
	// KubeconfigPath is the admin kubeconfig on disk.
	KubeconfigPath string
	Config         *rest.Config
	pkiDir         string
	saKey          string
}

func (o apiServerOptions) component(base string) string {
	if o.Name == "" {
		return base
	}
	return o.Name + "-" + base
}

// startAPIServer starts etcd and kube-apiserver and waits until the API
// server is ready. Processes are registered with the tracker as they start,
// so the caller's teardown reaches them whatever happens.
func startAPIServer(ctx context.Context, o apiServerOptions) (*apiServer, error) {
	pki := filepath.Join(o.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	ca, err := newCertAuthority(o.component("capwright-plane-ca"))
	if err != nil {
		return nil, err
	}
	s := &apiServer{opts: o, ca: ca, pkiDir: pki}
	if err := os.WriteFile(s.caPath(), ca.certPEM, 0o644); err != nil {
		return nil, err
	}
	s.port = o.Port
	if s.port == 0 {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdURL, err := s.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.startKubeAPIServer(ctx, etcdURL); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *apiServer) caPath() string { return filepath.Join(s.pkiDir, "ca.crt") }

// URL is the API server's address.
func (s *apiServer) URL() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *apiServer) startEtcd(ctx context.Context) (string, error) {
	clientPort, err := freePort()
	if err != nil {
		return "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	name := s.opts.component("etcd")
	p, err := startProcess(processSpec{
		Name:   name,
		Binary: filepath.Join(s.opts.BinDir, "etcd"),
		Args: append([]string{
			"--name=plane",
			"--data-dir=" + filepath.Join(s.opts.Dir, "etcd"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=plane=" + peerURL,
			// A throw-away test store: durability is not wanted, speed is.
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}, s.opts.Extra[name]...),
		LogDir: s.opts.Tracker.logDir,
	})
	if err != nil {
		return "", err
	}
	s.opts.Tracker.add(p)
	return clientURL, p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, clientURL+"/health")
	})
}

func (s *apiServer) startKubeAPIServer(ctx context.Context, etcdURL string) error {
	serving, err := s.ca.issue(certRequest{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		Server:     true,
	})
	if err != nil {
		return err
	}
	servingCert, servingKey, err := serving.writeFiles(s.pkiDir, "apiserver")
	if err != nil {
		return err
	}
	// The front proxy (request header) CA and client let the API server
	// authenticate aggregated requests; without them every component logs
	// "missing content for CA bundle".
	frontCA, err := newCertAuthority(s.opts.component("front-proxy-ca"))
	if err != nil {
		return err
	}
	frontCAPath := filepath.Join(s.pkiDir, "front-proxy-ca.crt")
	if err := os.WriteFile(frontCAPath, frontCA.certPEM, 0o644); err != nil {
		return err
	}
	frontClient, err := frontCA.issue(certRequest{CommonName: "front-proxy-client", Client: true})
	if err != nil {
		return err
	}
	frontCert, frontKey, err := frontClient.writeFiles(s.pkiDir, "front-proxy-client")
	if err != nil {
		return err
	}
	s.saKey = filepath.Join(s.pkiDir, "sa.key")
	if err := writeServiceAccountKey(s.saKey); err != nil {
		return err
	}
	admin, err := s.ca.issue(certRequest{CommonName: adminUser, Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		return err
	}
	if err := s.writeKubeconfig(admin); err != nil {
		return err
	}

	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + s.pkiDir,
		"--tls-cert-file=" + servingCert,
		"--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + s.caPath(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + s.saKey,
		"--service-account-signing-key-file=" + s.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		// With a loopback advertise address the endpoint reconciler logs an
		// error every 10 s; the kubernetes Service endpoints are not needed.
		"--endpoint-reconciler-type=none",
		"--requestheader-client-ca-file=" + frontCAPath,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + frontCert,
		"--proxy-client-key-file=" + frontKey,
		"--enable-priority-and-fairness=false",
	}
	if s.opts.AuditLog {
		policy := filepath.Join(s.pkiDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return err
		}
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+filepath.Join(s.opts.Dir, "audit.log"), "--audit-log-format=json", "--audit-log-maxsize=0")
	}
	if s.opts.Egress != "" {
		args = append(args, "--egress-selector-config-file="+s.opts.Egress)
	}
	name := s.opts.component("kube-apiserver")
	p, err := startProcess(processSpec{
		Name:   name,
		Binary: filepath.Join(s.opts.BinDir, "kube-apiserver"),
		Args:   append(args, s.opts.Extra[name]...),
		LogDir: s.opts.Tracker.logDir,
	})
	if err != nil {
		return err
	}
	s.opts.Tracker.add(p)
	client, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	return p.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, client, s.URL()+"/readyz")
	})
}

// writeKubeconfig writes the admin kubeconfig with embedded credentials, so
// it can also travel as a Secret (the CAPI kubeconfig Secret of a workload
// cluster).
func (s *apiServer) writeKubeconfig(admin keyPair) error {
	name := s.opts.Name
	if name == "" {
		name = s.opts.Context
	}
	if name == "" {
		name = "capwright-plane"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.URL(), CertificateAuthorityData: s.ca.certPEM}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertPEM, ClientKeyData: admin.KeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: adminUser}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	s.Kubeconfig = data
	s.KubeconfigPath = filepath.Join(s.opts.Dir, "kubeconfig")
	if err := os.WriteFile(s.KubeconfigPath, data, 0o600); err != nil {
		return err
	}
	s.Config, err = clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return err
	}
	s.Config.QPS, s.Config.Burst = 100, 200
	return nil
}

// componentKubeconfig writes a kubeconfig for a control-plane component
// identified by user (e.g. system:kube-controller-manager), which the
// default RBAC of the API server already authorises.
func (s *apiServer) componentKubeconfig(user string, groups ...string) (string, error) {
	kp, err := s.ca.issue(certRequest{CommonName: user, Organization: groups, Client: true})
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["plane"] = &clientcmdapi.Cluster{Server: s.URL(), CertificateAuthorityData: s.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["plane"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: user}
	cfg.CurrentContext = "plane"
	path := filepath.Join(s.pkiDir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// servingPair issues a loopback serving certificate for a component and
// returns the file paths.
func (s *apiServer) servingPair(base string) (certPath, keyPath string, err error) {
	kp, err := s.ca.issue(certRequest{CommonName: base, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		return "", "", err
	}
	return kp.writeFiles(s.pkiDir, base)
}

// tlsClient returns an HTTP client that trusts the plane CA only.
func (s *apiServer) tlsClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.certPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func httpGetOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
