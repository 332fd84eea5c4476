package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// downgradeRefused: moving the installed core provider back a minor
// version is refused, and still refused once the provider's status is
// lost (a restore from a backup without status): the guard then reads
// the version clusterctl's inventory records. Its OCIRepository stays
// pinned to what is installed throughout, and moving the version forward
// again brings the provider back to Ready.
func downgradeRefused(t *testing.T, ctx context.Context, c client.Client, core *v1alpha1.CoreProvider, installed, older string) {
	repoKey := client.ObjectKey{Namespace: core.Namespace, Name: "core-" + core.Name}
	pinned := ociDigest(t, ctx, c, repoKey)

	updateProvider(t, ctx, c, core, func() { core.Spec.Version = older })
	waitCondition(t, ctx, c, core, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.DowngradeReason, 2*time.Minute)

	// The status is lost; a poke makes the manager look again (a status
	// change alone does not).
	if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
		t.Fatal(err)
	}
	core.Status = v1alpha1.ProviderStatus{}
	if err := c.Status().Update(ctx, core); err != nil {
		t.Fatalf("clearing the status: %v", err)
	}
	poke(t, ctx, c, core)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
			return false, nil
		}
		cond := apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.CompatibleCondition)
		if cond == nil {
			return false, nil
		}
		last = cond.Reason + ": " + cond.Message
		return cond.Reason == v1alpha1.DowngradeReason && strings.Contains(cond.Message, "clusterctl's inventory Provider capi-system/cluster-api records"), nil
	})
	if err != nil {
		t.Fatalf("with the status lost, Compatible says %q; want the downgrade refused from clusterctl's inventory", last)
	}
	if got := ociDigest(t, ctx, c, repoKey); got != pinned {
		t.Errorf("OCIRepository %s pins %s after the refused downgrade, want %s (what is installed)", repoKey, got, pinned)
	}

	updateProvider(t, ctx, c, core, func() { core.Spec.Version = installed })
	waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	if core.Status.InstalledVersion != installed {
		t.Errorf("status.installedVersion %q after the version moved back, want %s", core.Status.InstalledVersion, installed)
	}
	if got := ociDigest(t, ctx, c, repoKey); got != pinned {
		t.Errorf("OCIRepository %s pins %s, want %s", repoKey, got, pinned)
	}
}

func ociDigest(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) string {
	t.Helper()
	var repo sourcev1.OCIRepository
	if err := c.Get(ctx, key, &repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Reference == nil {
		t.Fatalf("OCIRepository %s has no spec.ref", key)
	}
	return repo.Spec.Reference.Digest
}
