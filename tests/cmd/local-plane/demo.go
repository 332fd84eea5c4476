package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// demo is Capwright's main job on the local plane: it serves the real
// Cluster API core, kubeadm bootstrap and kubeadm control plane releases
// from the plane's stand-in for github.com, applies the provider CRs a
// platform engineer would commit (only spec.version: the catalog names
// their GitHub release, a mirror rule sends the manager to the stand-in;
// the core provider is the README's first YAML, as written), waits until
// Flux installed them, then gives a tenant a stack on two workload
// clusters (each its own etcd + kube-apiserver, registered as CAPI
// Clusters), creates a Cluster whose control plane is a chart, prints the
// status of each and stops. CAPWRIGHT_DEMO_KEEP=1 keeps the plane up until
// Ctrl-C. tests/e2e/demo runs `make demo` and reads this output: change
// both together.
func demo(_ []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	// The Cluster API manager runs as a local process (kwok runs no
	// containers): it gets the feature gate the CoreProvider sets.
	p, err := plane.Start(ctx, plane.Options{Log: os.Stdout, ExtraArgs: map[string][]string{
		"cluster-api-manager": {"--feature-gates=ClusterTopology=true"},
	}})
	if err != nil {
		return err
	}
	defer p.Stop()
	// The providers come from their GitHub releases, as on a management
	// cluster that reaches github.com: the plane's stand-in for it serves
	// the real releases, and a mirror rule sends the manager there.
	releases, err := plane.StartFixtureReleases(filepath.Join(p.RepoRoot(), "bin"))
	if err != nil {
		return err
	}
	defer func() { _ = releases.Close() }()
	releaseArgs, releaseEnv, err := releases.ManagerSettings(p.RunDir)
	if err != nil {
		return err
	}
	fmt.Printf("demo: Cluster API %s releases served in GitHub's layout by the plane's stand-in for github.com at %s (downloads redirected to %s)\n",
		plane.CAPIVersion, releases.Host, releases.DownloadHost)
	core, err := readmeCoreProvider(filepath.Join(p.RepoRoot(), "README.md"))
	if err != nil {
		return err
	}
	// ClusterTopology: the demo's last Cluster comes from a ClusterClass.
	core.Spec.Manager = &v1alpha1.ManagerSpec{FeatureGates: map[string]bool{"ClusterTopology": true}}
	providers := []v1alpha1.Provider{
		core,
		&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm"}},
		&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"}},
	}
	// Workload clusters are registered before the manager starts: it
	// watches CAPI Clusters only when their API is served at start-up.
	for i := 1; i <= 2; i++ {
		w, err := p.StartWorkloadCluster(ctx, fmt.Sprintf("workload-%d", i), plane.WorkloadOptions{ControllerManager: true})
		if err != nil {
			return err
		}
		cluster, err := p.RegisterWorkloadCluster(ctx, w, "default", w.Name)
		if err != nil {
			return err
		}
		fmt.Printf("demo: workload cluster %s registered as CAPI Cluster %s/%s\n", w.Name, cluster.GetNamespace(), cluster.GetName())
	}
	if _, err := p.StartCapwright(ctx, plane.CapwrightOptions{Args: releaseArgs, Env: releaseEnv}); err != nil {
		return err
	}
	c, err := framework.NewClient(p.Config)
	if err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(c.Scheme()); err != nil {
		return err
	}
	applied := time.Now()
	fmt.Println("demo: applying CoreProvider cluster-api, BootstrapProvider kubeadm, ControlPlaneProvider kubeadm (no source: the catalog names their GitHub release, the mirror rule sends it to the stand-in)")
	if core.Spec.Version != plane.CAPIVersion {
		return fmt.Errorf("README.md's CoreProvider asks for %s, the plane serves Cluster API %s: keep them in step", core.Spec.Version, plane.CAPIVersion)
	}
	for _, pr := range providers {
		pr.GetSpec().Version = plane.CAPIVersion
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pr.GetNamespace()}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := c.Create(ctx, pr.(client.Object)); err != nil {
			return err
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, pr := range providers {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pr.(client.Object)), pr.(client.Object)); err != nil {
				return false, nil
			}
			if !apimeta.IsStatusConditionTrue(pr.GetConditions(), v1alpha1.ReadyCondition) {
				return false, nil
			}
		}
		return true, nil
	})
	printProviders(providers)
	if err != nil {
		return fmt.Errorf("the providers did not become Ready in 5m (logs in %s): %w", p.RunDir, err)
	}
	fmt.Printf("\ndemo: plane up in %s; the three providers were Ready %s after their CRs were applied\n",
		applied.Sub(start).Round(time.Millisecond), time.Since(applied).Round(time.Millisecond))
	if err := demoTenant(ctx, p, c); err != nil {
		return fmt.Errorf("%w (logs in %s)", err, p.RunDir)
	}
	if err := demoCluster(ctx, p, c); err != nil {
		return fmt.Errorf("%w (logs in %s)", err, p.RunDir)
	}
	fmt.Printf("demo: logs in %s\n", p.RunDir)
	if os.Getenv("CAPWRIGHT_DEMO_KEEP") != "" {
		fmt.Printf("\nCAPWRIGHT_DEMO_KEEP is set: the plane stays up; try\n  export KUBECONFIG=%s\n  kubectl get capwright -A\nCtrl-C stops it.\n", p.Kubeconfig)
		<-ctx.Done()
	}
	fmt.Println("demo: stopping the plane")
	return p.Stop()
}

func printProviders(providers []v1alpha1.Provider) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKIND\tNAMESPACE/NAME\tVERSION\tINSTALLED\tCONTRACT\tREADY\tARTIFACT")
	for _, pr := range providers {
		s := pr.GetStatus()
		ready := "Unknown"
		if c := apimeta.FindStatusCondition(pr.GetConditions(), v1alpha1.ReadyCondition); c != nil {
			ready = string(c.Status)
			if c.Status != metav1.ConditionTrue {
				ready += " (" + c.Reason + ": " + c.Message + ")"
			}
		}
		art := ""
		if s.Artifact != nil {
			art = s.Artifact.Revision
		}
		fmt.Fprintf(w, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\n", reflect.TypeOf(pr).Elem().Name(), pr.GetNamespace(), pr.GetName(),
			pr.GetSpec().Version, s.InstalledVersion, s.Contract, ready, art)
	}
	fmt.Fprintln(w, "\nPROVIDER\tRELEASE\tFILE\tFETCHED FROM\t")
	for _, pr := range providers {
		s := pr.GetStatus()
		if s.Artifact == nil {
			continue
		}
		for _, f := range s.Artifact.Files {
			fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t\n", pr.GetNamespace(), pr.GetName(), s.Artifact.URL, f.Name, f.URL)
		}
	}
	fmt.Fprintln(w, "\nFLUX OBJECT\tREADY\t")
	for _, pr := range providers {
		for _, f := range pr.GetStatus().FluxObjects {
			fmt.Fprintf(w, "%s %s/%s\t%s\t\n", f.Kind, f.Namespace, f.Name, f.Ready)
		}
	}
	_ = w.Flush()
}

// mirrorArgs make the plane's registry the mirror of the Cluster API
// artifacts on registry.k8s.io, reached over plain HTTP: providers with no
// spec.source install from what was published there.
func mirrorArgs(p *plane.Plane) []string {
	return []string{
		"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
		"--insecure-registry=" + p.Registry.Host,
	}
}

// readmeCoreProvider is the README's first YAML block, the CoreProvider a
// reader starts from: the demo applies it as written, so it cannot rot.
func readmeCoreProvider(path string) (*v1alpha1.CoreProvider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		return nil, fmt.Errorf("%s has no YAML block: the demo applies its first one, the CoreProvider", path)
	}
	var core v1alpha1.CoreProvider
	if err := sigsyaml.UnmarshalStrict([]byte(block), &core); err != nil {
		return nil, fmt.Errorf("%s's first YAML block: %w", path, err)
	}
	if core.Kind != "CoreProvider" || core.Name == "" || core.Namespace == "" || core.Spec.Source != nil {
		return nil, fmt.Errorf("%s's first YAML block is not a CoreProvider with a name, a namespace and no source (%s %s/%s): the demo installs it from the catalog", path, core.Kind, core.Namespace, core.Name)
	}
	return &core, nil
}
