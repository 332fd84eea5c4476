package install

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// managerRuns numbers the managers a test starts, for their log files.
var managerRuns atomic.Int32

// maxBinarySize bounds what is read of the manager's layer.
const maxBinarySize = 512 << 20

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
// image's /manager to a file. It returns the file and the image config.
func pullManager(ctx context.Context, t *testing.T, ref string) (string, ocispec.ImageConfig) {
	t.Helper()
	repoName, dgst, ok := strings.Cut(ref, "@")
	if !ok {
		t.Fatalf("image %q is not pinned by digest", ref)
	}
	repo, err := remote.NewRepository(repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	d, err := digest.Parse(dgst)
	if err != nil {
		t.Fatalf("image %q: %v", ref, err)
	}
	indexDesc, err := repo.Resolve(ctx, d.String())
	if err != nil {
		t.Fatalf("resolving %s: %v", ref, err)
	}
	if indexDesc.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("%s is a %s, want an OCI image index", ref, indexDesc.MediaType)
	}
	var index ocispec.Index
	fetchJSON(ctx, t, repo, ref, indexDesc, &index)
	platforms := map[string]bool{}
	var manifestDesc *ocispec.Descriptor
	for i, m := range index.Manifests {
		if m.Platform == nil {
			t.Fatalf("image index %s: manifest %s has no platform", ref, m.Digest)
		}
		platforms[m.Platform.OS+"/"+m.Platform.Architecture] = true
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			manifestDesc = &index.Manifests[i]
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64"} {
		if !platforms[want] {
			t.Errorf("image index %s has no %s image (has %v)", ref, want, platforms)
		}
	}
	if manifestDesc == nil {
		t.Fatalf("image index %s has no linux/%s image", ref, runtime.GOARCH)
	}
	var manifest ocispec.Manifest
	fetchJSON(ctx, t, repo, ref, *manifestDesc, &manifest)
	var config ocispec.Image
	fetchJSON(ctx, t, repo, ref, manifest.Config, &config)
	if len(manifest.Layers) != 1 {
		t.Fatalf("image %s (linux/%s) has %d layers, want the binary's one", ref, runtime.GOARCH, len(manifest.Layers))
	}
	rc, err := repo.Blobs().Fetch(ctx, manifest.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	layer := content.NewVerifyReader(rc, manifest.Layers[0])
	zr, err := gzip.NewReader(layer)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := filepath.Join(t.TempDir(), "manager-"+manifestDesc.Digest.Encoded()[:12])
	var found []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the layer of %s: %v", ref, err)
		}
		found = append(found, h.Name)
		if strings.TrimPrefix(h.Name, "/") != "manager" {
			continue
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, io.LimitReader(tr, maxBinarySize)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(found) != 1 {
		t.Errorf("the layer of %s holds %v, want /manager only (no shell, nothing else)", ref, found)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("the layer of %s has no /manager", ref)
	}
	return out, config.Config
}

func fetchJSON(ctx context.Context, t *testing.T, repo *remote.Repository, ref string, desc ocispec.Descriptor, into any) {
	t.Helper()
	if desc.Size > 4<<20 {
		t.Fatalf("%s of %s is %d bytes, too large for a manifest or config", desc.Digest, ref, desc.Size)
	}
	data, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		t.Fatalf("fetching %s of %s: %v", desc.Digest, ref, err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %s of %s: %v", desc.Digest, ref, err)
	}
}
