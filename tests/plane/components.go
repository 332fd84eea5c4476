package plane

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FluxNamespace is where the Flux controllers consider themselves to run
// (RUNTIME_NAMESPACE), as `flux install` would place them.
const FluxNamespace = "flux-system"

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

type readyWait = func(context.Context) error

// startControllerManager runs kube-controller-manager: it turns Deployments
// into ReplicaSets and Pods, removes the not-ready taint from new nodes,
// publishes kube-root-ca.crt and finalizes namespaces.
func (p *Plane) startControllerManager() (readyWait, error) {
	return startControllerManager(p.api, p.tracker, p.opts.ExtraArgs)
}

func startControllerManager(api *apiServer, t *tracker, extra map[string][]string) (readyWait, error) {
	kubeconfig, err := api.componentKubeconfig("system:kube-controller-manager")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := api.opts.component("kube-controller-manager")
	cert, key, err := api.servingPair(base)
	if err != nil {
		return nil, err
	}
	proc, err := startProcess(processSpec{
		Name:   base,
		Binary: filepath.Join(api.opts.BinDir, "kube-controller-manager"),
		Args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + cert,
			"--tls-private-key-file=" + key,
			"--service-account-private-key-file=" + api.saKey,
			"--root-ca-file=" + api.caPath(),
			"--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + api.caPath(),
			// Node IPAM and cloud controllers have nothing to do here.
			"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller",
		}, extra[base]...),
		LogDir: t.logDir,
	})
	if err != nil {
		return nil, err
	}
	t.add(proc)
	client := api.tlsClient()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return func(ctx context.Context) error {
		return proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, client, url) })
	}, nil
}

func (p *Plane) startScheduler() (readyWait, error) {
	kubeconfig, err := p.api.componentKubeconfig("system:kube-scheduler")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cert, key, err := p.api.servingPair("kube-scheduler")
	if err != nil {
		return nil, err
	}
	proc, err := startProcess(processSpec{
		Name:   "kube-scheduler",
		Binary: filepath.Join(p.opts.BinDir, "kube-scheduler"),
		Args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + cert,
			"--tls-private-key-file=" + key,
		}, p.opts.ExtraArgs["kube-scheduler"]...),
		LogDir: p.tracker.logDir,
	})
	if err != nil {
		return nil, err
	}
	p.tracker.add(proc)
	client := p.api.tlsClient()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return func(ctx context.Context) error {
		return proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, client, url) })
	}, nil
}

// startKwok runs kwok, which plays the kubelet of the simulated nodes: nodes
// become Ready and keep their leases, pods get an IP and turn Running and
// Ready, so Deployments become Available without a container runtime.
// Pods with an image on a .invalid host are the exception: a real kubelet
// cannot pull it, so they stay Pending in ImagePullBackOff (kwokstages.go).
func (p *Plane) startKwok() (readyWait, error) {
	stages, err := kwokStages(p.opts.BinDir, p.RunDir)
	if err != nil {
		return nil, &ComponentError{Component: "kwok", Cause: err}
	}
	nodePort, err := freePort()
	if err != nil {
		return nil, err
	}
	serverPort, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + p.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(nodePort),
		"--server-address=127.0.0.1:" + strconv.Itoa(serverPort),
		"--cidr=10.244.0.0/16",
		"--node-lease-duration-seconds=40",
	}
	for _, s := range stages {
		args = append(args, "-c", s)
	}
	proc, err := startProcess(processSpec{
		Name:   "kwok",
		Binary: filepath.Join(p.opts.BinDir, "kwok"),
		Args:   append(args, p.opts.ExtraArgs["kwok"]...),
		// kwok reads ~/.kwok/kwok.yaml when present; keep a user's file out.
		Env:    []string{"HOME=" + p.RunDir},
		LogDir: p.tracker.logDir,
	})
	if err != nil {
		return nil, err
	}
	p.tracker.add(proc)
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		for i := range p.opts.Nodes {
			if err := createKwokNode(ctx, client, fmt.Sprintf("kwok-node-%d", i)); err != nil {
				return proc.failure(err)
			}
		}
		return proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
			return nodesReady(ctx, client, p.opts.Nodes)
		})
	}, nil
}

func createKwokNode(ctx context.Context, client kubernetes.Interface, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: nodeResources(),
			Capacity:    nodeResources(),
		},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating simulated node %s: %w", name, err)
	}
	return nil
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
}

func nodesReady(ctx context.Context, client kubernetes.Interface, want int) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ready := 0
	for _, n := range nodes.Items {
		if nodeSchedulable(&n) {
			ready++
		}
	}
	if ready < want {
		return fmt.Errorf("%d of %d simulated nodes Ready and untainted", ready, want)
	}
	return nil
}

// nodeSchedulable is Ready with the not-ready taint gone (which
// kube-controller-manager removes shortly after the node turns Ready).
func nodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// installCRDs installs the Flux and cert-manager CRDs server-side and waits
// until they are established.
func (p *Plane) installCRDs(ctx context.Context) error {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return err
	}
	dirs := []string{"assets/crds/flux", "assets/crds/cert-manager"}
	if p.opts.RunDeployments {
		// Flux's CRDs come with its components, as bootstrap applies them.
		dirs = dirs[1:]
	}
	for _, dir := range dirs {
		objs, err := applier.ApplyFiles(ctx, filepath.Join(p.opts.BinDir, dir))
		if err != nil {
			return fmt.Errorf("installing CRDs: %w", err)
		}
		if err := waitCRDsEstablished(ctx, p.Config, objs); err != nil {
			return err
		}
	}
	return nil
}

// ShardLabel is Flux's sharding label, which a controller started with
// --watch-label-selector reads (Options.KustomizeShards).
const ShardLabel = "sharding.fluxcd.io/key"

// WatchLabelSelector is the --watch-label-selector of the Flux controller
// instance of shard, as Flux's sharding guide sets it: the shard's key,
// or for the main instance (shard "") no key at all.
func WatchLabelSelector(shard string) string {
	if shard == "" {
		return "!" + ShardLabel
	}
	return ShardLabel + "=" + shard
}

// KustomizeShard names the process (and log) of the kustomize-controller
// instance of a shard (Options.KustomizeShards).
func KustomizeShard(shard string) string { return "kustomize-controller-" + shard }

// startFlux starts source-controller, kustomize-controller and
// helm-controller against the plane, watching all namespaces; with
// Options.KustomizeShards, a kustomize-controller per shard besides the
// main one, as Flux's sharding guide sets them up.
func (p *Plane) startFlux(ctx context.Context) ([]readyWait, error) {
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", FluxNamespace, err)
	}
	storagePort, err := freePort()
	if err != nil {
		return nil, err
	}
	storageAddr := "127.0.0.1:" + strconv.Itoa(storagePort)
	storageDir := filepath.Join(p.RunDir, "flux-storage")
	if err := os.MkdirAll(storageDir, 0o755); err != nil {
		return nil, err
	}
	type controller struct {
		name, binary string
		args         []string
	}
	// ExternalArtifact: Capwright hands a provider's additional manifests
	// to Flux as an ExternalArtifact, which kustomize-controller v1.9
	// reads only with this gate.
	kustomize := []string{"--feature-gates=ExternalArtifact=true"}
	controllers := []controller{
		{"source-controller", "source-controller", []string{"--storage-path=" + storageDir, "--storage-addr=" + storageAddr, "--storage-adv-addr=" + storageAddr}},
		{"kustomize-controller", "kustomize-controller", kustomize},
		{"helm-controller", "helm-controller", nil},
	}
	if len(p.opts.KustomizeShards) > 0 {
		// Flux's sharding guide: the main instance takes what carries no
		// shard key, each shard's instance what carries its own.
		controllers[1].args = append(slices.Clone(kustomize), "--watch-label-selector="+WatchLabelSelector(""))
		for _, shard := range p.opts.KustomizeShards {
			args := append(slices.Clone(kustomize), p.opts.ExtraArgs["kustomize-controller"]...)
			controllers = append(controllers, controller{KustomizeShard(shard), "kustomize-controller",
				append(args, "--watch-label-selector="+WatchLabelSelector(shard))})
		}
	}
	var waits []readyWait
	for _, c := range controllers {
		metricsPort, err := freePort()
		if err != nil {
			return nil, err
		}
		healthPort, err := freePort()
		if err != nil {
			return nil, err
		}
		args := append([]string{
			"--watch-all-namespaces=true",
			"--enable-leader-election=false",
			"--log-level=info",
			"--log-encoding=json",
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(metricsPort),
			"--health-addr=127.0.0.1:" + strconv.Itoa(healthPort),
		}, c.args...)
		// Each controller gets a temp directory of its own: at start,
		// kustomize-controller removes every directory in its TMPDIR that
		// looks like one of its own working directories, and would take
		// those of another plane's kustomize-controller running beside it
		// (e2e packages run in parallel) mid-build.
		tmp := filepath.Join(p.RunDir, "tmp", c.name)
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return nil, err
		}
		proc, err := startProcess(processSpec{
			Name:   c.name,
			Binary: filepath.Join(p.opts.BinDir, c.binary),
			Args:   append(args, p.opts.ExtraArgs[c.name]...),
			// The Flux controllers have no --kubeconfig flag.
			Env:    []string{"KUBECONFIG=" + p.Kubeconfig, "RUNTIME_NAMESPACE=" + FluxNamespace, "TMPDIR=" + tmp},
			LogDir: p.tracker.logDir,
		})
		if err != nil {
			return nil, err
		}
		p.tracker.add(proc)
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
		waits = append(waits, func(ctx context.Context) error {
			return proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, http.DefaultClient, url) })
		})
	}
	return waits, nil
}
