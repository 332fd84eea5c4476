// Package build plans, without a cluster, what the Capwright manager
// would write for custom resources as they sit in a Git repository: the
// controllers' own fact gathering (internal/controller/…: the same
// artifact resolution and checks, the same reads) runs against an
// in-memory store holding the repository's objects, and the pure plans
// (internal/plan/…) turn those facts into the Flux objects. Nothing of a
// plan is copied here; only the facts a cluster would hold and a
// repository does not (Flux's progress, Cluster API's) are filled in, and
// each filled fact is said in the item's notes.
package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/contract"
	"github.com/capwright/capwright/internal/controller/provider"
	"github.com/capwright/capwright/internal/controller/tenant"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/plan"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	tenantplan "github.com/capwright/capwright/internal/plan/tenant"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/resolve"
	"github.com/capwright/capwright/internal/scheme"
)

// Options are the settings of the manager a build stands for (its flags
// of the same names), and how the CLI reaches registries.
type Options struct {
	// Access is how registries and release hosts are reached: the CLI's
	// flags and the docker credential chain. The Secrets a spec names
	// for its source are not read.
	Access artifact.Access
	// Mirrors, InsecureRegistries, CatalogOCIArtifacts,
	// ReleaseRedirectHosts: the manager's --registry-mirror(-file),
	// --insecure-registry, --catalog-oci-artifacts and
	// --release-redirect-host.
	Mirrors              catalog.Mirrors
	InsecureRegistries   []string
	CatalogOCIArtifacts  bool
	ReleaseRedirectHosts []string
	// MaxArtifactSize and RegistryTimeout bound what is fetched, as the
	// manager's --max-artifact-size and --registry-timeout.
	MaxArtifactSize int64
	RegistryTimeout time.Duration
	// Sharding and Forbidden: the manager's --flux-sharding and the
	// namespaces closed to Tenants (render.TenantForbidden).
	Sharding  render.Sharding
	Forbidden render.ForbiddenNamespaces
	// Layouts are OCI image layouts providers' artifacts are read from
	// instead of their registries, when they hold them (offline).
	Layouts []string
	// Provisioned takes every Cluster as provisioned — its control plane
	// initialized and its kubeconfig Secret present, as Cluster API has
	// them once the cluster is up — so a Tenant's stack is shown for it.
	// Off, a Cluster is as its object says (a live cluster's, for diff).
	Provisioned bool
}

// Item is what the manager would do for one custom resource.
type Item struct {
	Kind, Namespace, Name string
	// Objects are the objects written, as applied (plan.AsApplied: no
	// status, Capwright's hash annotation), in the order they are
	// written.
	Objects []*unstructured.Unstructured
	// Prune are the objects the manager would delete (those the world
	// holds and the plan no longer wants).
	Prune []plan.Object
	// Refusal is why the manager would write nothing new (nil when it
	// writes).
	Refusal *plan.Refusal
	// Notes are the facts filled in that a repository does not hold.
	Notes []string
}

// Ref is "Kind namespace/name" (or "Kind name").
func (i Item) Ref() string {
	if i.Namespace == "" {
		return i.Kind + " " + i.Name
	}
	return i.Kind + " " + i.Namespace + "/" + i.Name
}

// UnreachableError is a registry or release host a provider's artifact
// could not be fetched from (down, unknown, hanging): not a refusal of
// the manager's, which may well reach it; nothing is built.
type UnreachableError struct {
	Item string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s: cannot fetch its artifact from here: %v", e.Item, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Build plans each of crs (Capwright's custom resources) as the manager
// would, in a world holding crs and world (the other objects: Clusters,
// Secrets, ConfigMaps, and for diff what the live cluster holds), and
// returns one item per custom resource, in the order of crs. Core
// providers are planned first: the others need their contract.
func Build(ctx context.Context, crs, world []ctrl.Object, o Options) ([]Item, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	all := make([]ctrl.Object, 0, len(crs)+len(world))
	for _, obj := range append(slices.Clone(crs), world...) {
		obj = obj.DeepCopyObject().(ctrl.Object)
		identify(obj)
		all = append(all, obj)
	}
	builder := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(restMapper(s)).WithObjects(all...)
	tenant.Index(func(obj ctrl.Object, field string, extract ctrl.IndexerFunc) {
		builder = builder.WithIndex(obj, field, extract)
	})
	store := builder.Build()
	storage, cleanup, err := scratchStorage()
	if err != nil {
		return nil, err
	}
	defer cleanup()

	layouts, err := readLayouts(o.Layouts)
	if err != nil {
		return nil, err
	}
	b := &building{ctx: ctx, store: store, o: o, storage: storage, preflights: provider.NewCorePreflights(), layouts: layouts}
	items := make([]Item, len(crs))
	order := make([]int, 0, len(crs))
	for i, cr := range crs {
		if _, core := cr.(*v1alpha1.CoreProvider); core {
			order = append(order, i)
		}
	}
	for i, cr := range crs {
		if _, core := cr.(*v1alpha1.CoreProvider); !core {
			order = append(order, i)
		}
	}
	for _, i := range order {
		// The copy with the identity the store holds too.
		items[i], err = b.item(all[i])
		if err != nil {
			return nil, err
		}
	}
	return items, nil
}

// building is one build: its store and settings.
type building struct {
	ctx        context.Context
	store      ctrl.Client
	o          Options
	storage    *fluxartifact.Storage
	preflights *provider.CorePreflights
	layouts    []layoutEntry
}

func (b *building) item(obj ctrl.Object) (Item, error) {
	kind := plan.KindOf(obj)
	it := Item{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	var err error
	switch o := obj.(type) {
	case v1alpha1.Provider:
		err = b.provider(o, &it)
	case *tenancyv1alpha1.Tenant:
		err = b.tenant(o, &it)
	case *clustersv1alpha1.CapwrightControlPlane, *clustersv1alpha1.CapwrightCluster:
		err = b.contract(obj, &it)
	default:
		return it, fmt.Errorf("%s is not a kind Capwright plans", it.Ref())
	}
	return it, err
}

func (b *building) provider(obj v1alpha1.Provider, it *Item) error {
	var kind provider.Kind
	for _, k := range provider.Kinds() {
		if k.Name == it.Kind {
			kind = k
		}
	}
	access := b.o.Access
	source := &resolve.Resolver{
		Client: b.store, Reader: b.store,
		Fetcher:             &artifact.Fetcher{MaxArtifactSize: b.o.MaxArtifactSize},
		Cache:               &resolve.ArtifactCache{},
		Resolutions:         &resolve.Resolutions{},
		Mirrors:             b.o.Mirrors,
		InsecureRegistries:  b.o.InsecureRegistries,
		CatalogOCIArtifacts: b.o.CatalogOCIArtifacts,
		Releases:            resolve.ReleaseSettings{RedirectHosts: b.o.ReleaseRedirectHosts},
		RegistryTimeout:     b.o.RegistryTimeout,
		BaseAccess:          &access,
	}
	r := &provider.Reconciler{
		Client: b.store, Reader: b.store, Kind: kind, Kinds: provider.Kinds(), Source: source,
		Artifacts:      b.storage,
		RESTMapper:     b.store.RESTMapper(),
		CorePreflights: b.preflights,
	}
	from, err := b.preload(source, obj)
	if err != nil {
		return err
	}
	if from != "" {
		it.Notes = append(it.Notes, from)
	}
	var unreached error
	source.OnUnreachable = func(_ v1alpha1.Provider, err error) { unreached = err }
	f := r.Facts(b.ctx, obj)
	if unreached != nil && f.Refusal != nil {
		return &UnreachableError{Item: it.Ref(), Err: unreached}
	}
	for i, d := range f.Dependencies {
		if !d.Ready {
			f.Dependencies[i].Ready = true
			it.Notes = append(it.Notes, fmt.Sprintf("spec.dependsOn %s %s/%s taken as Ready (Flux's progress is the cluster's)", d.Kind, d.Namespace, d.Name))
		}
	}
	d, err := providerplan.Plan(f)
	if refusal, ok := plan.AsRefusal(err); ok {
		it.Refusal = refusal
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", it.Ref(), err)
	}
	if d.Suspend {
		it.Notes = append(it.Notes, "spec.suspend is set: the manager suspends the existing Flux objects and writes nothing else")
		return nil
	}
	if obj.ProviderType() == v1alpha1.CoreProviderType {
		b.preflights.Pass(obj, d.Status.Contract)
	}
	return b.writes(d.Sync, it)
}

func (b *building) tenant(t *tenancyv1alpha1.Tenant, it *Item) error {
	r := &tenant.Reconciler{Client: b.store, Reader: b.store, Clusters: b.store, WatchClusters: true,
		ForbiddenNamespaces: b.o.Forbidden, Artifacts: b.storage, Sharding: b.o.Sharding,
		Mirrors: b.o.Mirrors, InsecureRegistries: b.o.InsecureRegistries}
	f, err := r.Facts(b.ctx, t)
	if err != nil {
		return fmt.Errorf("%s: %w", it.Ref(), err)
	}
	filled := map[types.NamespacedName]bool{}
	if b.o.Provisioned {
		for i, c := range f.Clusters {
			secret := types.NamespacedName{Namespace: c.Namespace, Name: clusterapi.KubeconfigSecretName(c.Name)}
			if !c.ControlPlaneInitialized || !f.Kubeconfigs.Has(secret) {
				f.Clusters[i].ControlPlaneInitialized = true
				f.Kubeconfigs.Insert(secret)
				filled[c.Ref()] = true
			}
			if s, ok := f.Stacks[c.Ref()]; ok && !s.StackExists {
				// Flux creates the target namespace first, and the
				// stack is written once it has.
				s.StackExists = true
				f.Stacks[c.Ref()] = s
			}
		}
	}
	d, err := tenantplan.Plan(f)
	if refusal, ok := plan.AsRefusal(err); ok {
		it.Refusal = refusal
	} else if err != nil {
		return fmt.Errorf("%s: %w", it.Ref(), err)
	}
	if d.Selection != nil {
		for _, c := range d.Selection.Selected() {
			if ref := c.Cluster; filled[ref] {
				it.Notes = append(it.Notes, fmt.Sprintf("Cluster %s taken as provisioned (control plane initialized, Secret %s present)",
					ref, clusterapi.KubeconfigSecretName(ref.Name)))
			}
		}
	}
	if d.Rollout != nil {
		it.Notes = append(it.Notes, fmt.Sprintf("spec.rollout (phase %s): each cluster's objects follow the revision Flux resolved and the rollout's progress, which only the cluster holds; capwright diff shows the next step there", d.Rollout.Status.Phase))
	}
	it.Prune = d.Prune
	return b.writes(d.Desired, it)
}

func (b *building) contract(obj ctrl.Object, it *Item) error {
	s := &contract.Shared{Client: b.store, Reader: b.store, Mirrors: b.o.Mirrors, InsecureRegistries: b.o.InsecureRegistries}
	if len(obj.GetOwnerReferences()) == 0 {
		if owner := b.ownerCluster(obj, it.Kind); owner != nil {
			obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
			it.Notes = append(it.Notes, fmt.Sprintf("Cluster %s/%s, whose spec refers to it, taken as its owner (Cluster API sets itself as the owner)", obj.GetNamespace(), owner.Name))
		}
	}
	f, err := s.Facts(b.ctx, obj)
	if err != nil {
		return fmt.Errorf("%s: %w", it.Ref(), err)
	}
	d, err := contractplan.Plan(f)
	if refusal, ok := plan.AsRefusal(err); ok {
		it.Refusal = refusal
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", it.Ref(), err)
	}
	if d.Pause != nil {
		it.Notes = append(it.Notes, "paused: "+d.Pause.Message+"; the manager writes nothing")
		return nil
	}
	return b.writes(d.Desired, it)
}

// ownerCluster is the owner reference of the Cluster of the store whose
// spec.controlPlaneRef (for a control plane) or spec.infrastructureRef
// names obj, nil when none does.
func (b *building) ownerCluster(obj ctrl.Object, kind string) *metav1.OwnerReference {
	var clusters clusterapi.ClusterList
	if err := b.store.List(b.ctx, &clusters, ctrl.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		ref := c.Spec.InfrastructureRef
		if kind == clustersv1alpha1.ControlPlaneKind {
			ref = c.Spec.ControlPlaneRef
		}
		if ref.Kind == kind && ref.Name == obj.GetName() && ref.APIGroup == clustersv1alpha1.GroupVersion.Group {
			return &metav1.OwnerReference{APIVersion: clusterapi.ClusterAPIVersion, Kind: clusterapi.ClusterGVK.Kind, Name: c.Name, UID: c.UID}
		}
	}
	return nil
}

// writes puts d's writes, as applied, into the item.
func (b *building) writes(d plan.Desired, it *Item) error {
	for _, w := range d.Writes {
		obj := w.Object
		if obj.GetObjectKind().GroupVersionKind().Kind == "" {
			gvks, _, err := b.store.Scheme().ObjectKinds(obj)
			if err != nil || len(gvks) == 0 {
				return fmt.Errorf("%s: the kind of %T: %v", it.Ref(), obj, err)
			}
			obj = obj.DeepCopyObject().(plan.Object)
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		applied, err := plan.AsApplied(obj, plan.HashAnnotation)
		if err != nil {
			return fmt.Errorf("%s: %w", it.Ref(), err)
		}
		it.Objects = append(it.Objects, applied)
	}
	return nil
}

// identify gives an object of the repository, which has none, the UID
// and generation the API server would: stable, so that two builds of the
// same files agree. A live object (diff) keeps its own.
func identify(obj ctrl.Object) {
	if obj.GetUID() == "" {
		gvk := obj.GetObjectKind().GroupVersionKind()
		sum := sha256.Sum256([]byte(gvk.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()))
		obj.SetUID(types.UID("00000000-0000-4000-8000-" + hex.EncodeToString(sum[:6])))
	}
	if obj.GetGeneration() == 0 {
		obj.SetGeneration(1)
	}
	if created := obj.GetCreationTimestamp(); created.IsZero() {
		obj.SetCreationTimestamp(metav1.Unix(0, 0))
	}
}

// scratchStorage is artifact storage in a temporary directory: the
// manager the build stands for serves artifacts (the release files, a
// kustomize stack's target namespace); nothing is stored there by a
// build.
func scratchStorage() (*fluxartifact.Storage, func(), error) {
	dir, err := os.MkdirTemp("", "capwright-build-")
	if err != nil {
		return nil, nil, err
	}
	s, err := fluxartifact.New(dir, "http://capwright-artifacts.invalid")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() { _ = os.RemoveAll(dir) }, nil
}
