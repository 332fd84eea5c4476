package plane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClusterAPIOperatorUser is the user cluster-api-operator authenticates as,
// so the audit log tells its writes apart from Capwright's and Flux's.
const ClusterAPIOperatorUser = "cluster-api-operator"

// clusterAPIOperatorBinding makes ClusterAPIOperatorUser cluster-admin: the
// operator's own manifests bind its ServiceAccount to a ClusterRole that
// allows everything ("*" on "*"), since it installs arbitrary providers.
const clusterAPIOperatorBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cluster-api-operator-plane-user
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + ClusterAPIOperatorUser + `
`

// StartClusterAPIOperator installs cluster-api-operator's CRDs and runs its
// manager (bin/cluster-api-operator, built by `make tools`) against the
// plane, for the adoption suite that takes its providers over and the
// benchmark that compares it with Capwright; its log is
// cluster-api-operator.log. Process.Stop stops it, as scaling its
// Deployment to zero would.
//
// What was checked in the v0.29.0 source (cmd/main.go and the config tree):
//   - The CRDs (config/crd/bases) serve one version, v1alpha2, so they are
//     applied without config/crd's conversion-webhook and CA-injection
//     patches.
//   - There is no switch that turns webhooks off: main registers the
//     provider webhooks unconditionally (setupWebhooks), and the manager
//     then starts a webhook server that needs tls.crt/tls.key in
//     --webhook-cert-dir. Those webhooks only default the namespaces of
//     spec.configSecret and spec.additionalManifestsRef and validate
//     nothing, and no webhook configuration is installed here, so the API
//     server never calls them; the server gets a throwaway certificate from
//     the plane's CA and a free port (it listens on every interface: the
//     operator sets no webhook host).
//   - Nothing installs cert-manager: the operator only creates the
//     provider's components (clusterctl's ProviderComponents().Create and,
//     for upgrades, ProviderUpgrader().ApplyCustomPlan); clusterctl's
//     cert-manager installer is not called. The providers' Certificates and
//     Issuers are served by the plane's certsim.
//   - Leader election is off by default (--leader-elect); metrics are off
//     with --diagnostics-address=0, pprof with an empty --profiler-address;
//     --health-addr serves /readyz. Without --namespace it watches every
//     namespace. It reads /config/clusterctl.yaml only when that file exists.
func (p *Plane) StartClusterAPIOperator(ctx context.Context) (*Process, error) {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return nil, err
	}
	objs, err := applier.ApplyFiles(ctx, filepath.Join(p.opts.BinDir, "cluster-api-operator-crds"))
	if err != nil {
		return nil, fmt.Errorf("installing cluster-api-operator CRDs (build them with `make tools`): %w", err)
	}
	if err := waitCRDsEstablished(ctx, p.Config, objs); err != nil {
		return nil, err
	}
	binding, err := DecodeYAML(strings.NewReader(clusterAPIOperatorBinding))
	if err != nil {
		return nil, err
	}
	if err := applier.Apply(ctx, binding...); err != nil {
		return nil, err
	}
	kubeconfig, err := p.api.componentKubeconfig(ClusterAPIOperatorUser)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(p.RunDir, "cluster-api-operator-certs")
	if err := p.writeLoopbackServingCert(certDir, "cluster-api-operator-webhook"); err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	proc, err := p.StartProcess(ctx, ProcessOptions{
		Name:   "cluster-api-operator",
		Binary: filepath.Join(p.opts.BinDir, "cluster-api-operator"),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--health-addr=127.0.0.1:" + strconv.Itoa(probePort),
			"--diagnostics-address=0",
			"--profiler-address=",
			"--webhook-port=" + strconv.Itoa(webhookPort),
			"--webhook-cert-dir=" + certDir,
		},
		ReadyURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
	})
	if err != nil {
		return nil, err
	}
	p.logf("cluster-api-operator running (log %s)", proc.LogPath())
	return proc, nil
}

// writeLoopbackServingCert writes tls.crt and tls.key, a serving certificate
// for 127.0.0.1 and localhost signed by the plane's CA, into dir.
func (p *Plane) writeLoopbackServingCert(dir, commonName string) error {
	kp, err := p.api.ca.issue(certRequest{CommonName: commonName, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), kp.CertPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), kp.KeyPEM, 0o600)
}
