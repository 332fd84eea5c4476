package clusterctl

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// adopted are the providers clusterctl installed, as Capwright names them.
var adopted = []struct {
	kind, name, namespace, inventoryName, deployment string
}{
	{"CoreProvider", "cluster-api", "capi-system", "cluster-api", "capi-controller-manager"},
	{"BootstrapProvider", "kubeadm", "capi-kubeadm-bootstrap-system", "bootstrap-kubeadm", "capi-kubeadm-bootstrap-controller-manager"},
	{"ControlPlaneProvider", "kubeadm", "capi-kubeadm-control-plane-system", "control-plane-kubeadm", "capi-kubeadm-control-plane-controller-manager"},
}

func newProvider(kind, namespace, name string) v1alpha1.Provider {
	var p v1alpha1.Provider
	switch kind {
	case "CoreProvider":
		p = &v1alpha1.CoreProvider{}
	case "BootstrapProvider":
		p = &v1alpha1.BootstrapProvider{}
	default:
		p = &v1alpha1.ControlPlaneProvider{}
	}
	p.SetNamespace(namespace)
	p.SetName(name)
	return p
}

// TestAdoptFromClusterctl follows docs/migrate.md's clusterctl steps on
// the management cluster clusterctl installed (TestMain), in order.
func TestAdoptFromClusterctl(t *testing.T) {
	ctx := context.Background()
	c := framework.NewProviderClient(t, env.Config)
	t.Logf("clusterctl init printed:\n%s", installed.initOutput)

	before := providerObjects(t, ctx, c)
	t.Logf("objects clusterctl installed, checked by UID: %s:\n%s", countKinds(before), strings.Join(slices.Sorted(maps.Keys(before)), "\n"))
	cluster := getCluster(t, ctx, c)
	if got := inventory(t, ctx, c); len(got) != 3 {
		t.Fatalf("clusterctl's inventory after init: %v, want the three providers", got)
	}

	if !t.Run("a CoreProvider in another namespace installs no second copy", func(t *testing.T) {
		refuseCoreElsewhere(t, ctx, c)
	}) {
		return
	}

	out := filepath.Join(t.TempDir(), "providers")
	if !t.Run("convert names the variable clusterctl was given, never its value", func(t *testing.T) {
		convertFromCluster(t, out)
	}) {
		return
	}

	start := time.Now()
	if !t.Run("the converted CRs adopt the running providers", func(t *testing.T) {
		// docs/migrate.md: create the Secrets the report asks for (clusterctl
		// gave the variable to the three providers' components), then apply
		// the converted CRs.
		for _, a := range adopted {
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.inventoryName + "-variables"},
				StringData: map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": diagnosticsAddress},
			}
			if err := c.Create(ctx, secret); err != nil {
				t.Fatal(err)
			}
		}
		applyDir(t, ctx, out)
		for _, a := range adopted {
			p := newProvider(a.kind, a.namespace, a.name)
			framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 4*time.Minute)
			if got := p.GetStatus().InstalledVersion; got != fromVersion {
				t.Errorf("%s %s/%s: installedVersion %q, want %s", a.kind, a.namespace, a.name, got, fromVersion)
			}
		}
		t.Logf("three providers Ready under Capwright %s after their CRs were applied", time.Since(start).Round(time.Millisecond))
		sameUIDs(t, before, providerObjects(t, ctx, c))
		sameCluster(t, ctx, c, cluster)
		for _, a := range adopted {
			assertArg(t, ctx, c, a.namespace, a.deployment, "--diagnostics-address="+diagnosticsAddress)
			// Flux applies them now: the Kustomization's labels say so.
			var d appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.deployment}, &d); err != nil {
				t.Fatal(err)
			}
			if d.Labels["kustomize.toolkit.fluxcd.io/name"] == "" {
				t.Errorf("Deployment %s/%s carries no Flux Kustomization label: %v", a.namespace, a.deployment, d.Labels)
			}
			// clusterctl's inventory object is the one Capwright keeps.
			inv := &unstructured.Unstructured{}
			inv.SetAPIVersion("clusterctl.cluster.x-k8s.io/v1alpha3")
			inv.SetKind("Provider")
			if err := c.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.inventoryName}, inv); err != nil {
				t.Fatal(err)
			}
			if inv.GetLabels()[v1alpha1.ProviderKindLabel] != a.kind {
				t.Errorf("inventory Provider %s/%s: labels %v, want %s=%s", a.namespace, a.inventoryName, inv.GetLabels(), v1alpha1.ProviderKindLabel, a.kind)
			}
		}
		want := map[string]string{}
		for _, a := range adopted {
			want[a.namespace+"/"+a.inventoryName] = fromVersion
		}
		if got := inventory(t, ctx, c); !reflect.DeepEqual(got, want) {
			t.Errorf("clusterctl's inventory: %v, want %v", got, want)
		}
	}) {
		return
	}

	t.Run("a provider whose contract the adopted core cannot work with is refused", func(t *testing.T) {
		refuseOldContract(t, ctx, c)
	})

	t.Run("clusterctl still reads the cluster and plans the upgrade", func(t *testing.T) {
		describe := runClusterctl(t, ctx, "describe", "cluster", clusterName, "--namespace", "default")
		describesCluster(t, describe)
		plan := runClusterctl(t, ctx, "upgrade", "plan")
		for _, a := range adopted {
			planRow(t, plan, a.inventoryName, a.namespace, fromVersion, toVersion)
		}
		plansAgree(t, ctx, plan)
	})

	t.Run("an upgrade through Capwright is what clusterctl sees", func(t *testing.T) {
		core := newProvider("CoreProvider", "capi-system", "cluster-api")
		framework.UpdateProvider(t, ctx, c, core, func() { core.GetSpec().Version = toVersion })
		framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 4*time.Minute)
		if got := core.GetStatus().InstalledVersion; got != toVersion {
			t.Fatalf("installedVersion %q after the upgrade, want %s", got, toVersion)
		}
		if got := inventory(t, ctx, c)["capi-system/cluster-api"]; got != toVersion {
			t.Errorf("clusterctl's inventory records the core at %q, want %s", got, toVersion)
		}
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, &d); err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+toVersion) {
			t.Errorf("the core Deployment runs %s after the upgrade, want tag %s", img, toVersion)
		}
		sameUIDs(t, before, providerObjects(t, ctx, c))
		sameCluster(t, ctx, c, cluster)
		plan := runClusterctl(t, ctx, "upgrade", "plan")
		planRow(t, plan, "cluster-api", "capi-system", toVersion, "Already up to date")
		planRow(t, plan, "bootstrap-kubeadm", "capi-kubeadm-bootstrap-system", fromVersion, toVersion)
		plansAgree(t, ctx, plan)
		describesCluster(t, runClusterctl(t, ctx, "describe", "cluster", clusterName, "--namespace", "default"))
	})
}

// refuseCoreElsewhere applies a CoreProvider for the namespace
// capi-elsewhere while clusterctl's core runs in capi-system: Capwright
// must not install a second core there, nor move the running one's CRDs
// and webhooks.
func refuseCoreElsewhere(t *testing.T, ctx context.Context, c client.Client) {
	framework.EnsureNamespace(t, ctx, c, "capi-elsewhere")
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-elsewhere", Name: "cluster-api"}}
	p.Spec.Version = fromVersion
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, p)
	// The manager finds clusterctl's core in capi-system (its inventory)
	// and refuses before it writes anything: Compatible False,
	// InstalledElsewhere (v1alpha1.InstalledElsewhereReason).
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.InstalledElsewhereReason, time.Minute)
	msg := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.CompatibleCondition).Message
	t.Logf("CoreProvider capi-elsewhere/cluster-api refused: %s", msg)
	if !strings.Contains(msg, "namespace capi-system") {
		t.Errorf("the refusal does not say where the core runs: %s", msg)
	}
	// Nothing may be installed meanwhile, nor a moment later (the refusal
	// stalls the provider: it is checked again in a minute, on a change of
	// its spec or a reconcile request).
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var deployments appsv1.DeploymentList
		if err := c.List(ctx, &deployments, client.InNamespace("capi-elsewhere")); err != nil {
			t.Fatal(err)
		}
		if len(deployments.Items) > 0 {
			t.Fatalf("a second core was installed: Deployment capi-elsewhere/%s", deployments.Items[0].Name)
		}
		var kustomizations kustomizev1.KustomizationList
		if err := c.List(ctx, &kustomizations, client.InNamespace("capi-elsewhere")); err != nil {
			t.Fatal(err)
		}
		if len(kustomizations.Items) > 0 {
			t.Fatalf("the refused provider got a Flux Kustomization: capi-elsewhere/%s", kustomizations.Items[0].Name)
		}
		time.Sleep(time.Second)
	}
	var crd unstructured.Unstructured
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if ns, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"); ns != "capi-system" {
		t.Errorf("the Cluster CRD's conversion webhook now calls namespace %q, want capi-system", ns)
	}
}

// convertFromCluster runs `capwright convert --from-cluster` as
// docs/migrate.md does, into dir.
func convertFromCluster(t *testing.T, dir string) {
	report := filepath.Join(t.TempDir(), "report.txt")
	cmd := exec.Command(cli, "convert", "--from-cluster", "--kubeconfig", env.Kubeconfig,
		"--output", dir, "--report", report,
		"--release-mirror", "github.com=https://"+releases.Host,
		"--release-ca-file", releaseCA, "--release-redirect-host", releases.DownloadHost)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("capwright convert: %v, want exit code 7 (a variable needs attention)\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capwright convert:\n%s%s\nreport:\n%s", stdout.String(), stderr.String(), text)
	all := stdout.String() + stderr.String() + string(text)
	files := map[string][]byte{}
	for _, a := range adopted {
		// --output writes DIR/NAMESPACE/TYPE-NAME.yaml.
		path := filepath.Join(dir, a.namespace, a.inventoryName+".yaml")
		if a.kind == "CoreProvider" {
			path = filepath.Join(dir, a.namespace, "core-"+a.name+".yaml")
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("convert wrote no %s: %v", path, err)
		}
		files[a.kind] = data
		all += string(data)
		objs, err := plane.DecodeYAML(strings.NewReader(string(data)))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v", path, err)
		}
		if v, _, _ := unstructured.NestedString(objs[0].Object, "spec", "version"); v != fromVersion || objs[0].GetNamespace() != a.namespace || objs[0].GetKind() != a.kind {
			t.Errorf("%s: %s %s/%s at %q, want %s %s/%s at %s", path, objs[0].GetKind(), objs[0].GetNamespace(), objs[0].GetName(), v, a.kind, a.namespace, a.name, fromVersion)
		}
	}
	if !regexp.MustCompile(`attention +variables\.CAPI_DIAGNOSTICS_ADDRESS: `).Match(text) {
		t.Errorf("the report does not name CAPI_DIAGNOSTICS_ADDRESS as needing attention")
	}
	if strings.Contains(all, strings.TrimPrefix(diagnosticsAddress, ":")) {
		t.Errorf("convert printed the value of CAPI_DIAGNOSTICS_ADDRESS (%s)", diagnosticsAddress)
	}
	for _, a := range adopted {
		if !strings.Contains(string(files[a.kind]), "name: "+a.inventoryName+"-variables") {
			t.Errorf("the %s's CR does not name the Secret of its variables:\n%s", a.kind, files[a.kind])
		}
	}
	migrateGuideShows(t, files["CoreProvider"])
}

// applyDir applies every file under dir, as kubectl apply -R -f does.
func applyDir(t *testing.T, ctx context.Context, dir string) {
	applier, err := plane.NewApplier(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := plane.DecodeYAML(strings.NewReader(string(data)))
		if err != nil {
			return err
		}
		return applier.Apply(ctx, objs...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runClusterctl(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := installed.run(ctx, env.Kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("clusterctl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// describesCluster checks that `clusterctl describe cluster` shows the
// Cluster as the root of its tree.
func describesCluster(t *testing.T, describe string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)^Cluster default/` + clusterName + `\s`).MatchString(describe) {
		t.Errorf("clusterctl describe cluster does not show Cluster default/%s", clusterName)
	}
}

// planRow checks the row of `clusterctl upgrade plan` for a provider.
func planRow(t *testing.T, plan, name, namespace, current, next string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+` + regexp.QuoteMeta(namespace) + `\s+\S+\s+` + regexp.QuoteMeta(current) + `\s+` + regexp.QuoteMeta(next) + `\s*$`)
	if !re.MatchString(plan) {
		t.Errorf("clusterctl upgrade plan has no row %s %s %s → %s", name, namespace, current, next)
	}
}

func getCluster(t *testing.T, ctx context.Context, c client.Client) *unstructured.Unstructured {
	t.Helper()
	u := plane.NewTestCluster("default", clusterName)
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// sameCluster fails if the Cluster was recreated or its spec, labels or
// annotations changed.
func sameCluster(t *testing.T, ctx context.Context, c client.Client, before *unstructured.Unstructured) {
	t.Helper()
	now := getCluster(t, ctx, c)
	switch {
	case now.GetUID() != before.GetUID():
		t.Errorf("Cluster default/%s was recreated", clusterName)
	case now.GetGeneration() != before.GetGeneration() || !reflect.DeepEqual(now.Object["spec"], before.Object["spec"]):
		t.Errorf("Cluster default/%s spec changed: generation %d → %d", clusterName, before.GetGeneration(), now.GetGeneration())
	case !reflect.DeepEqual(now.GetLabels(), before.GetLabels()) || !reflect.DeepEqual(now.GetAnnotations(), before.GetAnnotations()):
		t.Errorf("Cluster default/%s metadata changed: labels %v → %v, annotations %v → %v", clusterName, before.GetLabels(), now.GetLabels(), before.GetAnnotations(), now.GetAnnotations())
	}
}

// assertArg checks that a Deployment's first container has arg.
func assertArg(t *testing.T, ctx context.Context, c client.Client, namespace, name, arg string) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatalf("Deployment %s/%s is gone", namespace, name)
		}
		t.Fatal(err)
	}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if a == arg {
			return
		}
	}
	t.Errorf("Deployment %s/%s runs with %v, want %s (the value clusterctl was given)", namespace, name, d.Spec.Template.Spec.Containers[0].Args, arg)
}

// refuseOldContract applies an infrastructure provider whose release
// follows contract v1alpha4 once the core clusterctl installed is adopted
// (its contract, v1beta2, read from its own checked release): it is
// refused naming both contracts, and nothing of it is applied.
func refuseOldContract(t *testing.T, ctx context.Context, c client.Client) {
	const ns, repo = "oldcontract-system", "cluster-api-provider-oldcontract"
	framework.EnsureNamespace(t, ctx, c, ns)
	releases.Publish("acme", repo, "v0.1.0", map[string][]byte{
		"metadata.yaml":                  framework.TestMetadata("v1alpha4"),
		"infrastructure-components.yaml": framework.TestComponents(ns, "old"),
	})
	p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oldcontract"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{
			URL: "https://github.com/acme/" + repo + "/releases/latest/infrastructure-components.yaml"}}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, p)
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.IncompatibleContractReason, 2*time.Minute)
	msg := ""
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1alpha1.CompatibleCondition {
			msg = cond.Message
		}
	}
	t.Logf("IncompatibleContract: %s", msg)
	if !strings.Contains(msg, "v1alpha4") || !strings.Contains(msg, "v1beta2") {
		t.Errorf("the refusal should name both contracts: %q", msg)
	}
	for _, obj := range []client.Object{&kustomizev1.Kustomization{}, &sourcev1.ExternalArtifact{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "infrastructure-oldcontract"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("refused provider: a %T was written: %v", obj, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-controller-manager"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused provider: its Deployment reached the cluster: %v", err)
	}
}
