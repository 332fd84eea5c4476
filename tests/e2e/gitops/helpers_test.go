package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
)

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls check every half second until it reports done, failing
// the test with its last word after timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var done bool
		done, last = check()
		return done, nil
	})
	if err != nil {
		t.Fatalf("%s: not after %s (%s)", what, timeout, last)
	}
}

// gitRevision is how Flux names commit sha on main.
func gitRevision(sha string) string { return "main@sha1:" + sha }

// kustomization reads Flux Kustomization flux-system/name.
func kustomization(ctx context.Context, c client.Client, name string) (*kustomizev1.Kustomization, error) {
	ks := &kustomizev1.Kustomization{}
	return ks, c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, ks)
}

// appliedAt tells whether Kustomization name is Ready with commit sha
// applied, and what it says.
func appliedAt(ctx context.Context, c client.Client, name, sha string) (bool, string) {
	ks, err := kustomization(ctx, c, name)
	if err != nil {
		return false, err.Error()
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ready == nil {
		return false, "Kustomization " + name + ": no Ready condition yet"
	}
	state := fmt.Sprintf("Kustomization %s: Ready=%s %s: %s (applied %s)", name, ready.Status, ready.Reason, ready.Message, ks.Status.LastAppliedRevision)
	return ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == ks.Generation &&
		ks.Status.LastAppliedRevision == gitRevision(sha), state
}

// waitApplied waits until every Kustomization of names is Ready at sha.
func waitApplied(t *testing.T, ctx context.Context, c client.Client, sha string, timeout time.Duration, names ...string) {
	t.Helper()
	eventually(t, ctx, timeout, "Kustomizations "+strings.Join(names, ", ")+" applied at "+sha[:12], func() (bool, string) {
		for _, name := range names {
			if ok, state := appliedAt(ctx, c, name, sha); !ok {
				return false, state
			}
		}
		return true, ""
	})
}

// fetched waits until the GitRepository flux-system has commit sha, and
// returns when it had it.
func fetched(t *testing.T, ctx context.Context, c client.Client, sha string, timeout time.Duration) time.Time {
	t.Helper()
	eventually(t, ctx, timeout, "GitRepository flux-system at "+sha[:12], func() (bool, string) {
		repo := &sourcev1.GitRepository{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, repo); err != nil {
			return false, err.Error()
		}
		if repo.Status.Artifact == nil {
			return false, "no artifact yet"
		}
		return repo.Status.Artifact.Revision == gitRevision(sha), "at " + repo.Status.Artifact.Revision
	})
	return time.Now()
}
