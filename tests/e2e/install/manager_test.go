package install

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// managerRuns numbers the managers a test starts, for their log files.
var managerRuns atomic.Int32

// imageUser is the numeric non-root user the image runs as.
const imageUser = "65532:65532"

// deployedManager is the manager a Deployment would run, as a local
// process: the binary from the image the Deployment names (pulled by
// digest, this machine's platform), started with the container's command,
// args and env, authenticated as the pod's ServiceAccount. kwok only
// simulates the pod; this is what its container would do.
type deployedManager struct {
	proc     *plane.Process
	imageRef string
	probes   []string
}

// runDeployedManager starts the manager container of deploy. wantImage is
// the image (repository@digest) the release pinned.
func runDeployedManager(ctx context.Context, t *testing.T, deploy *appsv1.Deployment, wantImage string) *deployedManager {
	t.Helper()
	pod := deploy.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment %s/%s has %d containers, want the manager only", deploy.Namespace, deploy.Name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != wantImage {
		t.Fatalf("Deployment %s/%s runs image %q, want the released %q (pinned by digest)", deploy.Namespace, deploy.Name, c.Image, wantImage)
	}
	binary, config := pullManager(ctx, t, c.Image)
	if config.User != imageUser {
		t.Errorf("image %s runs as user %q, want %q", c.Image, config.User, imageUser)
	}
	if got := pod.SecurityContext; got == nil || got.RunAsNonRoot == nil || !*got.RunAsNonRoot {
		t.Errorf("Deployment %s/%s does not require runAsNonRoot", deploy.Namespace, deploy.Name)
	}
	command := c.Command
	if len(command) == 0 {
		command = config.Entrypoint
	}
	if len(command) != 1 || command[0] != "/manager" {
		t.Fatalf("the manager container's command is %q, want the image's /manager", command)
	}

	podName := deploy.Name + "-e2e"
	vars := map[string]string{}
	var envs []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				v = deploy.Namespace
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				v = podName
			default:
				t.Fatalf("env %s of the manager container: the test cannot resolve %+v", e.Name, e.ValueFrom)
			}
		}
		vars[e.Name] = expand(v, vars)
		envs = append(envs, e.Name+"="+vars[e.Name])
	}
	// Volumes: the container's emptyDir mounts become directories of the
	// test, and args naming a mount path name the directory instead.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = t.TempDir()
	}
	var args []string
	for _, a := range c.Args {
		a = expand(a, vars)
		for path, dir := range mounts {
			a = strings.Replace(a, "="+path, "="+dir, 1)
		}
		args = append(args, a)
	}
	kubeconfig, err := env.ServiceAccountKubeconfig(ctx, deploy.Namespace, pod.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	envs = append(envs, "KUBECONFIG="+kubeconfig)

	m := &deployedManager{imageRef: c.Image}
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Fatalf("the manager container has no HTTP probe: %+v", probe)
		}
		m.probes = append(m.probes, fmt.Sprintf("http://127.0.0.1:%d%s", containerPort(t, c, probe.HTTPGet.Port), probe.HTTPGet.Path))
	}
	m.proc, err = env.StartProcess(ctx, plane.ProcessOptions{
		Name:     fmt.Sprintf("capwright-manager-%d-%s", managerRuns.Add(1), strings.TrimPrefix(filepath.Base(binary), "manager-")),
		Binary:   binary,
		Args:     args,
		Env:      envs,
		ReadyURL: m.probes[0],
	})
	if err != nil {
		t.Fatalf("starting the manager of %s with the Deployment's args %q: %v", c.Image, args, err)
	}
	for _, url := range m.probes {
		if err := framework.GetOK(ctx, url); err != nil {
			m.proc.Stop()
			t.Fatalf("probe of the manager from %s: %v", c.Image, err)
		}
	}
	t.Logf("manager from %s running (probes %s; log %s)", c.Image, strings.Join(m.probes, ", "), m.proc.LogPath())
	return m
}

// stop ends the manager as a pod deletion would.
func (m *deployedManager) stop() { m.proc.Stop() }

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as the kubelet does for env and args.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

func containerPort(t *testing.T, c corev1.Container, port intstr.IntOrString) int {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntValue()
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("the manager container has no port named %q", port.StrVal)
	return 0
}

// pullManager pulls ref (repository@digest) from the plane's registry,
// picks this machine's platform from the image index and writes the
// image's /manager to a file. It returns the file and the image config,
// after checking the image is what a release promises: both platforms, one
// layer holding /manager alone.
func pullManager(ctx context.Context, t *testing.T, ref string) (string, ocispec.ImageConfig) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "manager-"+strings.NewReplacer(":", "-", "@", "-", "/", "-").Replace(ref[strings.LastIndex(ref, "@")+1:])[:19])
	img, err := plane.PullImageFile(ctx, ref, "manager", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"linux/amd64", "linux/arm64"} {
		if !slices.Contains(img.Platforms, want) {
			t.Errorf("image index %s has no %s image (has %v)", ref, want, img.Platforms)
		}
	}
	if img.Layers != 1 {
		t.Fatalf("image %s (linux/%s) has %d layers, want the binary's one", ref, runtime.GOARCH, img.Layers)
	}
	if len(img.Files) != 1 {
		t.Errorf("the layer of %s holds %v, want /manager only (no shell, nothing else)", ref, img.Files)
	}
	return img.Path, img.Config
}
