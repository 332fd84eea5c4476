package provider

import (
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// deleting marks p as being deleted (it keeps Capwright's finalizer).
func deleting[P v1alpha1.Provider](p P) P {
	now := metav1.NewTime(created.Add(time.Hour))
	p.SetDeletionTimestamp(&now)
	return p
}

// controlledBy gives o a controller reference to the provider of kind
// with uid.
func controlledBy[O ctrl.Object](o O, kind, name string, uid types.UID) O {
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: name, UID: uid, Controller: &yes}})
	return o
}

// fluxObjectsOf are the OCIRepository and Kustomization named after p in
// its namespace, with UIDs of their own; the Kustomization's inventory
// holds the CRDs (by name) Flux applied.
func fluxObjectsOf(p v1alpha1.Provider, crds ...string) (*sourcev1.OCIRepository, *kustomizev1.Kustomization) {
	m := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: objectName(p)}
	repo := &sourcev1.OCIRepository{ObjectMeta: *m.DeepCopy()}
	repo.UID = "uid-repo-" + types.UID(p.GetName())
	ks := &kustomizev1.Kustomization{ObjectMeta: *m.DeepCopy()}
	ks.UID = "uid-ks-" + types.UID(p.GetName())
	ks.Status.Inventory = &kustomizev1.ResourceInventory{}
	for _, crd := range crds {
		ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries,
			kustomizev1.ResourceRef{ID: "_" + crd + "_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"})
	}
	ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries,
		kustomizev1.ResourceRef{ID: p.GetNamespace() + "_capd-controller-manager_apps_Deployment", Version: "v1"})
	return repo, ks
}

// ownedHelmReleaseOf is the OCIRepository and HelmRelease of chart
// provider p, controlled by p; the HelmRelease's inventory holds the CRDs
// (by name) helm-controller installed.
func ownedHelmReleaseOf(p v1alpha1.Provider, crds ...string) []ctrl.Object {
	repo, _ := fluxObjectsOf(p)
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: objectName(p), UID: "uid-hr-" + types.UID(p.GetName())}}
	hr.Status.Inventory = &helmv2.ResourceInventory{}
	for _, crd := range crds {
		hr.Status.Inventory.Entries = append(hr.Status.Inventory.Entries,
			helmv2.ResourceRef{ID: "_" + crd + "_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"})
	}
	kind := kindFor(p).Name
	return []ctrl.Object{controlledBy(repo, kind, p.GetName(), p.GetUID()), controlledBy(hr, kind, p.GetName(), p.GetUID())}
}

// ownedFluxObjectsOf are fluxObjectsOf p, controlled by p.
func ownedFluxObjectsOf(p v1alpha1.Provider, crds ...string) []ctrl.Object {
	repo, ks := fluxObjectsOf(p, crds...)
	kind := kindFor(p).Name
	return []ctrl.Object{controlledBy(repo, kind, p.GetName(), p.GetUID()), controlledBy(ks, kind, p.GetName(), p.GetUID())}
}

// dockerClusterCRD is the CRD of the docker provider's DockerCluster.
const dockerClusterCRD = "dockerclusters.infrastructure.cluster.x-k8s.io"

func dockerClusterCRDObject() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: dockerClusterCRD},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "infrastructure.cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "DockerCluster", ListKind: "DockerClusterList", Plural: "dockerclusters"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1"}, {Name: "v1beta2", Storage: true, Served: true}}}}
}

func dockerCluster(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
	u.SetKind("DockerCluster")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestFinalizeWaitsForWhatBlocksDeletion: while objects of the kinds the
// provider installed exist, or for the core provider other providers, the
// provider keeps its finalizer and its Flux objects, and Deleting says
// what it waits for; a wait, not a stall.
func TestFinalizeWaitsForWhatBlocksDeletion(t *testing.T) {
	docker := deleting(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	core := deleting(coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2"))
	chart := deleting(dockerProvider("", "v1.14.2"))
	chart.Spec.Source = &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.invalid/charts/docker"}}}
	tests := []struct {
		name     string
		provider v1alpha1.Provider
		objs     []ctrl.Object
		message  []string
	}{
		{
			name:     "objects of the provider's kinds exist",
			provider: docker,
			objs: append(ownedFluxObjectsOf(docker, dockerClusterCRD),
				dockerClusterCRDObject(), dockerCluster("default", "workload-1"), dockerCluster("team-a", "workload-2")),
			message: []string{"waiting until these are deleted: DockerCluster default/workload-1; DockerCluster team-a/workload-2"},
		},
		{
			name:     "objects of the kinds a chart installed exist (from the HelmRelease's inventory)",
			provider: chart,
			objs: append(ownedHelmReleaseOf(chart, dockerClusterCRD),
				dockerClusterCRDObject(), dockerCluster("default", "workload-1")),
			message: []string{"waiting until these are deleted: DockerCluster default/workload-1"},
		},
		{
			name:     "other providers exist while the core provider is deleted",
			provider: core,
			objs: append(ownedFluxObjectsOf(core),
				dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2")),
			message: []string{"waiting until these are deleted: InfrastructureProvider capd-system/docker"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newFakeEnv(t, kindFor(tt.provider), append(tt.objs, tt.provider.(ctrl.Object))...)
			existing := env.fluxObjects()

			res, err := env.reconcile(tt.provider)
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(tt.provider)
			if got == nil || !slices.Contains(got.GetFinalizers(), v1alpha1.Finalizer) {
				t.Fatalf("the provider lost its finalizer while its deletion is blocked: %v", got)
			}
			c := condition(got, v1alpha1.DeletingCondition)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.DeletionBlockedReason {
				t.Fatalf("Deleting = %+v, want True DeletionBlocked", c)
			}
			for _, want := range tt.message {
				if !strings.Contains(c.Message, want) {
					t.Errorf("Deleting message %q does not say %q", c.Message, want)
				}
			}
			if w := env.fluxWrites(); len(w) > 0 {
				t.Errorf("a blocked deletion wrote %v", w)
			}
			if objs := env.fluxObjects(); !slices.Equal(objs, existing) {
				t.Errorf("Flux objects %v, want %v kept", objs, existing)
			}
			if res.RequeueAfter != 10*time.Second {
				t.Errorf("requeue after %v, want 10s", res.RequeueAfter)
			}
			if s := stalled(got); s != nil {
				t.Errorf("Stalled = %+v: a blocked deletion lifts itself", s)
			}
			if r := reconciling(got); r == nil || r.Reason != v1alpha1.DeletionBlockedReason {
				t.Errorf("Reconciling = %+v, want True DeletionBlocked", r)
			}
			if events := env.recordedEvents(); !slices.ContainsFunc(events, func(e string) bool {
				return strings.HasPrefix(e, corev1.EventTypeWarning+" "+v1alpha1.DeletionBlockedReason+" ")
			}) {
				t.Errorf("events %q: want a Warning DeletionBlocked", events)
			}
		})
	}
}

// TestFinalizeDeletesItsFluxObjectsThenLetsGo: with nothing blocking, the
// provider deletes its Flux objects, each by the UID it read, waits while
// they are still there (Flux prunes), then drops its clusterctl inventory
// object and its finalizer.
func TestFinalizeDeletesItsFluxObjectsThenLetsGo(t *testing.T) {
	docker := deleting(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	inventory := &unstructured.Unstructured{}
	inventory.SetGroupVersionKind(providerplan.InventoryGVK)
	inventory.SetNamespace("capd-system")
	inventory.SetName("infrastructure-docker")
	inventory.SetUID("uid-inventory")
	objs := append(ownedFluxObjectsOf(docker, dockerClusterCRD), dockerClusterCRDObject(), inventory, docker)
	env := newFakeEnv(t, kindFor(docker), objs...)

	res, err := env.reconcile(docker)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := env.get(docker)
	if got == nil || !slices.Contains(got.GetFinalizers(), v1alpha1.Finalizer) {
		t.Fatalf("the provider let go before its Flux objects were gone: %v", got)
	}
	if c := condition(got, v1alpha1.DeletingCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.DeletingReason ||
		!strings.Contains(c.Message, "Flux is pruning what it applied for capd-system/infrastructure-docker") {
		t.Errorf("Deleting = %+v, want True Deleting, Flux pruning", c)
	}
	if res.RequeueAfter != 2*time.Second {
		t.Errorf("requeue after %v, want 2s", res.RequeueAfter)
	}
	deletes := []string{}
	for _, w := range env.fluxWrites() {
		deletes = append(deletes, w.String())
	}
	slices.Sort(deletes)
	want := []string{
		"delete Kustomization capd-system/infrastructure-docker (uid uid-ks-docker)",
		"delete OCIRepository capd-system/infrastructure-docker (uid uid-repo-docker)",
	}
	if !slices.Equal(deletes, want) {
		t.Errorf("writes %q, want %q", deletes, want)
	}
	for _, e := range env.recordedEvents() {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			t.Errorf("event %q: deleting with nothing in the way is no Warning", e)
		}
	}

	if _, err := env.reconcile(got); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if got := env.get(docker); got != nil {
		t.Fatalf("the provider is still there with finalizers %v once its Flux objects are gone", got.GetFinalizers())
	}
	last := env.fluxWrites()[len(want):]
	if len(last) != 1 || last[0].String() != "delete Provider capd-system/infrastructure-docker (uid uid-inventory)" {
		t.Errorf("writes after the Flux objects went: %v, want only the clusterctl inventory object deleted by its UID", last)
	}
}

// TestFinalizeNeverTouchesObjectsItDoesNotOwn: Flux objects with the
// provider's names that are not under its controller reference (written
// by hand, or by another owner) are never deleted, and what they
// installed does not hold the provider's deletion up: a provider whose
// only objects are not its own installed nothing and lets go at once; one
// with its own objects too deletes only those.
func TestFinalizeNeverTouchesObjectsItDoesNotOwn(t *testing.T) {
	docker := deleting(dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	core := deleting(coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2"))
	other := dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2")
	tests := []struct {
		name     string
		provider v1alpha1.Provider
		objs     func() []ctrl.Object
		// deleted are the deletes wanted, each by UID.
		deleted []string
	}{
		{
			name:     "no controller reference",
			provider: docker,
			objs: func() []ctrl.Object {
				repo, ks := fluxObjectsOf(docker, dockerClusterCRD)
				return []ctrl.Object{repo, ks}
			},
		},
		{
			name:     "another owner's controller reference",
			provider: docker,
			objs: func() []ctrl.Object {
				repo, ks := fluxObjectsOf(docker, dockerClusterCRD)
				return []ctrl.Object{controlledBy(repo, "InfrastructureProvider", "docker", "uid-another-docker"),
					controlledBy(ks, "InfrastructureProvider", "docker", "uid-another-docker")}
			},
		},
		{
			name:     "a plain owner reference to the provider, not a controller one",
			provider: docker,
			objs: func() []ctrl.Object {
				repo, ks := fluxObjectsOf(docker, dockerClusterCRD)
				for _, o := range []ctrl.Object{repo, ks} {
					o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "InfrastructureProvider", Name: "docker", UID: docker.UID}})
				}
				return []ctrl.Object{repo, ks}
			},
		},
		{
			name:     "the core provider's name taken while other providers exist",
			provider: core,
			objs: func() []ctrl.Object {
				repo, ks := fluxObjectsOf(core)
				return []ctrl.Object{repo, ks, other}
			},
		},
		{
			name:     "its own OCIRepository, another's Kustomization and additional manifests",
			provider: docker,
			objs: func() []ctrl.Object {
				repo, ks := fluxObjectsOf(docker, dockerClusterCRD)
				extra := ks.DeepCopy()
				extra.Name, extra.UID = additionalKey(docker).Name, "uid-ks-extra"
				return []ctrl.Object{controlledBy(repo, "InfrastructureProvider", "docker", docker.UID), ks, extra}
			},
			deleted: []string{"delete OCIRepository capd-system/infrastructure-docker (uid uid-repo-docker)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append(tt.objs(), dockerClusterCRDObject(), dockerCluster("default", "workload-1"), tt.provider.(ctrl.Object))
			env := newFakeEnv(t, kindFor(tt.provider), objs...)
			existing := env.fluxObjects()

			for range 3 {
				if _, err := env.reconcile(tt.provider); err != nil {
					t.Fatalf("reconcile: %v", err)
				}
				if got := env.get(tt.provider); got == nil {
					break
				} else if c := condition(got, v1alpha1.DeletingCondition); c == nil || c.Reason != v1alpha1.DeletingReason {
					t.Fatalf("the provider waits: Deleting = %+v", c)
				}
			}
			if got := env.get(tt.provider); got != nil {
				t.Fatalf("the provider kept its finalizer: Deleting = %+v", condition(got, v1alpha1.DeletingCondition))
			}
			var writes []string
			for _, w := range env.fluxWrites() {
				writes = append(writes, w.String())
			}
			if !slices.Equal(writes, tt.deleted) {
				t.Errorf("writes %q, want %q", writes, tt.deleted)
			}
			want := slices.DeleteFunc(existing, func(o string) bool {
				return slices.ContainsFunc(tt.deleted, func(d string) bool { return strings.HasPrefix(d, "delete "+o+" ") })
			})
			if objs := env.fluxObjects(); !slices.Equal(objs, want) {
				t.Errorf("Flux objects %v, want %v untouched", objs, want)
			}
		})
	}
}

// TestFinalizeWithoutFluxObjects: a provider preflight refused (it never
// got Flux objects) lets go at once, whatever exists in the cluster.
func TestFinalizeWithoutFluxObjects(t *testing.T) {
	core := deleting(coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2"))
	env := newFakeEnv(t, kindFor(core), core,
		dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2"))
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if got := env.get(core); got != nil {
		t.Errorf("a core provider that installed nothing kept its finalizer: Deleting = %+v", condition(got, v1alpha1.DeletingCondition))
	}
	if w := env.fluxWrites(); len(w) > 0 {
		t.Errorf("writes %v", w)
	}
}
