package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls check until it reports done, failing the test with its
// last word after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		done, msg := check()
		if done {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// tenantState formats what the test waits on.
func tenantState(tn *tenancyv1alpha1.Tenant) string {
	var b strings.Builder
	for _, c := range tn.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s(%s) %q; ", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, c := range tn.Status.Clusters {
		fmt.Fprintf(&b, "[%s/%s %s %s: %s] ", c.Namespace, c.Name, c.Phase, c.Reason, c.Message)
	}
	return b.String()
}

// waitTenant waits until the tenant's current generation satisfies ok.
func waitTenant(t testing.TB, ctx context.Context, c client.Client, name string, timeout time.Duration, what string, ok func(*tenancyv1alpha1.Tenant) bool) *tenancyv1alpha1.Tenant {
	t.Helper()
	tn := &tenancyv1alpha1.Tenant{}
	eventually(t, timeout, what, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
			return false, err.Error()
		}
		if tn.Status.ObservedGeneration != tn.Generation {
			return false, "status describes an older generation"
		}
		return ok(tn), tenantState(tn)
	})
	return tn
}

func isReady(tn *tenancyv1alpha1.Tenant) bool {
	r := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	return r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == tn.Generation
}

func clusterLine(tn *tenancyv1alpha1.Tenant, name string) *tenancyv1alpha1.TenantClusterStatus {
	for i := range tn.Status.Clusters {
		if tn.Status.Clusters[i].Name == name {
			return &tn.Status.Clusters[i]
		}
	}
	return nil
}

// setClusterLabel sets (or with value "" removes) a label of a registered
// Cluster.
func setClusterLabel(t testing.TB, ctx context.Context, c client.Client, name, key, value string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	u.SetKind("Cluster")
	if err := c.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if value == "" {
		delete(labels, key)
	} else {
		labels[key] = value
	}
	u.SetLabels(labels)
	if err := c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
}

// requestReconcile asks a Flux object (or a Tenant) to reconcile now.
func requestReconcile(t testing.TB, ctx context.Context, c client.Client, obj client.Object) {
	t.Helper()
	if err := framework.RequestReconcile(ctx, c, obj); err != nil {
		t.Fatal(err)
	}
}

func writesSince(t testing.TB, since time.Time) []string {
	t.Helper()
	writes, err := env.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, w := range writes {
		lines = append(lines, w.String())
	}
	return lines
}

// kustomizeTenant is a Tenant named name whose stack is the kustomize
// artifact art (plain HTTP: the plane's registry), on the clusters sel
// selects.
func kustomizeTenant(name string, art framework.PushedArtifact, sel tenancyv1alpha1.ClusterSelector) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: sel,
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true},
				Tag:                 art.Tag,
			}},
		},
	}
}

// createTenant creates tn; when the test ends it deletes it (if still
// there) and waits until it is gone, so the next test starts clean.
func createTenant(t testing.TB, ctx context.Context, c client.Client, tn *tenancyv1alpha1.Tenant) {
	t.Helper()
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		key := client.ObjectKeyFromObject(tn)
		if err := c.Delete(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: key.Name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		eventually(t, 3*time.Minute, "Tenant "+key.Name+" gone", func() (bool, string) {
			err := c.Get(context.Background(), key, &tenancyv1alpha1.Tenant{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

// stackGreeting is the greeting of the test stack's ConfigMap (stackFiles)
// in namespace (the tenant's target namespace) on the workload cluster
// remote reaches.
func stackGreeting(t testing.TB, ctx context.Context, remote client.Client, namespace, cluster string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "stack-config"}, cm); err != nil {
		t.Fatalf("the stack's ConfigMap on %s: %v", cluster, err)
	}
	return cm.Data["greeting"]
}

// updateTenant changes Tenant name as change says and updates it, reading
// it again and changing it anew when the manager's status write made the
// read stale (a conflict).
func updateTenant(t testing.TB, ctx context.Context, c client.Client, name string, change func(*tenancyv1alpha1.Tenant)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, current); err != nil {
			return err
		}
		change(current)
		return c.Update(ctx, current)
	}); err != nil {
		t.Fatalf("updating Tenant %s: %v", name, err)
	}
}
