package providers

import (
	"context"
	"fmt"
	"path/filepath"
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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// publish pushes a real Cluster API release's provider to the plane's
// registry in the upstream layout and returns its oci:// URL.
func publish(t *testing.T, ctx context.Context, providerType, name, version string) string {
	t.Helper()
	url, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")), providerType, name, version)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func publishFiles(t *testing.T, ctx context.Context, providerType, name, version string, files map[string][]byte) string {
	t.Helper()
	url, err := framework.PublishFiles(ctx, env.Registry.Host, providerType, name, version, files)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func source(url string) *v1alpha1.ProviderSource {
	return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}
}

func newClient(t testing.TB) client.Client {
	t.Helper()
	c, err := framework.NewClient(env.Config)
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

func ensureNamespace(t testing.TB, ctx context.Context, c client.Client, name string) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitCondition waits until the provider's condition has status (and reason,
// when given) for its current generation, and returns the provider.
func waitCondition(t testing.TB, ctx context.Context, c client.Client, obj v1alpha1.Provider, condType string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
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

// updateProvider changes the provider's spec with change, reading it again
// when the controller wrote its status in between.
func updateProvider(t testing.TB, ctx context.Context, c client.Client, p v1alpha1.Provider, change func()) {
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

// noManagerWrites fails the test, listing them, if the manager wrote
// anything since since; who says who was expected to write nothing.
func noManagerWrites(t *testing.T, since time.Time, who string) {
	t.Helper()
	writes, err := env.Writes(plane.CapwrightUser, since)
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
