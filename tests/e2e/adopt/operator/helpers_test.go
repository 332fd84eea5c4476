package operator

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

const (
	// oldVersion is what the operator installs and Capwright adopts;
	// newVersion what Capwright upgrades the control plane provider to.
	oldVersion = "v1.13.6"
	newVersion = "v1.14.2"
	// clusterNamespace holds the workload Cluster.
	clusterNamespace = "workloads"
)

// provider is one of the providers the operator installs, in the
// namespace clusterctl gives it by default.
type provider struct {
	typ, namespace, name string
	// deployment is its controller's Deployment.
	deployment string
}

var providers = []provider{
	{v1alpha1.CoreProviderType, "capi-system", "cluster-api", "capi-controller-manager"},
	{v1alpha1.BootstrapProviderType, "capi-kubeadm-bootstrap-system", "kubeadm", "capi-kubeadm-bootstrap-controller-manager"},
	{v1alpha1.ControlPlaneProviderType, "capi-kubeadm-control-plane-system", "kubeadm", "capi-kubeadm-control-plane-controller-manager"},
}

// controlPlane is the provider with additional manifests, drifted, pruned
// and upgraded after the adoption.
var controlPlane = providers[2]

func (p provider) String() string { return p.typ + " " + p.namespace + "/" + p.name }

// objectName names the provider's Flux objects.
func (p provider) objectName() string { return render.ObjectName(p.typ, p.name) }

// inventoryName names its clusterctl inventory Provider.
func (p provider) inventoryName() string { return clusterctl.ProviderLabelValue(p.typ, p.name) }

// operatorKind and operatorType are the operator's kind and GetType() for
// it (the ConfigMap and cache Secret are named after the type).
func (p provider) operatorKind() string {
	return framework.ClusterAPIOperatorProvider(p.typ, p.namespace, p.name, "", "").GetKind()
}

func (p provider) operatorType() string {
	if p.typ == v1alpha1.ControlPlaneProviderType {
		return "control-plane"
	}
	return p.typ
}

// operatorObject is the operator's CR of the provider, for reads and
// deletes.
func (p provider) operatorObject() *unstructured.Unstructured {
	u := framework.ClusterAPIOperatorProvider(p.typ, p.namespace, p.name, "", "")
	delete(u.Object, "spec")
	return u
}

// capwrightCRs are the Capwright CRs of the providers, to read.
func capwrightCRs() []v1alpha1.Provider {
	meta := func(p provider) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: p.namespace, Name: p.name} }
	return []v1alpha1.Provider{
		&v1alpha1.CoreProvider{ObjectMeta: meta(providers[0])},
		&v1alpha1.BootstrapProvider{ObjectMeta: meta(providers[1])},
		&v1alpha1.ControlPlaneProvider{ObjectMeta: meta(providers[2])},
	}
}

// kcpExtrasName is the ConfigMap of the control plane provider's
// additional manifests: the operator applies them with the components,
// Capwright's CR keeps the reference.
const kcpExtrasName = "kcp-extras"

// kcpExtras are those manifests: a disruption budget and a network policy
// for the provider's controller, the kind of object sites add beside a
// provider. kcpExtrasBudgetOnly is the ConfigMap after the policy is
// dropped.
const (
	kcpExtrasBudgetOnly = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: kcp-controller
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      cluster.x-k8s.io/provider: control-plane-kubeadm
`
	kcpExtras = kcpExtrasBudgetOnly + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: kcp-webhook-ingress
spec:
  podSelector:
    matchLabels:
      cluster.x-k8s.io/provider: control-plane-kubeadm
  policyTypes: [Ingress]
  ingress:
  - ports:
    - port: 9443
`
)

// kcpExtrasEdited is the ConfigMap after an edit that drops the policy and
// turns the budget's maxUnavailable into minAvailable: the API server
// refuses a budget with both, so the edit applies only if Flux owns
// maxUnavailable alone (the operator set it) and drops it.
var kcpExtrasEdited = strings.Replace(kcpExtrasBudgetOnly, "maxUnavailable: 1", "minAvailable: 1", 1)

// installWithOperator starts cluster-api-operator v0.29.0 and has it
// install the three providers at oldVersion from the plane's registry, in
// the layout it reads, as the install benchmark does; it returns the
// operator's process once each provider is Ready.
func installWithOperator(t *testing.T, ctx context.Context, c client.Client) *plane.Process {
	t.Helper()
	proc := startOperator(t, ctx)
	started := time.Now()
	for _, p := range providers {
		framework.EnsureNamespace(t, ctx, c, p.namespace)
		release := filepath.Dir(env.CAPIComponentsPath(oldVersion, "metadata.yaml"))
		oci, err := framework.PublishForClusterAPIOperator(ctx, env.Registry.Host, release, p.typ, p.name, oldVersion)
		if err != nil {
			t.Fatal(err)
		}
		cr := framework.ClusterAPIOperatorProvider(p.typ, p.namespace, p.name, oldVersion, oci)
		if p == controlPlane {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: kcpExtrasName}, Data: map[string]string{"manifests": kcpExtras}}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(cr.Object, map[string]any{"name": kcpExtrasName, "namespace": p.namespace}, "spec", "additionalManifests"); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	waitOperatorReady(t, ctx, c)
	t.Logf("cluster-api-operator installed the three providers %s: Ready", time.Since(started).Round(time.Millisecond))
	return proc
}

// startOperator runs cluster-api-operator on the plane.
func startOperator(t *testing.T, ctx context.Context) *plane.Process {
	t.Helper()
	proc, err := env.StartClusterAPIOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}

// waitOperatorReady waits until the operator reports each provider
// installed at oldVersion and Ready.
func waitOperatorReady(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	for _, p := range providers {
		waitFor(t, ctx, 3*time.Minute, p.String()+" Ready under cluster-api-operator", func() (bool, string) {
			u := p.operatorObject()
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				return false, err.Error()
			}
			return framework.ClusterAPIOperatorProviderReady(u, oldVersion)
		})
	}
}

// createCluster creates a Cluster through Cluster API's webhooks, served
// by the real core manager (the plane's v1.14.2 binary: the components of
// v1.13.6 run as kwok pods, which serve nothing), and returns it as read.
func createCluster(t *testing.T, ctx context.Context, c client.Client) *unstructured.Unstructured {
	t.Helper()
	if _, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.InstallTestInfraClusterCRD(ctx); err != nil {
		t.Fatal(err)
	}
	framework.EnsureNamespace(t, ctx, c, clusterNamespace)
	cluster := plane.NewTestCluster(clusterNamespace, "prod-1")
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatal(err)
	}
	// Let Cluster API's controllers make their first writes (finalizer,
	// status) so the Cluster recorded is the one that stays.
	time.Sleep(2 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
		t.Fatal(err)
	}
	return cluster
}

// startCapwright runs the manager with the mirror rule that sends
// github.com to the release stand-in, as tests/e2e/providers does.
func startCapwright(t *testing.T, ctx context.Context) {
	t.Helper()
	args, envVars, err := releases.ManagerSettings(env.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.StartCapwright(ctx, plane.CapwrightOptions{Args: args, Env: envVars}); err != nil {
		t.Fatal(err)
	}
}

// recorded is an object as snapshot found it.
type recorded struct {
	key, uid string
	// namespaced is false for cluster-scoped objects; operatorOwned
	// tells whether an operator CR is among the owners.
	namespaced, operatorOwned bool
	// operatorManagers are the operator's field managers among the
	// object's managed fields.
	operatorManagers []string
}

// snapshot reads every object of the three providers' components at
// version (the release files), and the control plane provider's
// additional manifests: its UID and whether an operator CR owns it.
func snapshot(t *testing.T, ctx context.Context, c client.Client, version string) map[string]recorded {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, p := range providers {
		data, err := os.ReadFile(env.CAPIComponentsPath(version, clusterctl.ComponentsFile(p.typ)))
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := plane.DecodeYAML(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decoded...)
	}
	for _, doc := range []string{kcpExtrasBudgetOnly, strings.SplitN(kcpExtras, "---\n", 2)[1]} {
		decoded, err := plane.DecodeYAML(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		decoded[0].SetNamespace(controlPlane.namespace)
		objs = append(objs, decoded...)
	}
	out := map[string]recorded{}
	for _, want := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		key := objectKey(want.GetKind(), want.GetNamespace(), want.GetName())
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue // pruned, or not yet there: the caller compares keys
			}
			t.Fatalf("reading %s: %v", key, err)
		}
		r := recorded{key: key, uid: string(got.GetUID()), namespaced: got.GetNamespace() != ""}
		for _, ref := range got.GetOwnerReferences() {
			if strings.HasPrefix(ref.APIVersion, "operator.cluster.x-k8s.io/") {
				r.operatorOwned = true
			}
		}
		for _, m := range got.GetManagedFields() {
			if slices.Contains(operatorFieldManagers, m.Manager) {
				r.operatorManagers = append(r.operatorManagers, m.Manager+" ("+string(m.Operation)+")")
			}
		}
		out[key] = r
	}
	return out
}

// assertSameUIDs: every object recorded before is there with the same
// UID.
func assertSameUIDs(t *testing.T, before, after map[string]recorded) {
	t.Helper()
	kinds := map[string]int{}
	for key, b := range before {
		a, ok := after[key]
		switch {
		case !ok:
			t.Errorf("%s is gone (uid was %s)", key, b.uid)
		case a.uid != b.uid:
			t.Errorf("%s was recreated: uid %s, was %s", key, a.uid, b.uid)
		default:
			kinds[strings.SplitN(key, " ", 2)[0]]++
		}
	}
	t.Logf("%d objects kept their UIDs, by kind: %v", len(before), kinds)
}

// assertClusterUntouched: the Cluster has the UID, generation and spec it
// had before the adoption.
func assertClusterUntouched(t *testing.T, ctx context.Context, c client.Client, before *unstructured.Unstructured) {
	t.Helper()
	now := &unstructured.Unstructured{}
	now.SetGroupVersionKind(before.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(before), now); err != nil {
		t.Fatalf("the Cluster: %v", err)
	}
	if now.GetUID() != before.GetUID() || now.GetGeneration() != before.GetGeneration() || !reflect.DeepEqual(now.Object["spec"], before.Object["spec"]) {
		t.Errorf("Cluster %s/%s changed: uid %s generation %d spec %v, was uid %s generation %d spec %v",
			now.GetNamespace(), now.GetName(), now.GetUID(), now.GetGeneration(), now.Object["spec"], before.GetUID(), before.GetGeneration(), before.Object["spec"])
	}
}

// inventoryVersions maps the clusterctl inventory Providers of the three
// providers' namespaces to the version each records.
func inventoryVersions(t *testing.T, ctx context.Context, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range providers {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
		if err := c.List(ctx, list, client.InNamespace(p.namespace)); err != nil {
			if strings.Contains(err.Error(), "no matches for kind") {
				return out
			}
			t.Fatal(err)
		}
		for _, item := range list.Items {
			v, _, _ := unstructured.NestedString(item.Object, "version")
			out[item.GetName()] = v
		}
	}
	return out
}

// guideSection is the text of docs/migrate.md from heading to the next
// heading of the same or a higher level.
func guideSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), "docs", "migrate.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/migrate.md has no heading %q", heading)
	}
	level := strings.SplitN(heading, " ", 2)[0]
	next := regexp.MustCompile(`(?m)^#{1,` + strconv.Itoa(len(level)) + `} `)
	if loc := next.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return rest
}

// guideYAML decodes the ```yaml blocks of a section of docs/migrate.md.
func guideYAML(t *testing.T, heading string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(guideSection(t, heading), -1) {
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(block[1]), 4096)
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc != nil {
				out = append(out, doc)
			}
		}
	}
	return out
}

func objectKey(kind, namespace, name string) string {
	return kind + " " + (types.NamespacedName{Namespace: namespace, Name: name}).String()
}

func ptrTo[T any](v T) *T { return &v }

func itoa(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func names(cms []corev1.ConfigMap) []string {
	var out []string
	for _, cm := range cms {
		out = append(out, cm.Name)
	}
	return out
}
