package clusters

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme,
		helmv2.AddToScheme, clustersv1alpha1.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	clusterGVK      = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	clusterClassGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"}
)

// controlPlaneSpec is a control plane from the simulated operator's
// chart (framework.HostedControlPlaneSpec).
func controlPlaneSpec(values map[string]any) clustersv1alpha1.CapwrightControlPlaneResourceSpec {
	return framework.HostedControlPlaneSpec(chartURL, values)
}

func controlPlane(namespace, name, version string, values map[string]any) *clustersv1alpha1.CapwrightControlPlane {
	return &clustersv1alpha1.CapwrightControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clustersv1alpha1.CapwrightControlPlaneSpec{
			Version:                           version,
			CapwrightControlPlaneResourceSpec: controlPlaneSpec(values),
		},
	}
}

// eventually polls check until it says done, failing with its last word
// after timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		done, why := check(ctx)
		last = why
		return done, nil
	})
	if err != nil {
		t.Fatalf("%s: not after %s: %s", what, timeout, last)
	}
}

// cpCondition waits until the control plane's condition typ has status
// (and reason, if given), returning it.
func cpCondition(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	return condition(t, ctx, c, &clustersv1alpha1.CapwrightControlPlane{}, key, typ, status, reason, timeout)
}

// withConditions is a contract kind: CapwrightControlPlane or
// CapwrightCluster.
type withConditions interface {
	client.Object
	GetConditions() []metav1.Condition
}

// condition waits until obj's condition typ has status (and reason, if
// given) for its generation, returning it.
func condition(t *testing.T, ctx context.Context, c client.Client, obj withConditions, key client.ObjectKey, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1alpha1.")
	var got metav1.Condition
	eventually(t, ctx, timeout, fmt.Sprintf("%s %s %s=%s %s", kind, key, typ, status, reason), func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(obj.GetConditions(), typ)
		if cond == nil {
			return false, fmt.Sprintf("no %s condition; conditions %+v", typ, obj.GetConditions())
		}
		got = *cond
		return cond.Status == status && (reason == "" || cond.Reason == reason) && cond.ObservedGeneration == obj.GetGeneration(),
			fmt.Sprintf("%s=%s %s: %s (generation %d of %d)", typ, cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration, obj.GetGeneration())
	})
	return got
}

// clusterCondition waits for a condition of the Cluster.
func clusterCondition(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey, typ string, status metav1.ConditionStatus, timeout time.Duration) map[string]any {
	t.Helper()
	var got map[string]any
	eventually(t, ctx, timeout, fmt.Sprintf("Cluster %s %s=%s", key, typ, status), func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(clusterGVK)
		if err := c.Get(ctx, key, u); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]any)
			if m["type"] == typ {
				got = m
				return m["status"] == string(status), fmt.Sprintf("%v; all conditions: %v", m, conds)
			}
		}
		return false, fmt.Sprintf("no %s; conditions %v", typ, conds)
	})
	return got
}
