package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/plane"
)

// TestComponents is a small infrastructure provider: a namespace, a
// config and a Deployment, with the given extra text in the ConfigMap.
func TestComponents(namespace, extra string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: test-settings
  namespace: %[1]s
data:
  setting: "%[2]s"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: test-controller-manager
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: test}
  template:
    metadata:
      labels: {app: test}
    spec:
      containers:
      - name: manager
        image: registry.example.com/test/manager:v0.1.0
        args: ["--leader-elect"]
`, namespace, extra))
}

// TestMetadata is a clusterctl metadata.yaml with one release series,
// v0.1, of contract.
func TestMetadata(contract string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- major: 0
  minor: 1
  contract: %s
`, contract))
}

// NewProviderClient is a client of cfg that knows the provider kinds and
// CRDs besides Flux's kinds.
func NewProviderClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// EnsureNamespace creates the namespace unless it exists.
func EnsureNamespace(t testing.TB, ctx context.Context, c client.Client, name string) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// WaitProviderCondition waits until the provider's condition has status
// (and reason, when given) for its current generation; obj holds the
// provider as last read.
func WaitProviderCondition(t testing.TB, ctx context.Context, c client.Client, obj v1alpha1.Provider, condType string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err != nil {
			// A read cut short by the deadline says nothing of the provider:
			// keep what the last read showed.
			if ctx.Err() == nil || last == "" {
				last = err.Error()
			}
			return false, nil
		}
		cond := apimeta.FindStatusCondition(obj.GetConditions(), condType)
		if cond == nil {
			last = "no " + condType + " condition"
			return false, nil
		}
		last = fmt.Sprintf("%s=%s %s: %s (observedGeneration %d, generation %d)", condType, cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration, obj.GetGeneration())
		return cond.Status == status && (reason == "" || cond.Reason == reason) && cond.ObservedGeneration == obj.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("%T %s/%s: want %s=%s %s; last: %s", obj, obj.GetNamespace(), obj.GetName(), condType, status, reason, last)
	}
}

// UpdateProvider changes the provider's spec with change, reading it
// again when the controller wrote its status in between.
func UpdateProvider(t testing.TB, ctx context.Context, c client.Client, p v1alpha1.Provider, change func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p.(client.Object)), p.(client.Object)); err != nil {
			return err
		}
		change()
		return c.Update(ctx, p.(client.Object))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// NoManagerWrites fails the test, listing them, if the Capwright manager
// wrote anything on p since since (the plane needs AuditLog); who says
// who was expected to write nothing.
func NoManagerWrites(t testing.TB, p *plane.Plane, since time.Time, who string) {
	t.Helper()
	writes, err := p.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) > 0 {
		var lines []string
		for _, w := range writes {
			lines = append(lines, w.String())
		}
		t.Fatalf("%s made %d writes:\n%s", who, len(writes), strings.Join(lines, "\n"))
	}
}

// WaitGone waits until obj no longer exists.
func WaitGone(t testing.TB, ctx context.Context, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%T %s/%s still exists after %s", obj, obj.GetNamespace(), obj.GetName(), timeout)
	}
}

// DeleteProviderAndWait deletes the provider and waits until Capwright
// has removed what it installed and the provider is gone.
func DeleteProviderAndWait(t testing.TB, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	if err := c.Delete(ctx, p.(client.Object)); err != nil {
		t.Fatal(err)
	}
	WaitGone(t, ctx, c, p.(client.Object), 3*time.Minute)
}
