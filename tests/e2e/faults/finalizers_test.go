package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestFinalizersOfOthersSurvive (fault 11) has another controller add its
// finalizer to providers at the moment Capwright adds its own, right
// after each is created, for a few rounds, and deletes them at once:
// Capwright's finalizer comes and goes, and the other controller's is
// there throughout. (Nobody can add a finalizer to an object being
// deleted: the API server refuses it.)
func TestFinalizersOfOthersSurvive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	// The other controller adds its finalizer as controller-runtime's
	// controllers do, with an update that conflicts if the object changed
	// since it read it; it loses nothing of anyone's.
	add := func(p *v1alpha1.InfrastructureProvider, finalizer string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			p.Finalizers = append(p.Finalizers, finalizer)
			return c.Update(ctx, p)
		})
	}
	for round := range 3 {
		p := testProvider(t, ctx, c, env.Registry.Host, fmt.Sprintf("finalizers-%d", round))
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		early := "example.com/early"
		if err := add(p, early); err != nil {
			t.Fatal(err)
		}
		waitFinalizers(t, ctx, c, p, func(f []string) bool {
			return slices.Contains(f, early) && slices.Contains(f, v1alpha1.Finalizer)
		}, "Capwright's and the early finalizer")

		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitFinalizers(t, ctx, c, p, func(f []string) bool {
			return slices.Equal(f, []string{early})
		}, "the other controller's finalizer only, Capwright's removed")

		if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			t.Fatal(err)
		}
		framework.WaitGone(t, ctx, c, p, time.Minute)
	}
}

// waitFinalizers waits until the provider's finalizers satisfy ok.
func waitFinalizers(t *testing.T, ctx context.Context, c client.Client, p *v1alpha1.InfrastructureProvider, ok func([]string) bool, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, nil
		}
		return ok(p.Finalizers), nil
	})
	if err != nil {
		t.Fatalf("%s/%s has finalizers %v; want %s", p.Namespace, p.Name, p.Finalizers, want)
	}
}
