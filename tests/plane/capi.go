package plane

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/envsubst"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// CAPIVersion is the Cluster API release the plane's manager is built from.
const CAPIVersion = "v1.14.2"

// CAPIManagerOptions configure the real Cluster API core manager.
type CAPIManagerOptions struct {
	// Namespace holds the core provider's components: the webhook Service
	// capi-webhook-service and the Secret capi-webhook-service-cert that
	// certsim fills for the Certificate capi-serving-cert. Default
	// capi-system.
	Namespace string
	// Install applies the real core components of CAPIVersion (CRDs,
	// webhooks, Certificate, Service, RBAC, Deployment; variables at their
	// defaults) before starting the manager. Leave it false when something
	// else installed them, e.g. a Flux Kustomization under test.
	Install bool
	// ServiceAccount, when set, runs the manager as that ServiceAccount of
	// Namespace (capi-manager in the released components), with a token of
	// the TokenRequest API, so it may do only what the components' RBAC,
	// and the ClusterRoles aggregated into it, grant, as its Deployment's
	// pod would. Default: the plane's admin user.
	ServiceAccount string
}

// CAPIManager is a running Cluster API core manager.
type CAPIManager struct {
	Namespace string
	// WebhookAddr is where it serves its webhooks (loopback).
	WebhookAddr string
	proc        *process
}

// CAPIComponentsPath is the rendered core-components.yaml of a Cluster API
// release that `make tools` prepared (v1.13.6 and v1.14.2).
func (p *Plane) CAPIComponentsPath(version, file string) string {
	return filepath.Join(p.opts.BinDir, "fixtures", "capi", version, file)
}

// StartCAPIManager runs the real CAPI core manager as a local process: its
// controllers work on the plane, and the webhook router sends the API
// server's calls for <namespace>/capi-webhook-service (admission and CRD
// conversion) to it. It serves the certificate certsim issued for the
// provider's own Certificate, so the caBundles in the CRDs and webhook
// configurations trust it exactly as they would trust the in-cluster pod.
func (p *Plane) StartCAPIManager(ctx context.Context, opts CAPIManagerOptions) (*CAPIManager, error) {
	if opts.Namespace == "" {
		opts.Namespace = "capi-system"
	}
	if opts.Install {
		if opts.Namespace != "capi-system" {
			// The released components name capi-system throughout; moving
			// them is the product's job (clusterctl's namespace fixes).
			return nil, fmt.Errorf("the harness installs Cluster API only into capi-system, not %q", opts.Namespace)
		}
		if err := p.installCAPICore(ctx, opts.Namespace); err != nil {
			return nil, err
		}
	}
	certDir := filepath.Join(p.RunDir, "capi-manager-certs")
	if err := p.writeWebhookCert(ctx, opts.Namespace, "capi-webhook-service-cert", certDir); err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}
	diagnosticsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	kubeconfig := p.Kubeconfig
	if opts.ServiceAccount != "" {
		if kubeconfig, err = p.ServiceAccountKubeconfig(ctx, opts.Namespace, opts.ServiceAccount); err != nil {
			return nil, err
		}
	}
	name := "cluster-api-manager"
	proc, err := startProcess(processSpec{
		Name:   name,
		Binary: filepath.Join(p.opts.BinDir, name),
		Args: append([]string{
			"--leader-elect=false",
			"--webhook-port=" + strconv.Itoa(webhookPort),
			"--webhook-cert-dir=" + certDir,
			"--health-addr=127.0.0.1:" + strconv.Itoa(healthPort),
			"--diagnostics-address=127.0.0.1:" + strconv.Itoa(diagnosticsPort),
			"--insecure-diagnostics=true",
		}, p.opts.ExtraArgs[name]...),
		Env:    []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + opts.Namespace},
		LogDir: p.tracker.logDir,
	})
	if err != nil {
		return nil, err
	}
	p.tracker.add(proc)
	err = proc.waitReady(ctx, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	})
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(webhookPort)
	p.Webhooks.Route(opts.Namespace, "capi-webhook-service", addr)
	if err := p.waitCABundles(ctx, opts.Namespace, "capi-webhook-service", filepath.Join(certDir, "ca.crt")); err != nil {
		return nil, err
	}
	p.logf("cluster-api manager %s serving webhooks of %s/capi-webhook-service at %s", CAPIVersion, opts.Namespace, addr)
	return &CAPIManager{Namespace: opts.Namespace, WebhookAddr: addr, proc: proc}, nil
}

// Stop stops the manager; webhook calls for its Service then fail.
func (m *CAPIManager) Stop() { m.proc.stop(10 * time.Second) }

// installCAPICore applies the real core components, with every clusterctl
// variable at its default, into namespace.
func (p *Plane) installCAPICore(ctx context.Context, namespace string) error {
	path := p.CAPIComponentsPath(CAPIVersion, "core-components.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading Cluster API components (build them with `make tools`): %w", err)
	}
	rendered, err := envsubst.Eval(string(data), func(string) (string, bool) { return "", false })
	if err != nil {
		return fmt.Errorf("substituting defaults in %s: %w", path, err)
	}
	objs, err := p.applyYAML(ctx, strings.NewReader(rendered))
	if err != nil {
		return fmt.Errorf("installing Cluster API %s core components: %w", CAPIVersion, err)
	}
	return waitCRDsEstablished(ctx, p.Config, objs)
}

// writeWebhookCert waits for the webhook serving Secret and writes its
// tls.crt and tls.key to dir, as the manager's pod would mount them.
func (p *Plane) writeWebhookCert(ctx context.Context, namespace, secret, dir string) error {
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	var s *corev1.Secret
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if len(got.Data["tls.crt"]) == 0 || len(got.Data["tls.key"]) == 0 {
			return false, nil
		}
		s = got
		return true, nil
	})
	if err != nil {
		return &ComponentError{
			Component: "cluster-api-manager",
			Cause:     fmt.Errorf("webhook Secret %s/%s never got a certificate: is the core provider installed there? (%w)", namespace, secret, err),
			LogPath:   p.LogPath("certsim"),
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, key), s.Data[key], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// TestInfraClusterKind is the infrastructure kind of TestInfraClusterCRD.
const TestInfraClusterKind = "TestInfraCluster"

// InstallTestInfraClusterCRD installs the smallest infrastructure kind CAPI
// accepts a Cluster reference to (group infrastructure.cluster.x-k8s.io, a
// CRD carrying the v1beta2 contract label): CAPI looks the CRD up to convert
// and to delete Clusters, and no infrastructure provider runs here.
func (p *Plane) InstallTestInfraClusterCRD(ctx context.Context) error {
	return p.applyCRDs(ctx, testInfraClusterCRD)
}

// applyCRDs applies the CRDs of manifests and waits until they are
// established.
func (p *Plane) applyCRDs(ctx context.Context, manifests string) error {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return err
	}
	objs, err := DecodeYAML(strings.NewReader(manifests))
	if err != nil {
		return err
	}
	if err := applier.Apply(ctx, objs...); err != nil {
		return err
	}
	return waitCRDsEstablished(ctx, p.Config, objs)
}

const testInfraClusterCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: testinfraclusters.infrastructure.cluster.x-k8s.io
  labels:
    cluster.x-k8s.io/v1beta2: v1beta1
    # What clusterctl labels every provider's objects with, and what
    # clusterctl move finds the kinds to move by.
    clusterctl.cluster.x-k8s.io: ""
spec:
  group: infrastructure.cluster.x-k8s.io
  names:
    kind: TestInfraCluster
    listKind: TestInfraClusterList
    plural: testinfraclusters
    singular: testinfracluster
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// NewTestCluster is a CAPI v1beta2 Cluster in namespace whose
// infrastructure is a TestInfraCluster (InstallTestInfraClusterCRD).
func NewTestCluster(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	u.SetNamespace(namespace)
	u.SetName(name)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{
		"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": TestInfraClusterKind, "name": name,
	}, "spec", "infrastructureRef")
	return u
}

// waitCABundles waits until every admission webhook that calls
// namespace/service trusts the CA that signed the served certificate
// (certsim injects it a moment after issuing, as cert-manager's cainjector
// does), so the API server's first call succeeds.
func (p *Plane) waitCABundles(ctx context.Context, namespace, service, caPath string) error {
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	var pending string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pending = ""
		mutating, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		validating, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var configs []admissionregistrationv1.WebhookClientConfig
		for _, c := range mutating.Items {
			for _, w := range c.Webhooks {
				configs = append(configs, w.ClientConfig)
			}
		}
		for _, c := range validating.Items {
			for _, w := range c.Webhooks {
				configs = append(configs, w.ClientConfig)
			}
		}
		for _, cc := range configs {
			if cc.Service != nil && cc.Service.Namespace == namespace && cc.Service.Name == service && !bytes.Equal(cc.CABundle, ca) {
				pending = "a webhook of " + namespace + "/" + service + " does not trust the serving CA yet"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return &ComponentError{Component: "certsim", Cause: fmt.Errorf("%s: %w", pending, err), LogPath: p.LogPath("certsim")}
	}
	return nil
}
