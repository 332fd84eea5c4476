package plane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The pod runner: kwok only simulates pods, so a Deployment that Flux (or
// `flux bootstrap`) applies becomes Available without any container
// running. For the few Deployments whose work a GitOps test needs done,
// the plane runs what the pod's container would run, as a local process
// built from the same source at the same version:
//
//   - Flux's controllers (images ghcr.io/fluxcd/<controller>), from the
//     binaries `make tools` builds, when `flux bootstrap` or a later commit
//     applies their Deployments in flux-system;
//   - Capwright's manager (an image whose repository ends in
//     /capwright-manager, in the plane's registry), from the /manager of
//     the released image, pulled by the reference the Deployment names;
//   - Cluster API's core manager (cluster-api-controller:<CAPIVersion>),
//     from the binary `make tools` builds, its webhooks routed to it.
//
// Each runs with the container's arguments and environment as the kubelet
// would expand them, authenticated as the pod's ServiceAccount (a
// TokenRequest token: the Deployment's RBAC, nothing more), with its
// volumes as directories (emptyDir empty, ConfigMap and Secret volumes
// written from the objects). What a cluster's network gives a pod is
// mapped to loopback, and only that: listen addresses become free loopback
// ports, and the addresses one component names for another (Flux's
// --events-addr, source-controller's --storage-adv-addr, Capwright's
// --artifact-advertise-url, all cluster DNS names of Services) become the
// loopback address of the process behind that Service. Leader election is
// off (one replica; a restart need not wait for a lease). Everything else
// is the Deployment's: a feature gate Git does not set is not set.
//
// A change of the pod template restarts the process with the new one (a
// rollout), scaling to zero or deleting the Deployment stops it, and the
// process is named after the Deployment, so Kill and Restart reach it.

// podRunner runs the Deployments it knows how to run (see above).
type podRunner struct {
	p    *Plane
	kube kubernetes.Interface
	log  *os.File

	// The Services of Flux and Capwright on loopback: fixed for the
	// plane's life, so that a controller started before another names it
	// correctly.
	storageAddr, eventsAddr, receiverAddr, artifactAddr string

	queue chan string
	mu    sync.Mutex
	pods  map[string]*runningPod
	// trust is the CA bundle every pod trusts (SSL_CERT_FILE), once
	// TrustCA added one.
	trust string
}

// runningPod is the process standing in for one Deployment's pod.
type runningPod struct {
	template string
	proc     *process
	// service is the Service routed to it (webhooks), removed on stop.
	service string
}

// fluxImages maps Flux's controller images to the binaries make tools
// builds (Flux v2.9.5's line).
var fluxImages = map[string]string{
	"ghcr.io/fluxcd/source-controller":       "source-controller",
	"ghcr.io/fluxcd/kustomize-controller":    "kustomize-controller",
	"ghcr.io/fluxcd/helm-controller":         "helm-controller",
	"ghcr.io/fluxcd/notification-controller": "notification-controller",
}

// startPodRunner starts the pod runner; it stops with ctx.
func (p *Plane) startPodRunner(ctx context.Context) (*podRunner, error) {
	kube, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(p.RunDir, "pods.log"))
	if err != nil {
		return nil, err
	}
	r := &podRunner{p: p, kube: kube, log: logFile, queue: make(chan string, 256), pods: map[string]*runningPod{}}
	for _, addr := range []*string{&r.storageAddr, &r.eventsAddr, &r.receiverAddr, &r.artifactAddr} {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		*addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	informer := factory.Apps().V1().Deployments().Informer()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if d, ok := obj.(*appsv1.Deployment); ok {
			r.queue <- d.Namespace + "/" + d.Name
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	p.inProcess.Add(1)
	go func() {
		defer p.inProcess.Done()
		defer logFile.Close()
		r.work(ctx)
	}()
	return r, nil
}

func (r *podRunner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// work syncs one Deployment at a time, retrying those that cannot start
// yet (a Secret their volume needs is not there) every second.
func (r *podRunner) work(ctx context.Context) {
	retry := map[string]bool{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer r.stopAll()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-r.queue:
			if err := r.sync(ctx, key); err != nil {
				r.logf("%s: %v (retrying)", key, err)
				retry[key] = true
			} else {
				delete(retry, key)
			}
		case <-tick.C:
			for key := range retry {
				if err := r.sync(ctx, key); err == nil {
					delete(retry, key)
				}
			}
		}
	}
}

func (r *podRunner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, pod := range r.pods {
		r.stopLocked(key, pod)
	}
}

func (r *podRunner) stopLocked(key string, pod *runningPod) {
	pod.proc.stop(10 * time.Second)
	if pod.service != "" {
		ns, _, _ := strings.Cut(key, "/")
		r.p.Webhooks.Unroute(ns, pod.service)
	}
	delete(r.pods, key)
}

// sync makes the process of Deployment key match it.
func (r *podRunner) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d = nil
	} else if err != nil {
		return err
	}
	r.mu.Lock()
	running := r.pods[key]
	r.mu.Unlock()
	var spec *podSpec
	if d != nil && d.DeletionTimestamp == nil && (d.Spec.Replicas == nil || *d.Spec.Replicas > 0) {
		spec = r.recognise(d)
	}
	if spec == nil {
		if running != nil {
			r.logf("%s: stopping (Deployment gone or scaled to zero)", key)
			r.mu.Lock()
			r.stopLocked(key, running)
			r.mu.Unlock()
		}
		return nil
	}
	template, err := templateHash(d)
	if err != nil {
		return err
	}
	if running != nil && running.template == template && !running.proc.exited() {
		return nil
	}
	pod, err := r.start(ctx, d, spec)
	if err != nil {
		return err
	}
	pod.template = template
	r.mu.Lock()
	if running != nil {
		r.logf("%s: pod template changed, replacing the process (a rollout)", key)
		running.proc.stop(10 * time.Second)
	}
	r.pods[key] = pod
	r.mu.Unlock()
	return nil
}

// templateHash identifies a pod template, as the ReplicaSet's
// pod-template-hash does.
func templateHash(d *appsv1.Deployment) (string, error) {
	data, err := json.Marshal(d.Spec.Template)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// podSpec is what the runner knows of a Deployment it runs.
type podSpec struct {
	kind      podKind
	container corev1.Container
	// controller names a Flux controller (fluxPod).
	controller string
	// binary is the local binary; empty for an image pulled at start.
	binary string
}

type podKind int

const (
	fluxPod podKind = iota
	capwrightPod
	capiPod
)

// recognise tells whether the runner runs d, and how.
func (r *podRunner) recognise(d *appsv1.Deployment) *podSpec {
	for _, c := range d.Spec.Template.Spec.Containers {
		repo, tag := splitImage(c.Image)
		switch {
		case fluxImages[repo] != "":
			return &podSpec{kind: fluxPod, container: c, controller: fluxImages[repo], binary: filepath.Join(r.p.opts.BinDir, fluxImages[repo])}
		case strings.HasSuffix(repo, "/capwright-manager") && strings.HasPrefix(repo, r.p.Registry.Host+"/"):
			return &podSpec{kind: capwrightPod, container: c}
		case strings.HasSuffix(repo, "/cluster-api-controller") && tag == CAPIVersion:
			return &podSpec{kind: capiPod, container: c, binary: filepath.Join(r.p.opts.BinDir, "cluster-api-manager")}
		}
	}
	return nil
}

// splitImage splits an image reference into its repository and its tag
// (or digest).
func splitImage(image string) (repo, tag string) {
	if repo, digest, ok := strings.Cut(image, "@"); ok {
		return repo, digest
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

// start runs the container of d as a local process.
func (r *podRunner) start(ctx context.Context, d *appsv1.Deployment, spec *podSpec) (*runningPod, error) {
	pod := d.Spec.Template.Spec
	c := spec.container
	dir := filepath.Join(r.p.RunDir, "pods", d.Namespace, d.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	mounts, err := r.volumes(ctx, d.Namespace, pod, c, dir)
	if err != nil {
		return nil, err
	}
	podName := d.Name + "-plane"
	vars := map[string]string{}
	var env []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				v = d.Namespace
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				v = podName
			default:
				// Resource limits (GOMEMLIMIT) and the like: a process
				// on the plane has none.
				continue
			}
		}
		v = mounts.rewrite(expandVars(v, vars))
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	var args []string
	for _, a := range append(slices.Clone(c.Command[min(len(c.Command), 1):]), c.Args...) {
		args = append(args, mounts.rewrite(expandVars(a, vars)))
	}
	binary := spec.binary
	if spec.kind == capwrightPod {
		if binary, err = r.p.pullImageFile(ctx, c.Image, "manager", filepath.Join(dir, "manager")); err != nil {
			return nil, err
		}
	}
	sa := pod.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	kubeconfig, err := r.p.ServiceAccountKubeconfig(ctx, d.Namespace, sa)
	if err != nil {
		return nil, err
	}
	env = append(env, "KUBECONFIG="+kubeconfig)
	r.mu.Lock()
	if r.trust != "" {
		env = append(env, "SSL_CERT_FILE="+r.trust)
	}
	r.mu.Unlock()

	health, err := freePort()
	if err != nil {
		return nil, err
	}
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	healthAddr := "127.0.0.1:" + strconv.Itoa(health)
	ready := "http://" + healthAddr + "/readyz"
	running := &runningPod{}
	switch spec.kind {
	case fluxPod:
		args = setFlags(args,
			"--metrics-addr=127.0.0.1:"+strconv.Itoa(metrics),
			"--health-addr="+healthAddr,
			"--enable-leader-election=false")
		args = r.mapFluxAddrs(spec.controller, args)
		// kustomize-controller clears its TMPDIR of what looks like its own
		// working directories at start: each gets one of its own.
		tmp := filepath.Join(dir, "tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return nil, err
		}
		env = append(env, "TMPDIR="+tmp)
	case capwrightPod:
		args = setFlags(args,
			"--metrics-addr=127.0.0.1:"+strconv.Itoa(metrics),
			"--health-addr="+healthAddr,
			"--enable-leader-election=false",
			"--artifact-bind-address="+r.artifactAddr,
			// The capwright-artifacts Service, on loopback.
			"--artifact-advertise-url=http://"+r.artifactAddr)
		if hasFlag(args, "--events-addr") {
			args = setFlags(args, "--events-addr=http://"+r.eventsAddr+"/")
		}
	case capiPod:
		webhook, err := freePort()
		if err != nil {
			return nil, err
		}
		diagnostics, err := freePort()
		if err != nil {
			return nil, err
		}
		args = setFlags(args,
			"--leader-elect=false",
			"--webhook-port="+strconv.Itoa(webhook),
			"--health-addr="+healthAddr,
			"--diagnostics-address=127.0.0.1:"+strconv.Itoa(diagnostics),
			"--insecure-diagnostics=true")
		if !hasFlag(args, "--webhook-cert-dir") {
			// The image's default, /tmp/k8s-webhook-server/serving-certs,
			// is where the Deployment mounts the certificate Secret.
			args = setFlags(args, "--webhook-cert-dir="+mounts.rewrite("/tmp/k8s-webhook-server/serving-certs"))
		}
		env = append(env, "POD_NAMESPACE="+d.Namespace)
		running.service = "capi-webhook-service"
		defer func() {
			if running.proc != nil {
				r.p.Webhooks.Route(d.Namespace, running.service, "127.0.0.1:"+strconv.Itoa(webhook))
			}
		}()
	}
	proc, err := startProcess(processSpec{Name: d.Name, Binary: binary, Args: args, Env: env, LogDir: r.p.tracker.logDir})
	if err != nil {
		return nil, err
	}
	r.p.tracker.add(proc)
	if err := proc.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return httpGetOK(ctx, http.DefaultClient, ready) }); err != nil {
		proc.stop(5 * time.Second)
		return nil, err
	}
	r.logf("%s/%s: running %s as ServiceAccount %s (log %s)", d.Namespace, d.Name, c.Image, sa, proc.logPath)
	r.p.logf("pod of Deployment %s/%s running as a local process (%s)", d.Namespace, d.Name, proc.logPath)
	running.proc = proc
	return running, nil
}

// mapFluxAddrs points a Flux controller's addresses of other components at
// their loopback stand-ins: notification-controller listens for events
// and webhooks where the others send them, source-controller serves its
// artifacts where the others fetch them.
func (r *podRunner) mapFluxAddrs(controller string, args []string) []string {
	switch controller {
	case "notification-controller":
		return setFlags(args, "--events-addr="+r.eventsAddr, "--receiverAddr="+r.receiverAddr)
	case "source-controller":
		// --storage-path is the Deployment's: its emptyDir, mapped.
		args = setFlags(args,
			"--storage-addr="+r.storageAddr,
			"--storage-adv-addr="+r.storageAddr)
	}
	if hasFlag(args, "--events-addr") {
		args = setFlags(args, "--events-addr=http://"+r.eventsAddr+"/")
	}
	return args
}

// mountMap maps a container's mount paths to the directories standing in
// for them.
type mountMap map[string]string

// rewrite replaces a mount path at the start of s, or after '=' in a flag,
// with its directory.
func (m mountMap) rewrite(s string) string {
	for path, dir := range m {
		switch {
		case s == path || strings.HasPrefix(s, path+"/"):
			return dir + s[len(path):]
		case strings.Contains(s, "="+path):
			if i := strings.Index(s, "="+path); i >= 0 {
				rest := s[i+1+len(path):]
				if rest == "" || rest[0] == '/' {
					return s[:i+1] + dir + rest
				}
			}
		}
	}
	return s
}

// volumes makes a directory for each volume c mounts: empty for an
// emptyDir, the keys of a ConfigMap or Secret as files.
func (r *podRunner) volumes(ctx context.Context, namespace string, pod corev1.PodSpec, c corev1.Container, dir string) (mountMap, error) {
	m := mountMap{}
	for _, vm := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == vm.Name {
				vol = &pod.Volumes[i]
			}
		}
		if vol == nil {
			return nil, fmt.Errorf("container %s mounts volume %q, which the pod does not have", c.Name, vm.Name)
		}
		target := filepath.Join(dir, "volumes", vm.Name)
		if err := os.MkdirAll(target, 0o700); err != nil {
			return nil, err
		}
		var files map[string][]byte
		switch {
		case vol.Secret != nil:
			s, err := r.kube.CoreV1().Secrets(namespace).Get(ctx, vol.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: Secret %s/%s: %w", vm.Name, namespace, vol.Secret.SecretName, err)
			}
			files = s.Data
		case vol.ConfigMap != nil:
			cm, err := r.kube.CoreV1().ConfigMaps(namespace).Get(ctx, vol.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: ConfigMap %s/%s: %w", vm.Name, namespace, vol.ConfigMap.Name, err)
			}
			files = map[string][]byte{}
			for k, v := range cm.Data {
				files[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				files[k] = v
			}
		}
		for k, v := range files {
			if strings.Contains(k, "/") || k == ".." {
				continue
			}
			if err := os.WriteFile(filepath.Join(target, k), v, 0o600); err != nil {
				return nil, err
			}
		}
		if vm.SubPath != "" {
			m[vm.MountPath] = filepath.Join(target, vm.SubPath)
		} else {
			m[vm.MountPath] = target
		}
	}
	return m, nil
}

var kubeletVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandVars replaces $(VAR) as the kubelet does for env and args.
func expandVars(s string, vars map[string]string) string {
	return kubeletVar.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// flagName is the name of a --name=value or --name argument.
func flagName(arg string) string {
	name, _, _ := strings.Cut(arg, "=")
	return name
}

func hasFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return flagName(a) == name })
}

// setFlags replaces each flag's value in args, or appends it.
func setFlags(args []string, flags ...string) []string {
	for _, f := range flags {
		name := flagName(f)
		args = slices.DeleteFunc(args, func(a string) bool { return flagName(a) == name })
		args = append(args, f)
	}
	return args
}

// ReceiverURL is the address of notification-controller's webhook receiver
// once the runner runs it (RunDeployments): what a Git host's webhook
// calls, followed by a Receiver's status.webhookPath.
func (p *Plane) ReceiverURL() string {
	if p.pods == nil {
		return ""
	}
	return "http://" + p.pods.receiverAddr
}

// TrustCA makes the pods the plane runs (RunDeployments) trust the CA in
// pem besides the system's, as a node image with a site's CA built in
// does: e.g. the CA of the stand-in for GitHub (ReleaseServer), which a
// site's release mirror would have. It applies to pods started after it.
func (p *Plane) TrustCA(pem []byte) error {
	if p.pods == nil {
		return fmt.Errorf("the plane runs no pods: start it with RunDeployments")
	}
	r := p.pods
	r.mu.Lock()
	defer r.mu.Unlock()
	path := filepath.Join(p.RunDir, "pods", "trust.pem")
	var bundle []byte
	if r.trust != "" {
		bundle, _ = os.ReadFile(r.trust)
	} else {
		// The system's roots, so that adding a CA takes none away.
		bundle, _ = os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	}
	bundle = append(append(bundle, '\n'), pem...)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return err
	}
	r.trust = path
	return nil
}
