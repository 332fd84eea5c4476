package plane

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// binDir returns the built tools, or fails the test with how to build them.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		t.Fatalf("plane binaries missing in %s: run `make tools` (%v)", dir, err)
	}
	return dir
}

// processesUsing lists live processes whose command line or environment
// mentions dir: every component gets its run directory in a flag or in
// KUBECONFIG.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie has already exited
		}
		if strings.Contains(string(cmdline), dir) || strings.Contains(string(environ), dir) {
			line := strings.ReplaceAll(string(cmdline), "\x00", " ")
			found = append(found, e.Name()+": "+line[:min(len(line), 100)])
		}
	}
	return found
}

func requireNothingRunning(t *testing.T, runDir string) {
	t.Helper()
	if left := processesUsing(t, runDir); len(left) > 0 {
		t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
}

func TestStartReportsMissingBinary(t *testing.T) {
	runDir := t.TempDir()
	_, err := Start(context.Background(), Options{BinDir: t.TempDir(), RunDir: runDir})
	var ce *ComponentError
	if !errors.As(err, &ce) || ce.Component != "etcd" {
		t.Fatalf("want a ComponentError for etcd, got %v", err)
	}
	for _, want := range []string{"component etcd", "not found", "make tools", runDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	requireNothingRunning(t, runDir)
}

func TestStartReportsTakenPortAndTearsDown(t *testing.T) {
	bin := binDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Start(ctx, Options{BinDir: bin, RunDir: runDir, APIServerPort: l.Addr().(*net.TCPAddr).Port})
	var ce *ComponentError
	if !errors.As(err, &ce) || ce.Component != "kube-apiserver" {
		t.Fatalf("want a ComponentError for kube-apiserver, got %v", err)
	}
	for _, want := range []string{"exited early", "address already in use", filepath.Join(runDir, "kube-apiserver.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	// etcd had started before the API server failed: it must be gone.
	requireNothingRunning(t, runDir)
}

func TestStartReportsComponentExitingEarly(t *testing.T) {
	bin := binDir(t)
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Start(ctx, Options{BinDir: bin, RunDir: runDir, ExtraArgs: map[string][]string{
		"kube-controller-manager": {"--no-such-flag"},
	}})
	var ce *ComponentError
	if !errors.As(err, &ce) || ce.Component != "kube-controller-manager" {
		t.Fatalf("want a ComponentError for kube-controller-manager, got %v", err)
	}
	for _, want := range []string{"exited early", "unknown flag: --no-such-flag", "kube-controller-manager.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	requireNothingRunning(t, runDir)
}

// TestPlaneRunsAndStopsCleanly starts a whole plane and a workload cluster,
// checks what tests rely on, and checks that Stop leaves nothing behind.
func TestPlaneRunsAndStopsCleanly(t *testing.T) {
	bin := binDir(t)
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	p, err := Start(ctx, Options{BinDir: bin, RunDir: runDir, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	t.Logf("plane ready in %s", time.Since(start).Round(time.Millisecond))

	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version.GitVersion != "v1.36.3" {
		t.Errorf("API server reports version %q, want v1.36.3 (version ldflags)", version.GitVersion)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Errorf("want 2 simulated nodes, got %d", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				t.Errorf("node %s still has taint %s", n.Name, taint.Key)
			}
		}
	}
	for _, crd := range []string{"ocirepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io", "helmreleases.helm.toolkit.fluxcd.io", "certificates.cert-manager.io"} {
		if _, err := client.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).DoRaw(ctx); err != nil {
			t.Errorf("CRD %s: %v", crd, err)
		}
	}

	w, err := p.StartWorkloadCluster(ctx, "workload-1", WorkloadOptions{ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	wc, err := kubernetes.NewForConfig(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-on-workload"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "only-on-workload", metav1.GetOptions{}); err == nil {
		t.Fatal("a namespace created on the workload cluster shows on the management plane: they share an API server")
	}

	if len(processesUsing(t, runDir)) < 9 {
		t.Fatalf("expected the plane's processes to be running, found %v", processesUsing(t, runDir))
	}

	// A restarted kustomize-controller purges what look like its working
	// directories from its TMPDIR; those of another plane's, running
	// beside this one, must not be among them.
	others, err := os.MkdirTemp("", "kustomization-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(others)
	own, err := os.MkdirTemp(filepath.Join(runDir, "tmp", "kustomize-controller"), "kustomization-")
	if err != nil {
		t.Fatalf("kustomize-controller has no temp directory of its own: %v", err)
	}
	if err := p.Restart(ctx, "kustomize-controller"); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(own)
		return os.IsNotExist(err), nil
	})
	if err != nil {
		t.Fatalf("the restarted kustomize-controller did not purge %s from its own temp directory", own)
	}
	if _, err := os.Stat(others); err != nil {
		t.Errorf("the restarted kustomize-controller removed %s, outside its own temp directory: %v", others, err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	requireNothingRunning(t, runDir)
}
