package provider

import (
	"slices"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/fluxobjects"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// fromGit marks p as applied by Kustomization flux-system/providers, as
// kustomize-controller labels what it applies.
func fromGit[P v1alpha1.Provider](p P) P {
	p.SetLabels(map[string]string{
		providerplan.KustomizationNameLabel:      "providers",
		providerplan.KustomizationNamespaceLabel: "flux-system",
	})
	return p
}

// providersKustomization is flux-system/providers, listing in its
// inventory the providers of lists.
func providersKustomization(prune bool, lists ...v1alpha1.Provider) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "providers", Generation: 1},
		Spec:       kustomizev1.KustomizationSpec{Prune: prune},
		Status: kustomizev1.KustomizationStatus{
			LastAttemptedRevision: "main@sha1:0123456789abcdef",
			LastAppliedRevision:   "main@sha1:fedcba9876543210",
			Inventory:             &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}},
		},
	}
	for _, p := range lists {
		ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries, kustomizev1.ResourceRef{
			ID: fluxobjects.ID(p.GetNamespace(), p.GetName(), v1alpha1.GroupVersion.Group, kindFor(p).Name), Version: "v1alpha1"})
	}
	return ks
}

func TestAProviderFromGitIsKeptFromFluxsPrune(t *testing.T) {
	docker := fromGit(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	docker.Finalizers = nil
	env := newFakeEnv(t, kindFor(docker), docker, providersKustomization(true, docker))
	if _, err := env.reconcile(docker); err != nil {
		t.Fatal(err)
	}
	got := env.get(docker)
	if a := got.GetAnnotations(); a[fluxPruneAnnotation] != fluxPruneDisabled || a[pruneTakenOverAnnotation] != prunedByCapwright || !slices.Contains(got.GetFinalizers(), v1alpha1.Finalizer) {
		t.Fatalf("annotations %v, finalizers %v: want %s=%s, %s=%s and the finalizer", a, got.GetFinalizers(), fluxPruneAnnotation, fluxPruneDisabled, pruneTakenOverAnnotation, prunedByCapwright)
	}
	var patches int
	for _, w := range env.writes {
		if w.Kind == "InfrastructureProvider" && w.Verb == "patch" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d patches of the provider's metadata, want the one that adds the finalizer and the annotation together: %v", patches, env.writes)
	}
	if c := condition(got, v1alpha1.DeletingCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Deleting = %+v while Git applies the provider", c)
	}

	// Applied by hand, by a Kustomization that does not prune, or with
	// prune=disabled from its own source: Flux would not prune it, nor
	// does Capwright take anything over.
	byHand := dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2")
	byHand.Finalizers = nil
	keptBySource := fromGit(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	keptBySource.Finalizers = nil
	keptBySource.Annotations = map[string]string{fluxPruneAnnotation: fluxPruneDisabled}
	for _, objs := range [][]ctrl.Object{{byHand}, {fromGit(byHand.DeepCopy()), providersKustomization(false)}, {keptBySource, providersKustomization(true)}} {
		env = newFakeEnv(t, kindFor(byHand), objs...)
		if _, err := env.reconcile(byHand); err != nil {
			t.Fatal(err)
		}
		if a := env.get(byHand).GetAnnotations(); a[pruneTakenOverAnnotation] != "" || (len(objs) < 2 && a[fluxPruneAnnotation] != "") {
			t.Errorf("%d objects: annotations %v, want nothing taken over", len(objs), a)
		}
	}
}

func TestAProviderGitDroppedIsKeptWhileInUseAndDeletedWhenNot(t *testing.T) {
	docker := fromGit(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	docker.Annotations = map[string]string{fluxPruneAnnotation: fluxPruneDisabled, pruneTakenOverAnnotation: prunedByCapwright}

	t.Run("in use: kept, Deleting names the Kustomization and what uses it", func(t *testing.T) {
		objs := append(ownedFluxObjectsOf(docker, dockerClusterCRD), dockerClusterCRDObject(), dockerCluster("team-a", "workload-1"),
			docker, providersKustomization(true))
		env := newFakeEnv(t, kindFor(docker), objs...)
		res, err := env.reconcile(docker)
		if err != nil {
			t.Fatal(err)
		}
		got := env.get(docker)
		if got == nil || !got.GetDeletionTimestamp().IsZero() {
			t.Fatalf("the provider was deleted although a DockerCluster uses it: %v", got)
		}
		c := condition(got, v1alpha1.DeletingCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.DeletionBlockedReason {
			t.Fatalf("Deleting = %+v, want True DeletionBlocked", c)
		}
		for _, want := range []string{"Kustomization flux-system/providers no longer applies it", "main@sha1:0123456789abcdef", "DockerCluster team-a/workload-1", "Put it back in Git"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("Deleting's message %q does not say %q", c.Message, want)
			}
		}
		if r := condition(got, v1alpha1.ReadyCondition); r == nil || r.Status != metav1.ConditionFalse {
			t.Errorf("Ready = %+v, want False while Git no longer has it", r)
		}
		for _, w := range env.writes {
			if w.Verb == "delete" {
				t.Errorf("a kept provider's reconcile deleted %v", w)
			}
		}
		// Clusters going away are not watched: it looks again (here
		// sooner, for the unreachable test registry).
		if res.RequeueAfter == 0 || res.RequeueAfter > removedRecheck*2 {
			t.Errorf("requeue after %v, want it to look again", res.RequeueAfter)
		}

		// Back in Git: listed again, the same object, Deleting lifted.
		ks := &kustomizev1.Kustomization{}
		if err := env.client.Get(t.Context(), ctrl.ObjectKey{Namespace: "flux-system", Name: "providers"}, ks); err != nil {
			t.Fatal(err)
		}
		ks.Status.Inventory = providersKustomization(true, docker).Status.Inventory
		if err := env.client.Status().Update(t.Context(), ks); err != nil {
			t.Fatal(err)
		}
		if _, err := env.reconcile(docker); err != nil {
			t.Fatal(err)
		}
		back := env.get(docker)
		if back.GetUID() != docker.GetUID() {
			t.Errorf("UID %s, want %s kept", back.GetUID(), docker.GetUID())
		}
		if c := condition(back, v1alpha1.DeletingCondition); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("Deleting = %+v once Git has the provider again", c)
		}
	})

	t.Run("not in use: deleted by its UID, as Flux would have pruned it, also when its Kustomization is deleted", func(t *testing.T) {
		for _, objs := range [][]ctrl.Object{{providersKustomization(true)}, {}} {
			env := newFakeEnv(t, kindFor(docker), append(ownedFluxObjectsOf(docker, dockerClusterCRD), append(objs, dockerClusterCRDObject(), docker)...)...)
			if _, err := env.reconcile(docker); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(env.writes, func(w write) bool {
				return w.Verb == "delete" && w.Kind == "InfrastructureProvider" && w.UID == docker.GetUID()
			}) {
				t.Errorf("%d Kustomizations: writes %v, want the provider deleted with its UID as precondition", len(objs), env.writes)
			}
		}
	})

	t.Run("a Kustomization that does not prune, or a provider its source keeps, is not deleted", func(t *testing.T) {
		keptBySource := fromGit(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
		keptBySource.Annotations = map[string]string{fluxPruneAnnotation: fluxPruneDisabled}
		for _, objs := range [][]ctrl.Object{{docker, providersKustomization(false)}, {keptBySource, providersKustomization(true)}, {keptBySource}} {
			env := newFakeEnv(t, kindFor(docker), append(ownedFluxObjectsOf(docker, dockerClusterCRD), append(objs, dockerClusterCRDObject())...)...)
			if _, err := env.reconcile(docker); err != nil {
				t.Fatal(err)
			}
			for _, w := range env.writes {
				if w.Verb == "delete" {
					t.Errorf("deleted %v", w)
				}
			}
			if c := condition(env.get(docker), v1alpha1.DeletingCondition); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Deleting = %+v", c)
			}
		}
	})
}
