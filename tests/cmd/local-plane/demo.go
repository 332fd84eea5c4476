package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// What the demo shares with the gitops suite: the example's providers
// file, the control plane provider's first version (one release back: the
// upgrade commit brings the file back to the example as written), and team
// A's namespaces.
const (
	providersFile   = framework.ExampleProvidersFile
	previousVersion = framework.PreviousCAPIVersion
	tenantNamespace = framework.ExampleTenantNamespace
	stackNamespace  = framework.ExampleStackNamespace
)

// demo is Capwright used as its users use it, on the local plane: a Git
// repository (the plane's Git server stands in for GitHub), `flux
// bootstrap git` with the real flux CLI, and commits. The plane runs no
// Flux of its own (RunDeployments): Flux's controllers, Capwright's
// released manager and Cluster API's core manager run as local processes
// from the Deployments Flux applies. It commits the install guide's
// example repository (docs/examples/repository) and site overlay
// (docs/examples/site), so Capwright, the real Cluster API core, kubeadm
// bootstrap and kubeadm control plane providers (from their GitHub
// releases, through the plane's stand-in for github.com) and Tenant
// team-a are installed by Flux from the commit; it then registers two
// workload clusters as team A's Clusters, shows the stack on them,
// upgrades the control plane provider with a commit, and stops.
// CAPWRIGHT_DEMO_KEEP=1 keeps the plane up until Ctrl-C. The README's
// first YAML block is the CoreProvider it commits. tests/e2e/demo runs
// `make demo` and reads this output: change both together.
func demo(_ []string) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	// The framework's GitOps helpers report a failure through Fatalf,
	// which must not return: it unwinds to here, through the deferred
	// Stop of the plane below.
	var runDir string
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(demoFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
		if err != nil && runDir != "" {
			err = fmt.Errorf("%w (logs in %s)", err, runDir)
		}
	}()
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return err
	}
	root := filepath.Dir(bin)
	// The README's first YAML block is the CoreProvider the demo commits.
	if _, err := committedCoreProvider(filepath.Join(root, "README.md"),
		filepath.Join(root, "docs", "examples", "repository", filepath.FromSlash(providersFile))); err != nil {
		return err
	}
	var r demoReporter
	fluxCLI := framework.FluxCLI(r, bin)

	fmt.Println("demo: 1/5 the site: a management cluster, a Git server, a registry, a mirror of GitHub's releases")
	p, err := plane.Start(ctx, plane.Options{BinDir: bin, Log: os.Stdout, RunDeployments: true})
	if err != nil {
		return err
	}
	defer p.Stop()
	runDir = p.RunDir
	// The stand-in for GitHub serves Cluster API's real releases; the
	// plane's pods trust its CA, as a site's nodes trust its mirror's.
	releases, err := plane.StartFixtureReleases(bin)
	if err != nil {
		return err
	}
	defer func() { _ = releases.Close() }()
	if err := p.TrustCA(releases.CACertPEM); err != nil {
		return err
	}
	fmt.Printf("demo: Cluster API %s and %s releases served in GitHub's layout by the plane's stand-in for github.com at %s (downloads redirected to %s)\n",
		previousVersion, plane.CAPIVersion, releases.Host, releases.DownloadHost)
	// The clusters Cluster API will have made for team A: started now,
	// registered once Cluster API runs.
	fmt.Println("demo: starting workload clusters workload-1 and workload-2 in the background (each its own etcd and kube-apiserver)")
	workloads := startWorkloads(ctx, p, "workload-1", "workload-2")
	fmt.Printf("demo: make release VERSION=%s REGISTRY=%s/capwright (what the example's capwright.yaml installs, in the site's registry)\n",
		framework.ExampleCapwrightVersion, p.Registry.Host)
	framework.ReleaseCapwright(r, ctx, p, framework.ExampleCapwrightVersion, func(line string) {
		// What it built and published; not each push and tag.
		for _, prefix := range []string{"building ./", "image ", "manifests ", "chart "} {
			if strings.HasPrefix(line, prefix) {
				fmt.Println("  release: " + line)
			}
		}
	})
	stack, err := publishStack(ctx, p, "v1.0.0")
	if err != nil {
		return err
	}
	fmt.Printf("demo: team A's stack %s:%s published (a ConfigMap baseline)\n", stack.URL, stack.Tag)
	c, err := client.New(p.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return err
	}
	hook, err := startWebhook()
	if err != nil {
		return err
	}
	defer hook.Close()

	fmt.Println("\ndemo: 2/5 flux bootstrap git: Flux from the repository")
	examples := framework.ExampleRepository(r, root)
	gitDir := filepath.Join(p.RunDir, "gitops")
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		return err
	}
	w := framework.CloneFleet(r, ctx, p.Git, gitDir)
	fmt.Printf("demo: cloned %s (empty) into %s\n", p.Git.HTTPSURL("fleet.git"), w.Dir)
	fluxSystem := framework.ManagementPath + "/flux-system/"
	fmt.Printf("demo: committing %s{%s} and empty gotk-components.yaml, gotk-sync.yaml (kustomize-controller's ExternalArtifact gate, a Receiver)\n", fluxSystem, strings.Join(framework.FluxSystemFiles, ","))
	// The Secrets the repository names but must not hold.
	token, err := randomToken()
	if err != nil {
		return err
	}
	framework.CustomiseFluxSystem(r, ctx, p, w, map[string]map[string]string{
		"receiver-token":   {"token": token},
		"platform-webhook": {"address": hook.URL},
	})
	fmt.Printf("demo: created Secrets flux-system/receiver-token and flux-system/platform-webhook (Flux's Alerts go to the demo's receiver at %s)\n", hook.URL)
	// What framework.Bootstrap runs (and --author-name, --author-email,
	// --timeout, --kubeconfig).
	fmt.Printf("$ flux bootstrap git --url=%s --branch=main --path=%s --token-auth --username=%s --ca-file=%s --silent   # GIT_PASSWORD in the environment\n",
		p.Git.HTTPSURL("fleet.git"), framework.ManagementPath, p.Git.Username, filepath.Join(gitDir, "bootstrap-ca.crt"))
	bootstrapped := time.Now()
	out := framework.Bootstrap(r, ctx, p, fluxCLI, gitDir, framework.ManagementPath)
	fmt.Print(indent(out))
	fmt.Printf("demo: flux bootstrap git took %s; Flux runs from the Deployments it applied\n", since(bootstrapped))
	w.Pull(ctx)

	fmt.Println("\ndemo: 3/5 the first push: Capwright, cert-manager, the Cluster API providers and team A")
	for path, data := range examples {
		if !strings.HasPrefix(path, fluxSystem) {
			w.Write(path, data)
		}
	}
	for path, data := range framework.SiteOverlay(r, p, releases) {
		w.Write(path, data)
	}
	w.Edit(providersFile, func(s string) string { return framework.SetControlPlaneVersion(r, s, previousVersion) })
	fmt.Printf("demo: committing the rest of docs/examples/repository as written, but the ControlPlaneProvider at %s (step 5 upgrades it), and the site overlay %s/kustomization.yaml (docs/examples/site: this plane's registry and mirror of GitHub)\n",
		previousVersion, framework.ManagementPath)
	sha, pushed := w.CommitAndPush(ctx, "Install Capwright, cert-manager, the Cluster API providers and team A")
	framework.NotifyPush(r, ctx, c, p)
	fmt.Println("demo: called the Receiver, as the Git host's push webhook does: Flux fetches the commit now, not at its next poll")
	fmt.Println("demo: Flux applies it in dependsOn order: cert-manager and capwright, then providers, tenants, tenant-alerts")
	if err := waitFirstPush(ctx, c, sha, pushed); err != nil {
		return err
	}
	if err := gitLog(ctx, w.Dir); err != nil {
		return err
	}
	if err := fluxGet(ctx, fluxCLI, p.Kubeconfig); err != nil {
		return err
	}
	providers := framework.ExampleProviders()
	for _, pr := range providers {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil {
			return err
		}
	}
	printProviders(providers, true)
	tn := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, tn); err != nil {
		return err
	}
	printTenant(tn)
	fmt.Printf("demo: Capwright, the three providers and Tenant team-a Ready %s after the push\n", since(pushed))

	fmt.Println("\ndemo: 4/5 team A's clusters")
	clusters, err := workloads.get()
	if err != nil {
		return err
	}
	if err := demoTenant(ctx, p, c, clusters); err != nil {
		return err
	}

	fmt.Println("\ndemo: 5/5 an upgrade is a commit")
	fmt.Printf("demo: committing %s as the example writes it: ControlPlaneProvider kubeadm %s → %s\n", providersFile, previousVersion, plane.CAPIVersion)
	w.Write(providersFile, examples[providersFile])
	_, pushed = w.CommitAndPush(ctx, "Upgrade the kubeadm control plane provider to "+plane.CAPIVersion)
	framework.NotifyPush(r, ctx, c, p)
	fmt.Println("demo: called the Receiver")
	if err := gitLog(ctx, w.Dir); err != nil {
		return err
	}
	cp := providers[2]
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
			return false, nil
		}
		ready := apimeta.FindStatusCondition(cp.GetConditions(), v1alpha1.ReadyCondition)
		return cp.GetSpec().Version == plane.CAPIVersion && cp.GetStatus().InstalledVersion == plane.CAPIVersion &&
			ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cp.GetGeneration(), nil
	})
	for _, pr := range providers {
		_ = c.Get(ctx, client.ObjectKeyFromObject(pr), pr)
	}
	printProviders(providers, false)
	if err != nil {
		return fmt.Errorf("the ControlPlaneProvider was not upgraded to %s and Ready in 3m: %w", plane.CAPIVersion, err)
	}
	fmt.Printf("demo: ControlPlaneProvider %s/%s upgraded from %s to %s, Ready %s after the push\n",
		cp.GetNamespace(), cp.GetName(), previousVersion, cp.GetStatus().InstalledVersion, since(pushed))

	fmt.Printf("\ndemo: done in %s\n", since(start))
	fmt.Printf("demo: logs in %s\n", p.RunDir)
	if os.Getenv("CAPWRIGHT_DEMO_KEEP") != "" {
		fmt.Printf(`
CAPWRIGHT_DEMO_KEEP is set: the plane stays up; try
  export KUBECONFIG=%s
  kubectl get capwright -A
  %s get kustomizations -A
The repository Flux syncs (the demo's own clone is %s):
  export GIT_SSL_CAINFO=%s
  git clone %s
Team A's workload clusters: %s
Ctrl-C stops it.
`, p.Kubeconfig, fluxCLI, w.Dir, filepath.Join(gitDir, "git-ca.crt"), gitURLWithCredentials(p.Git), workloadKubeconfigs(clusters))
		<-ctx.Done()
	}
	fmt.Println("demo: stopping the plane")
	return p.Stop()
}

// demoReporter is the framework's Reporter for the demo: a step's
// progress is a line of output, a failure unwinds to demo, which returns
// it as its error.
type demoReporter struct{}

type demoFailure struct{ err error }

func (demoReporter) Helper() {}

func (demoReporter) Logf(format string, args ...any) { fmt.Printf("demo: "+format+"\n", args...) }

func (demoReporter) Fatalf(format string, args ...any) {
	panic(demoFailure{fmt.Errorf(format, args...)})
}

// firstPushKustomizations are the example's Kustomizations in flux-system,
// in dependsOn order.
var firstPushKustomizations = []string{"flux-system", "cert-manager", "capwright", "providers", "tenants", "tenant-alerts"}

// waitFirstPush waits until the example's Kustomizations have applied
// commit sha (Capwright's, its release) and are Ready, printing each as it
// gets there, then until every Kustomization (the providers' own
// included), every provider and the Tenant are Ready.
func waitFirstPush(ctx context.Context, c client.Client, sha string, pushed time.Time) error {
	done := map[string]bool{}
	state := map[string]string{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range firstPushKustomizations {
			if done[name] {
				continue
			}
			ks := &kustomizev1.Kustomization{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, ks); err != nil {
				state[name] = err.Error()
				continue
			}
			want := "main@sha1:" + sha
			if name == "capwright" {
				want = framework.ExampleCapwrightVersion + "@"
			}
			ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			if ready == nil {
				state[name] = "no Ready condition yet"
				continue
			}
			state[name] = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
			if ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == ks.Generation && strings.HasPrefix(ks.Status.LastAppliedRevision, want) {
				done[name] = true
				fmt.Printf("demo:   Kustomization flux-system/%s Ready, applied %s (+%s)\n", name, ks.Status.LastAppliedRevision, since(pushed))
			}
		}
		return len(done) == len(firstPushKustomizations), nil
	})
	if err != nil {
		var waiting []string
		for _, name := range firstPushKustomizations {
			if !done[name] {
				waiting = append(waiting, "Kustomization flux-system/"+name+": "+state[name])
			}
		}
		return fmt.Errorf("the first push was not applied in 6m: %s: %w", strings.Join(waiting, "; "), err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var all kustomizev1.KustomizationList
		if err := c.List(ctx, &all); err != nil {
			last = err.Error()
			return false, nil
		}
		for _, ks := range all.Items {
			if !apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition) {
				last = "Kustomization " + ks.Namespace + "/" + ks.Name + " is not Ready"
				return false, nil
			}
		}
		for _, pr := range framework.ExampleProviders() {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil || !apimeta.IsStatusConditionTrue(pr.GetConditions(), v1alpha1.ReadyCondition) {
				last = fmt.Sprintf("%s %s/%s is not Ready", reflect.TypeOf(pr).Elem().Name(), pr.GetNamespace(), pr.GetName())
				return false, nil
			}
		}
		tn := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, tn); err != nil || !apimeta.IsStatusConditionTrue(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			last = "Tenant team-a is not Ready"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s 2m after the example's Kustomizations were: %w", last, err)
	}
	return nil
}

// gitLog prints the commit just pushed, as `git log --oneline -1` does.
func gitLog(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "--no-pager", "log", "--oneline", "--no-decorate", "-1")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git log: %v: %s", err, out)
	}
	fmt.Printf("$ git log --oneline -1\n%s", out)
	return nil
}

// fluxGet prints `flux get kustomizations -A`, run with the real flux CLI.
func fluxGet(ctx context.Context, fluxCLI, kubeconfig string) error {
	cmd := exec.CommandContext(ctx, fluxCLI, "get", "kustomizations", "-A", "--kubeconfig="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("flux get kustomizations: %v: %s", err, out)
	}
	fmt.Printf("$ flux get kustomizations -A\n%s", out)
	return nil
}

func printProviders(providers []v1alpha1.Provider, detail bool) {
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
	if !detail {
		_ = w.Flush()
		return
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

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// webhook is the platform team's webhook the example's Alerts name: it
// takes Flux's events and drops them.
type webhook struct {
	URL string
	srv *http.Server
}

func startWebhook() (*webhook, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	return &webhook{URL: "http://" + ln.Addr().String() + "/alerts", srv: srv}, nil
}

func (h *webhook) Close() { _ = h.srv.Close() }

// indent indents each line of s by two spaces.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// since is the time since start, for a line of the demo.
func since(start time.Time) time.Duration { return time.Since(start).Round(100 * time.Millisecond) }

// mirrorArgs make the plane's registry the mirror of the Cluster API
// artifacts on registry.k8s.io, reached over plain HTTP: providers with no
// spec.source install from what was published there.
func mirrorArgs(p *plane.Plane) []string {
	return []string{
		"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
		"--insecure-registry=" + p.Registry.Host,
	}
}

// committedCoreProvider checks that the README's first YAML block is the
// CoreProvider of the example repository's providers file, which the demo
// commits, and at the Cluster API version the plane runs: the README's
// CoreProvider is what a newcomer sees installed, so it cannot rot.
func committedCoreProvider(readme, example string) (*v1alpha1.CoreProvider, error) {
	core, err := readmeCoreProvider(readme)
	if err != nil {
		return nil, err
	}
	committed, err := exampleCoreProvider(example)
	if err != nil {
		return nil, err
	}
	if core.Name != committed.Name || core.Namespace != committed.Namespace || !reflect.DeepEqual(core.Spec, committed.Spec) {
		return nil, fmt.Errorf("%s's first YAML block (CoreProvider %s/%s, version %s) is not the CoreProvider the demo commits, %s's (%s/%s, version %s): keep them the same",
			readme, core.Namespace, core.Name, core.Spec.Version, example, committed.Namespace, committed.Name, committed.Spec.Version)
	}
	if core.Spec.Version != plane.CAPIVersion {
		return nil, fmt.Errorf("%s's CoreProvider asks for %s, the plane runs Cluster API %s: keep them in step", readme, core.Spec.Version, plane.CAPIVersion)
	}
	return core, nil
}

// readmeCoreProvider is the README's first YAML block, the CoreProvider a
// reader starts from.
func readmeCoreProvider(path string) (*v1alpha1.CoreProvider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		return nil, fmt.Errorf("%s has no YAML block: the demo commits its first one, the CoreProvider", path)
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

// exampleCoreProvider is the one CoreProvider document of a multi-document
// YAML file (the example repository's providers file).
func exampleCoreProvider(path string) (*v1alpha1.CoreProvider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found *v1alpha1.CoreProvider
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var tm metav1.TypeMeta
		if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if tm.Kind != "CoreProvider" {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s has more than one CoreProvider", path)
		}
		found = &v1alpha1.CoreProvider{}
		if err := sigsyaml.UnmarshalStrict(doc, found); err != nil {
			return nil, fmt.Errorf("%s's CoreProvider: %w", path, err)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s has no CoreProvider: the demo commits the one the README shows from there", path)
	}
	return found, nil
}
