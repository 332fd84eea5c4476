package provider

import (
	"context"
	"slices"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// clusterctlInventory is the inventory object `clusterctl init` writes
// for the core provider in namespace at version.
func clusterctlInventory(namespace, version string) *unstructured.Unstructured {
	inv := inventoryObject(namespace, "cluster-api", version)
	inv.SetLabels(map[string]string{clusterctl.LabelClusterctl: "", clusterctl.LabelProvider: "cluster-api", clusterctl.LabelCore: clusterctl.LabelCoreInventory})
	return inv
}

// operatorCoreProvider is cluster-api-operator's CoreProvider in
// namespace, having installed version.
func operatorCoreProvider(namespace, version string) *unstructured.Unstructured {
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": version}, "status": map[string]any{"installedVersion": version}}}
	cr.SetGroupVersionKind(operatorVersion.WithKind("CoreProvider"))
	cr.SetNamespace(namespace)
	cr.SetName("cluster-api")
	cr.SetUID("uid-operator-core")
	return cr
}

// liveDeployment is the core's controller Deployment as clusterctl left
// it in capi-system.
func liveDeployment(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager", UID: "uid-live-deployment",
		Labels: map[string]string{clusterctl.LabelClusterctl: "", clusterctl.LabelProvider: "cluster-api"}}}
	if mutate != nil {
		mutate(d)
	}
	return d
}

func appliedKustomization(env *fakeEnv) bool {
	return slices.ContainsFunc(env.fluxWrites(), func(w write) bool { return w.Verb == "apply" && w.Kind == kustomizev1.KustomizationKind })
}

// TestAdoptionRefusedBeforeAnythingIsApplied: each refusal of a first
// install over an existing installation, on a fake API server holding
// what clusterctl, cluster-api-operator, Flux or Helm left: the reason
// and message, no Kustomization written, the live Deployment unchanged.
func TestAdoptionRefusedBeforeAnythingIsApplied(t *testing.T) {
	operatorRef := metav1.OwnerReference{APIVersion: "operator.cluster.x-k8s.io/v1alpha2", Kind: "CoreProvider", Name: "cluster-api", UID: "uid-operator-core"}
	for _, tt := range []struct {
		name    string
		objects []ctrl.Object
		reason  string
		message []string
		// writesNothing: refused in the quick checks, before the
		// OCIRepository is fetched ahead.
		writesNothing bool
	}{
		{name: "installed by clusterctl in another namespace", objects: []ctrl.Object{clusterctlInventory("capi-old", "v1.14.2")},
			reason: v1alpha1.InstalledElsewhereReason, writesNothing: true,
			message: []string{`the core provider "cluster-api" is installed in namespace capi-old already (v1.14.2, installed by clusterctl: clusterctl's inventory Provider capi-old/cluster-api)`,
				"create CoreProvider cluster-api in namespace capi-old instead of capi-system"}},
		{name: "installed by cluster-api-operator in another namespace", objects: []ctrl.Object{operatorCoreProvider("operator-capi", "v1.14.2")},
			reason: v1alpha1.InstalledElsewhereReason, writesNothing: true,
			message: []string{"installed in namespace operator-capi already (v1.14.2, installed by cluster-api-operator: its CoreProvider operator-capi/cluster-api, operator.cluster.x-k8s.io/v1alpha2)"}},
		{name: "the Deployment owned by cluster-api-operator", objects: []ctrl.Object{operatorCoreProvider("capi-system", "v1.14.2"),
			liveDeployment(func(d *appsv1.Deployment) { d.OwnerReferences = []metav1.OwnerReference{operatorRef} })},
			reason:  v1alpha1.OwnedByAnotherToolReason,
			message: []string{"Deployment capi-system/capi-controller-manager is owned by cluster-api-operator's CoreProvider capi-system/cluster-api (an owner reference)", "docs/migrate.md"}},
		{name: "the Deployment applied by another Kustomization", objects: []ctrl.Object{
			liveDeployment(func(d *appsv1.Deployment) {
				d.Labels[providerplan.KustomizationNameLabel], d.Labels[providerplan.KustomizationNamespaceLabel] = "capi", "flux-system"
			}),
			&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "capi"},
				Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
					{ID: "capi-system_capi-controller-manager_apps_Deployment", Version: "v1"}}}}}},
			reason:  v1alpha1.OwnedByAnotherToolReason,
			message: []string{"Deployment capi-system/capi-controller-manager is applied by Flux Kustomization flux-system/capi", "kustomize.toolkit.fluxcd.io/prune=disabled"}},
		{name: "the Deployment in a Helm release", objects: []ctrl.Object{
			liveDeployment(func(d *appsv1.Deployment) {
				d.Labels["app.kubernetes.io/managed-by"] = "Helm"
				d.Annotations = map[string]string{providerplan.HelmReleaseNameAnnotation: "capi", providerplan.HelmReleaseNamespaceAnnotation: "capi-system"}
			}),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "sh.helm.release.v1.capi.v1",
				Labels: map[string]string{"owner": "helm", "name": "capi", "status": "deployed"}}}},
			reason:  v1alpha1.OwnedByAnotherToolReason,
			message: []string{"Deployment capi-system/capi-controller-manager belongs to Helm release capi-system/capi", "helm.sh/resource-policy=keep"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := registrytest.New(t, registrytest.Options{})
			art := pushCore(t, reg, "v1.14.2", "v1beta2")
			core := coreProvider(art.URL, "v1.14.2")
			env := newFakeEnv(t, kindFor(core), append(tt.objects, core)...)
			before := &appsv1.Deployment{}
			_ = env.client.Get(context.Background(), ctrl.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, before)

			if _, err := env.reconcile(core); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(core)
			c := condition(got, v1alpha1.CompatibleCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.reason {
				t.Fatalf("Compatible = %+v, want False %s", c, tt.reason)
			}
			t.Logf("%s: %s", c.Reason, c.Message)
			for _, want := range tt.message {
				if !strings.Contains(c.Message, want) {
					t.Errorf("Compatible message %q does not say %q", c.Message, want)
				}
			}
			if s := stalled(got); s == nil || s.Status != metav1.ConditionTrue || s.Reason != tt.reason {
				t.Errorf("Stalled = %+v, want True %s", s, tt.reason)
			}
			if appliedKustomization(env) {
				t.Errorf("a refused adoption wrote a Kustomization: %v", env.fluxWrites())
			}
			if w := env.fluxWrites(); tt.writesNothing && len(w) > 0 {
				t.Errorf("refused in the quick checks, yet wrote %v", w)
			}
			after := &appsv1.Deployment{}
			if err := env.client.Get(context.Background(), ctrl.ObjectKeyFromObject(before), after); err == nil &&
				(after.UID != before.UID || after.ResourceVersion != before.ResourceVersion) {
				t.Errorf("the live Deployment changed: uid %s→%s, resourceVersion %s→%s", before.UID, after.UID, before.ResourceVersion, after.ResourceVersion)
			}
		})
	}
}

// TestAdoptionOfAClusterctlInstallation: clusterctl installed the core in
// the CR's namespace. The first install proceeds and says it adopts; the
// live objects are read once, before the Kustomization is written, and
// not again; the inventory entry clusterctl created is taken over in
// place, keeping clusterctl's labels.
func TestAdoptionOfAClusterctlInstallation(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Options{})
	art := pushCore(t, reg, "v1.14.2", "v1beta2")
	core := coreProvider(art.URL, "v1.14.2")
	env := newFakeEnv(t, kindFor(core), clusterctlInventory("capi-system", "v1.14.2"), liveDeployment(nil), core)

	if _, err := env.reconcile(core); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := env.get(core)
	c := condition(got, v1alpha1.CompatibleCondition)
	want := "cluster-api v1.14.2 (contract v1beta2) can be installed; adopting v1.14.2 installed by clusterctl (clusterctl's inventory Provider capi-system/cluster-api): Flux takes its objects over in place"
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != want {
		t.Fatalf("Compatible = %+v, want True %q", c, want)
	}
	if !appliedKustomization(env) {
		t.Fatalf("the adoption wrote no Kustomization: %v", env.fluxWrites())
	}
	events := env.recordedEvents()
	if !slices.Contains(events, "Normal Adopting cluster-api v1.14.2: adopting v1.14.2 installed by clusterctl (clusterctl's inventory Provider capi-system/cluster-api): Flux takes its objects over in place") {
		t.Errorf("no event says the provider adopts what clusterctl installed: %q", events)
	}
	if n := env.reads("metadata Deployment"); n != 1 {
		t.Errorf("the live Deployment was read %d times, want once", n)
	}
	lists := env.reads("ProviderList")
	if lists != 1 {
		t.Errorf("the inventory was listed %d times in one reconcile, want once", lists)
	}

	// Later reconciles (Flux's progress) read neither again: the
	// Kustomization exists, and the installations are remembered for
	// the generation.
	for range 3 {
		if _, err := env.reconcile(core); err != nil {
			t.Fatal(err)
		}
	}
	if n, l := env.reads("metadata Deployment"), env.reads("ProviderList"); n != 1 || l != 1 {
		t.Errorf("after three more reconciles: the Deployment read %d times, the inventory listed %d times; want 1 and 1", n, l)
	}
	if slices.ContainsFunc(env.recordedEvents(), func(e string) bool { return strings.Contains(e, providerplan.AdoptingEvent) }) {
		t.Error("the adoption was announced again on a later reconcile")
	}

	// Flux installed it: the inventory entry clusterctl created is
	// Capwright's now, same name, clusterctl's labels kept.
	if err := env.r.recordInventory(ctx, providerplan.Inventory(core, "CoreProvider"), core.UID, "v1.14.2", env.r.Source.Interval(core)); err != nil {
		t.Fatalf("recordInventory over clusterctl's entry: %v", err)
	}
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(providerplan.InventoryGVK)
	if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: "capi-system", Name: "cluster-api"}, inv); err != nil {
		t.Fatal(err)
	}
	l := inv.GetLabels()
	if l[v1alpha1.ProviderKindLabel] != "CoreProvider" || l[clusterctl.LabelCore] != clusterctl.LabelCoreInventory || l[clusterctl.LabelProvider] != "cluster-api" {
		t.Errorf("inventory labels after the take-over: %v", l)
	}
	if v, _, _ := unstructured.NestedString(inv.Object, "version"); v != "v1.14.2" {
		t.Errorf("inventory version %q", v)
	}
}

// TestAdoptionProceedsOnceTheOtherToolLetGo: markers another tool left
// on an object it no longer holds (a Kustomization that dropped it from
// its inventory, an uninstalled Helm release) refuse nothing.
func TestAdoptionProceedsOnceTheOtherToolLetGo(t *testing.T) {
	for _, tt := range []struct {
		name    string
		objects []ctrl.Object
	}{
		{name: "Kustomization no longer applies it", objects: []ctrl.Object{
			liveDeployment(func(d *appsv1.Deployment) {
				d.Labels[providerplan.KustomizationNameLabel], d.Labels[providerplan.KustomizationNamespaceLabel] = "capi", "flux-system"
			}),
			&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "capi"},
				Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{}}}}},
		{name: "Kustomization gone", objects: []ctrl.Object{liveDeployment(func(d *appsv1.Deployment) {
			d.Labels[providerplan.KustomizationNameLabel], d.Labels[providerplan.KustomizationNamespaceLabel] = "capi", "flux-system"
		})}},
		{name: "Helm release uninstalled, history kept", objects: []ctrl.Object{
			liveDeployment(func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{providerplan.HelmReleaseNameAnnotation: "capi", providerplan.HelmReleaseNamespaceAnnotation: "capi-system"}
			}),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "sh.helm.release.v1.capi.v1",
				Labels: map[string]string{"owner": "helm", "name": "capi", "status": "uninstalled"}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := registrytest.New(t, registrytest.Options{})
			art := pushCore(t, reg, "v1.14.2", "v1beta2")
			core := coreProvider(art.URL, "v1.14.2")
			env := newFakeEnv(t, kindFor(core), append(tt.objects, core)...)
			if _, err := env.reconcile(core); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if c := condition(env.get(core), v1alpha1.CompatibleCondition); c == nil || c.Status != metav1.ConditionTrue || !appliedKustomization(env) {
				t.Errorf("Compatible = %+v, Kustomization written %v; want True and written", c, appliedKustomization(env))
			}
		})
	}
}

// TestNonCoreProviderNamesTheCoreToAdopt: a bootstrap provider applied
// before any CoreProvider, on a cluster where clusterctl installed the
// core, waits and says which CoreProvider to create.
func TestNonCoreProviderNamesTheCoreToAdopt(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	art := pushDocker(t, reg, "v1.14.2", "v1beta2")
	docker := dockerProvider(art.URL, "v1.14.2")
	docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
	env := newFakeEnv(t, kindFor(docker), clusterctlInventory("capi-system", "v1.14.2"), docker)
	if _, err := env.reconcile(docker); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	c := condition(env.get(docker), v1alpha1.CompatibleCondition)
	want := "waiting for the core provider: cluster-api v1.14.2 is installed in namespace capi-system by clusterctl (clusterctl's inventory Provider capi-system/cluster-api), and no CoreProvider manages it, so its contract is unknown here: create CoreProvider cluster-api in namespace capi-system with spec.version v1.14.2 to adopt it (docs/migrate.md)"
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1alpha1.WaitingForCoreReason || c.Message != want {
		t.Fatalf("Compatible = %+v, want Unknown WaitingForCoreProvider %q", c, want)
	}
	if appliedKustomization(env) {
		t.Error("a provider waiting for its core wrote a Kustomization")
	}
}

// TestNonCoreProviderSaysWhyTheCoreIsRefused: while the core's own
// adoption is refused, a non-core provider waits and says why.
func TestNonCoreProviderSaysWhyTheCoreIsRefused(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	art := pushDocker(t, reg, "v1.14.2", "v1beta2")
	docker := dockerProvider(art.URL, "v1.14.2")
	docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
	core := coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2")
	core.Status.Conditions = []metav1.Condition{{Type: v1alpha1.CompatibleCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.OwnedByAnotherToolReason,
		Message: "cluster-api v1.14.2 would take over objects another tool manages", ObservedGeneration: 1, LastTransitionTime: created}}
	env := newFakeEnv(t, kindFor(docker), core, docker)
	if _, err := env.reconcile(docker); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	c := condition(env.get(docker), v1alpha1.CompatibleCondition)
	want := "waiting for CoreProvider capi-system/cluster-api to pass its preflight, which reads its contract; it refuses v1.14.2 now: OwnedByAnotherTool: cluster-api v1.14.2 would take over objects another tool manages"
	if c == nil || c.Reason != v1alpha1.WaitingForCoreReason || c.Message != want {
		t.Fatalf("Compatible = %+v, want %q", c, want)
	}
}

// TestAdoptedCoreKeepsTheContractCheck: the core adopted from clusterctl
// passes its preflight with the contract of its own checked release, and
// a provider whose contract that core cannot work with is refused
// (IncompatibleContract) before anything of it is applied, as under a
// core Capwright installed.
func TestAdoptedCoreKeepsTheContractCheck(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	coreArt := pushCore(t, reg, "v1.14.2", "v1beta2")
	dockerArt := pushDocker(t, reg, "v1.14.2", "v1alpha4")
	core := coreProvider(coreArt.URL, "v1.14.2")
	docker := dockerProvider(dockerArt.URL, "v1.14.2")
	docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
	env := newFakeEnv(t, kindFor(core), clusterctlInventory("capi-system", "v1.14.2"), liveDeployment(nil), core, docker)
	env.r.CorePreflights = NewCorePreflights()
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if c := condition(env.get(core), v1alpha1.CompatibleCondition); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "adopting v1.14.2 installed by clusterctl") {
		t.Fatalf("the core's Compatible = %+v, want True, adopting", c)
	}

	dockers := &Reconciler{Client: env.client, Reader: env.client, Kind: kindFor(docker), Kinds: Kinds(), Source: newSource(env.client, env.r.Source.Fetcher),
		Recorder: env.events, CorePreflights: env.r.CorePreflights}
	before := len(env.fluxWrites())
	if _, err := dockers.Reconcile(context.Background(), reconcile.Request{NamespacedName: ctrl.ObjectKeyFromObject(docker)}); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.InfrastructureProvider{}
	if err := env.client.Get(context.Background(), ctrl.ObjectKeyFromObject(docker), got); err != nil {
		t.Fatal(err)
	}
	c := condition(got, v1alpha1.CompatibleCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.IncompatibleContractReason ||
		!strings.Contains(c.Message, "docker v1.14.2 has contract v1alpha4, CoreProvider capi-system/cluster-api v1.14.2 has v1beta2") {
		t.Fatalf("Compatible = %+v, want False IncompatibleContract against the adopted core's v1beta2", c)
	}
	for _, w := range env.fluxWrites()[before:] {
		if w.Kind == kustomizev1.KustomizationKind {
			t.Errorf("the incompatible provider wrote %s", w)
		}
	}
}
