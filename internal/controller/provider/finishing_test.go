package provider

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestNothingIsWrittenWhileFluxFinishes: kustomize-controller ends a
// reconcile with two writes, the conditions (Ready) first and then
// lastAppliedRevision. Between them the provider writes nothing (it would
// say "has applied nothing, not yet <digest>" for a few milliseconds) and
// the second write brings Installed.
func TestNothingIsWrittenWhileFluxFinishes(t *testing.T) {
	ctx := context.Background()
	env, core, art, _ := installCore(t)
	key := ctrl.ObjectKey{Namespace: "capi-system", Name: "core-cluster-api"}

	var repo sourcev1.OCIRepository
	if err := env.client.Get(ctx, key, &repo); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ready := func(gen int64, message string) []metav1.Condition {
		return []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: message,
			ObservedGeneration: gen, LastTransitionTime: now}}
	}
	repo.Status.ObservedGeneration = repo.Generation
	repo.Status.Artifact = &meta.Artifact{Revision: art.Digest, Digest: art.Digest, URL: "http://source-controller/x.tgz", Path: "x.tgz", LastUpdateTime: now}
	repo.Status.Conditions = ready(repo.Generation, "stored artifact")
	if err := env.client.Status().Update(ctx, &repo); err != nil {
		t.Fatal(err)
	}
	var ks kustomizev1.Kustomization
	if err := env.client.Get(ctx, key, &ks); err != nil {
		t.Fatal(err)
	}
	ks.Status.LastAttemptedRevision = art.Digest
	ks.Status.Conditions = ready(ks.Generation, "Applied revision: "+art.Digest)
	if err := env.client.Status().Update(ctx, &ks); err != nil {
		t.Fatal(err)
	}

	before := env.get(core)
	writes := len(env.writes)
	res, err := env.reconcile(core)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range env.writes[writes:] {
		if isProviderKind(w.Kind) {
			t.Errorf("wrote %s between Flux's two writes", w)
		}
	}
	if res.RequeueAfter != finishingRetry {
		t.Errorf("requeue after %v, want %v in case Flux's second write is not seen", res.RequeueAfter, finishingRetry)
	}
	if got := env.get(core); got.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the provider changed: %+v", got.GetStatus())
	}

	ks.Status.LastAppliedRevision = art.Digest
	ks.Status.ObservedGeneration = ks.Generation
	if err := env.client.Status().Update(ctx, &ks); err != nil {
		t.Fatal(err)
	}
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if c := condition(env.get(core), v1alpha1.InstalledCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("after Flux's second write: Installed %+v, want True", c)
	}
}
