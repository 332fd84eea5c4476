package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/scheme"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// statusShowsProviders runs `capwright status` on the installed providers
// of the lifecycle test: each one's tree holds the Flux objects the API
// server has for it and, under its Kustomization, exactly the objects of
// its inventory, all Ready, exit code 0. A provider at a version its
// registry does not have is not Ready: exit code 8, naming the reason its
// status gives. `version -o json` gives the CLI's version and says why no
// manager is shown: the plane runs the manager as a process, not as the
// Deployment manifests/ installs.
func statusShowsProviders(t *testing.T, ctx context.Context, providers []installed) {
	cli := framework.CLI(t, ctx, env)
	c := statusClient(t)
	for _, p := range providers {
		statusMatchesProvider(t, ctx, c, cli, p.obj)
	}

	// The tree as text: the same objects, by line.
	stdout, _, code, err := framework.RunCLI(ctx, cli, "status", "coreprovider/cluster-api", "-n", "capi-system", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	name := render.ObjectName(v1alpha1.CoreProviderType, "cluster-api")
	for _, want := range []string{"CoreProvider/capi-system/cluster-api", "├── OCIRepository/capi-system/" + name,
		"└── Kustomization/capi-system/" + name, "CustomResourceDefinition/clusters.cluster.x-k8s.io", "Deployment/capi-system/capi-controller-manager"} {
		if !strings.Contains(stdout, want) || code != 0 {
			t.Errorf("capwright status coreprovider/cluster-api: exit code %d, no line with %q:\n%s", code, want, stdout)
		}
	}

	// Shell completion reads the names from the cluster.
	stdout, _, code, err = framework.RunCLI(ctx, cli, "__complete", "status", "--kubeconfig", env.Kubeconfig, "bootstrapprovider/")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.HasPrefix(stdout, "bootstrapprovider/kubeadm\n:4\n") {
		t.Errorf("completing bootstrapprovider/: exit code %d:\n%s", code, stdout)
	}

	// A provider whose version is nowhere.
	ensureNamespace(t, ctx, c, "status-missing")
	missing := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "status-missing", Name: "missing"},
		Spec: v1alpha1.ProviderSpec{Version: "v9.9.9", Source: source("oci://" + env.Registry.Host + "/status/manifests/infrastructure-missing")}}
	if err := c.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, missing)
	waitCondition(t, ctx, c, missing, v1alpha1.ReadyCondition, metav1.ConditionFalse, "", time.Minute)
	ready := apimeta.FindStatusCondition(missing.Status.Conditions, v1alpha1.ReadyCondition)
	_, stderr, code, err := framework.RunCLI(ctx, cli, "status", "infrap/missing", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if want := "InfrastructureProvider/status-missing/missing is not Ready (" + ready.Reason; code != 8 || !strings.Contains(stderr, want) {
		t.Errorf("capwright status of a provider at a missing version: exit code %d, stderr %q; want 8 and %q", code, stderr, want)
	}
	_, stderr, code, err = framework.RunCLI(ctx, cli, "status", "infrap/absent", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || !strings.Contains(stderr, "InfrastructureProvider absent not found") {
		t.Errorf("capwright status infrap/absent: exit code %d, stderr %q; want 3 naming it", code, stderr)
	}

	stdout, stderr, code, err = framework.RunCLI(ctx, cli, "version", "-o", "json", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Client struct {
			Version, GoVersion string
		}
		Managers    []json.RawMessage
		ManagerNote string
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 {
		t.Fatalf("capwright version -o json: exit code %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	if v.Client.Version == "" || !strings.HasPrefix(v.Client.GoVersion, "go") || len(v.Managers) != 0 ||
		!strings.Contains(v.ManagerNote, "no Deployment labelled app.kubernetes.io/name=capwright,app.kubernetes.io/component=manager") {
		t.Errorf("capwright version -o json on the plane (its manager is a process): %s", stdout)
	}
}

// compareProviderTree checks the tree of one provider against the API
// server: the provider's readiness and versions, each Flux object labelled
// as the provider's, and what their Kustomization applied.
func compareProviderTree(ctx context.Context, c client.Client, p v1alpha1.Provider, kind string, r *framework.StatusReport) []string {
	if len(r.Objects) != 1 {
		return []string{fmt.Sprintf("%d objects at the top, want the provider alone", len(r.Objects))}
	}
	n := r.Objects[0]
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return []string{err.Error()}
	}
	var diffs []string
	ready := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition)
	if n.Ref() != kind+"/"+p.GetNamespace()+"/"+p.GetName() || ready == nil || n.Ready != string(ready.Status) || n.Reason != ready.Reason ||
		n.Version != p.GetSpec().Version || n.InstalledVersion != p.GetStatus().InstalledVersion {
		diffs = append(diffs, fmt.Sprintf("the provider's line %+v, the API: Ready %+v, version %s installed %s", *n, ready, p.GetSpec().Version, p.GetStatus().InstalledVersion))
	}
	// Every Flux object of the provider, found as the manager labels them.
	labels := client.MatchingLabels{v1alpha1.ProviderKindLabel: kind, v1alpha1.ProviderNameLabel: p.GetName()}
	want := 0
	for _, l := range fluxObjectLists() {
		if err := c.List(ctx, l, client.InNamespace(p.GetNamespace()), labels); err != nil {
			return append(diffs, err.Error())
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return append(diffs, err.Error())
		}
		for _, item := range items {
			o := item.(client.Object)
			want++
			kind := fluxKindName(l)
			child := n.Child(kind, o.GetName())
			if child == nil {
				diffs = append(diffs, fmt.Sprintf("%s %s/%s is not in the tree", kind, o.GetNamespace(), o.GetName()))
				continue
			}
			diffs = append(diffs, framework.CheckFluxNode(ctx, c, child)...)
			for _, applied := range child.Children {
				if applied.Ready != string(metav1.ConditionTrue) {
					diffs = append(diffs, fmt.Sprintf("%s is %s %s: %s, but the provider is Ready", applied.Ref(), applied.Ready, applied.Reason, applied.Message))
				}
			}
		}
	}
	if want == 0 || len(n.Children) != want {
		diffs = append(diffs, fmt.Sprintf("the tree has %d Flux objects under the provider, the API %d", len(n.Children), want))
	}
	return diffs
}

// fluxObjectLists are lists of the Flux kinds a provider may have.
func fluxObjectLists() []client.ObjectList {
	return []client.ObjectList{&sourcev1.OCIRepositoryList{}, &sourcev1.ExternalArtifactList{}, &kustomizev1.KustomizationList{}, &helmv2.HelmReleaseList{}}
}

func fluxKindName(l client.ObjectList) string {
	switch l.(type) {
	case *sourcev1.OCIRepositoryList:
		return sourcev1.OCIRepositoryKind
	case *sourcev1.ExternalArtifactList:
		return sourcev1.ExternalArtifactKind
	case *kustomizev1.KustomizationList:
		return kustomizev1.KustomizationKind
	}
	return helmv2.HelmReleaseKind
}

// kindOf is the provider's kind as the API server names it.
func kindOf(t *testing.T, c client.Client, p v1alpha1.Provider) string {
	t.Helper()
	gvk, err := c.GroupVersionKindFor(p)
	if err != nil {
		t.Fatal(err)
	}
	return gvk.Kind
}

// countApplied counts the objects Flux applied under n.
func countApplied(n *framework.StatusNode) int {
	total := 0
	for _, c := range n.Children {
		total += len(c.Children)
	}
	return total
}

// statusClient is a client that knows every Flux kind the CLI shows
// (HelmRelease too).
func statusClient(t *testing.T) client.Client {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statusMatchesProvider runs `capwright status KIND/NAME -o json` on a
// Ready provider and compares the tree with the API server.
func statusMatchesProvider(t *testing.T, ctx context.Context, c client.Client, cli string, p v1alpha1.Provider) {
	t.Helper()
	kind := kindOf(t, c, p)
	arg := strings.ToLower(kind) + "/" + p.GetName()
	var diffs []string
	// Flux re-reconciles on its own schedule: the tree and the API are
	// read one after the other, so give them a few tries to agree.
	for try := 0; try < 5; try++ {
		stdout, stderr, code, err := framework.RunCLI(ctx, cli, "status", arg, "-o", "json", "--kubeconfig", env.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		diffs = nil
		if code != 0 {
			diffs = append(diffs, fmt.Sprintf("exit code %d: %s", code, stderr))
		}
		r, err := framework.ParseStatus(stdout)
		if err != nil {
			t.Fatal(err)
		}
		diffs = append(diffs, compareProviderTree(ctx, c, p, kind, r)...)
		if len(diffs) == 0 {
			t.Logf("%s: %d Flux objects, %d objects applied, all Ready", arg, len(r.Objects[0].Children), countApplied(r.Objects[0]))
			break
		}
		time.Sleep(time.Second)
	}
	for _, d := range diffs {
		t.Errorf("capwright status %s: %s", arg, d)
	}
}
