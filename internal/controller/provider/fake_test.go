package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/releasecopy"
	"github.com/capwright/capwright/internal/resolve"
)

// The helpers of the fake-client tests of the provider reconciler: a fake
// API server that records every write, small but valid provider artifacts
// in an in-process registry, and providers to reconcile.

// created is the creation time of the test providers; later ones are
// created after it.
var created = metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// write is one write the reconciler sent to the API server.
type write struct {
	Verb, Kind, Namespace, Name string
	// UID is the UID precondition of a delete ("" without one).
	UID types.UID
}

func (w write) String() string {
	s := fmt.Sprintf("%s %s %s/%s", w.Verb, w.Kind, w.Namespace, w.Name)
	if w.UID != "" {
		s += " (uid " + string(w.UID) + ")"
	}
	return s
}

// fakeEnv is a fake API server with the reconciler of one provider kind.
type fakeEnv struct {
	t      *testing.T
	client ctrl.Client
	r      *Reconciler
	events *record.FakeRecorder

	mu     sync.Mutex
	writes []write
	// secretReads are the Secrets read, as namespace/name ("*" for a
	// list).
	secretReads []string
	// uncachedReads counts the reads of objects read as unstructured
	// (the clusterctl inventory, the installer's ServiceAccount and
	// ClusterRoleBinding), by kind ("…List" for a list), and of objects
	// read as metadata ("metadata <kind>").
	uncachedReads map[string]int
}

// newFakeEnv starts a fake API server holding objs, and a reconciler of
// kind on it that records every write.
func newFakeEnv(t *testing.T, kind Kind, objs ...ctrl.Object) *fakeEnv {
	t.Helper()
	env := &fakeEnv{t: t, events: record.NewFakeRecorder(100), uncachedReads: map[string]int{}}
	scheme := testScheme(t)
	kindOf := func(o runtime.Object) string {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return fmt.Sprintf("%T", o)
		}
		return gvk.Kind
	}
	statusKinds := []ctrl.Object{}
	for _, k := range Kinds() {
		statusKinds = append(statusKinds, k.NewObject().(ctrl.Object))
	}
	statusKinds = append(statusKinds, &sourcev1.OCIRepository{}, &kustomizev1.Kustomization{}, &helmv2.HelmRelease{}, &sourcev1.ExternalArtifact{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(statusKinds...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, o ctrl.Object, opts ...ctrl.GetOption) error {
				env.mu.Lock()
				switch o := o.(type) {
				case *corev1.Secret:
					env.secretReads = append(env.secretReads, key.String())
				case *unstructured.Unstructured:
					env.uncachedReads[o.GetKind()]++
				case *metav1.PartialObjectMetadata:
					env.uncachedReads["metadata "+o.GetObjectKind().GroupVersionKind().Kind]++
				case *corev1.ServiceAccount:
					env.uncachedReads["ServiceAccount"]++
				case *rbacv1.ClusterRoleBinding:
					env.uncachedReads["ClusterRoleBinding"]++
				}
				env.mu.Unlock()
				return c.Get(ctx, key, o, opts...)
			},
			// The fake client cannot list objects it holds as unstructured
			// as metadata, as the reconciler lists CAPI objects: list them
			// whole and keep their metadata.
			List: func(ctx context.Context, c ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
				if _, ok := list.(*corev1.SecretList); ok {
					env.mu.Lock()
					env.secretReads = append(env.secretReads, "*")
					env.mu.Unlock()
				}
				if u, ok := list.(*unstructured.UnstructuredList); ok {
					env.mu.Lock()
					env.uncachedReads[u.GetKind()]++
					env.mu.Unlock()
				}
				partial, ok := list.(*metav1.PartialObjectMetadataList)
				if !ok {
					return c.List(ctx, list, opts...)
				}
				whole := &unstructured.UnstructuredList{}
				whole.SetGroupVersionKind(partial.GroupVersionKind())
				if err := c.List(ctx, whole, opts...); err != nil {
					return err
				}
				partial.Items = nil
				for _, u := range whole.Items {
					var m metav1.ObjectMeta
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object["metadata"].(map[string]any), &m); err != nil {
						return err
					}
					partial.Items = append(partial.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}, ObjectMeta: m})
				}
				return nil
			},
			Create: func(ctx context.Context, c ctrl.WithWatch, o ctrl.Object, opts ...ctrl.CreateOption) error {
				env.record(write{Verb: "create", Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()})
				return c.Create(ctx, o, opts...)
			},
			Update: func(ctx context.Context, c ctrl.WithWatch, o ctrl.Object, opts ...ctrl.UpdateOption) error {
				env.record(write{Verb: "update", Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()})
				return c.Update(ctx, o, opts...)
			},
			Patch: func(ctx context.Context, c ctrl.WithWatch, o ctrl.Object, p ctrl.Patch, opts ...ctrl.PatchOption) error {
				env.record(write{Verb: "patch", Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()})
				return c.Patch(ctx, o, p, opts...)
			},
			Apply: func(ctx context.Context, c ctrl.WithWatch, o runtime.ApplyConfiguration, opts ...ctrl.ApplyOption) error {
				var m struct {
					Kind     string `json:"kind"`
					Metadata struct{ Namespace, Name string }
				}
				data, _ := json.Marshal(o)
				_ = json.Unmarshal(data, &m)
				env.record(write{Verb: "apply", Kind: m.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name})
				return c.Apply(ctx, o, opts...)
			},
			Delete: func(ctx context.Context, c ctrl.WithWatch, o ctrl.Object, opts ...ctrl.DeleteOption) error {
				w := write{Verb: "delete", Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()}
				var do ctrl.DeleteOptions
				do.ApplyOptions(opts)
				if do.Preconditions != nil && do.Preconditions.UID != nil {
					w.UID = *do.Preconditions.UID
				}
				env.record(w)
				// The fake client ignores a UID precondition: check it as
				// the API server does.
				if w.UID != "" {
					current := o.DeepCopyObject().(ctrl.Object)
					if err := c.Get(ctx, ctrl.ObjectKeyFromObject(o), current); err == nil && current.GetUID() != w.UID {
						return fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", w.UID, current.GetUID())
					}
				}
				return c.Delete(ctx, o, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c ctrl.Client, sub string, o ctrl.Object, opts ...ctrl.SubResourceUpdateOption) error {
				env.record(write{Verb: "update/" + sub, Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()})
				return c.SubResource(sub).Update(ctx, o, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c ctrl.Client, sub string, o ctrl.Object, p ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
				env.record(write{Verb: "patch/" + sub, Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()})
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		}).Build()
	env.client = c
	env.r = &Reconciler{Client: c, Reader: c, Kind: kind, Kinds: Kinds(), Source: newSource(c, &artifact.Fetcher{}), Recorder: env.events}
	return env
}

// newSource is a resolution stage over c with an empty memory, as a
// manager starts with.
func newSource(c ctrl.Client, f *artifact.Fetcher) *resolve.Resolver {
	return &resolve.Resolver{Client: c, Reader: c, Fetcher: f, Cache: &resolve.ArtifactCache{}, Copies: releasecopy.Store{Client: c, Reader: c}}
}

// reads is how often objects of kind were read as unstructured, or, for
// the installer's ServiceAccount and ClusterRoleBinding (read uncached),
// at all.
func (e *fakeEnv) reads(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.uncachedReads[kind]
}

func (e *fakeEnv) record(w write) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writes = append(e.writes, w)
}

// fluxWrites are the writes to anything but a provider: the Flux objects,
// the clusterctl inventory.
func (e *fakeEnv) fluxWrites() []write {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []write
	for _, w := range e.writes {
		if !isProviderKind(w.Kind) {
			out = append(out, w)
		}
	}
	return out
}

func isProviderKind(kind string) bool {
	for _, k := range Kinds() {
		if k.Name == kind {
			return true
		}
	}
	return false
}

// reconcile runs the reconciler on p once.
func (e *fakeEnv) reconcile(p v1alpha1.Provider) (reconcile.Result, error) {
	e.t.Helper()
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}})
}

// get reads p back; nil when it is gone.
func (e *fakeEnv) get(p v1alpha1.Provider) v1alpha1.Provider {
	e.t.Helper()
	got := e.r.Kind.NewObject()
	if err := e.client.Get(context.Background(), ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: p.GetName()}, got.(ctrl.Object)); err != nil {
		if ctrl.IgnoreNotFound(err) == nil {
			return nil
		}
		e.t.Fatal(err)
	}
	return got
}

// fluxObjects names the Flux objects in the fake API server.
func (e *fakeEnv) fluxObjects() []string {
	e.t.Helper()
	var out []string
	for kind, list := range map[string]ctrl.ObjectList{
		"OCIRepository": &sourcev1.OCIRepositoryList{}, "Kustomization": &kustomizev1.KustomizationList{},
		"HelmRelease": &helmv2.HelmReleaseList{}, "ExternalArtifact": &sourcev1.ExternalArtifactList{},
	} {
		if err := e.client.List(context.Background(), list); err != nil {
			e.t.Fatal(err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range items {
			m, _ := apimeta.Accessor(o)
			out = append(out, kind+" "+m.GetNamespace()+"/"+m.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// recordedEvents drains the events recorded so far.
func (e *fakeEnv) recordedEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func condition(p v1alpha1.Provider, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(p.GetConditions(), t)
}

func kindFor(p v1alpha1.Provider) Kind {
	for _, k := range Kinds() {
		if reflect.TypeOf(k.NewObject()) == reflect.TypeOf(p) {
			return k
		}
	}
	panic(fmt.Sprintf("no kind for %T", p))
}

// pushed is a provider artifact pushed to the test registry.
type pushed struct {
	URL    string // oci://host/repository, what spec.source.oci.url takes
	Digest string
}

// pushRelease publishes version of the provider to reg in the
// provider-artifact layout with the given metadata.yaml and components,
// annotated as annotatedName's (the provider's own name normally).
func pushRelease(t *testing.T, reg *registrytest.Registry, providerType, name, annotatedName, version string, metadata []byte, components string) pushed {
	t.Helper()
	repo := "capwright/manifests/" + providerType + "-" + name
	files := map[string][]byte{artifact.MetadataFile: metadata, clusterctl.ComponentsFile(providerType): []byte(components)}
	d, err := artifact.Push(context.Background(), reg.Ref(repo, version), files, artifact.ProviderAnnotations(providerType, annotatedName, version, ""), reg.Access())
	if err != nil {
		t.Fatal(err)
	}
	return pushed{URL: "oci://" + reg.Host + "/" + repo, Digest: d}
}

// pushCore and pushDocker publish the test providers' releases with the
// given contract.
func pushCore(t *testing.T, reg *registrytest.Registry, version, contract string) pushed {
	t.Helper()
	return pushRelease(t, reg, v1alpha1.CoreProviderType, "cluster-api", "cluster-api", version, clusterctltest.Metadata(version, contract), clusterctltest.CoreComponents)
}

func pushDocker(t *testing.T, reg *registrytest.Registry, version, contract string) pushed {
	t.Helper()
	return pushRelease(t, reg, v1alpha1.InfrastructureProviderType, "docker", "docker", version, clusterctltest.Metadata(version, contract), clusterctltest.DockerComponents)
}

func ociSource(url string) *v1alpha1.ProviderSource {
	return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}
}

// coreProvider is CoreProvider capi-system/cluster-api at version from url,
// with Capwright's finalizer (the shell's first step is done).
func coreProvider(url, version string) *v1alpha1.CoreProvider {
	return &v1alpha1.CoreProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "uid-core", Generation: 1,
			CreationTimestamp: created, Finalizers: []string{v1alpha1.Finalizer}},
		Spec: v1alpha1.ProviderSpec{Version: version, Source: ociSource(url)},
	}
}

// installedCore is the core provider as the controller leaves it once its
// preflight passed: its contract known for its generation.
func installedCore(contract string) *v1alpha1.CoreProvider {
	core := coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2")
	core.Status = v1alpha1.ProviderStatus{Contract: contract, InstalledVersion: "v1.14.2", Conditions: []metav1.Condition{
		{Type: v1alpha1.CompatibleCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.CompatibleReason, ObservedGeneration: 1, LastTransitionTime: created},
		{Type: v1alpha1.InstalledCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.InstalledReason, ObservedGeneration: 1, LastTransitionTime: created},
	}}
	return core
}

// dockerProvider is InfrastructureProvider capd-system/docker at version
// from url, with Capwright's finalizer.
func dockerProvider(url, version string) *v1alpha1.InfrastructureProvider {
	return &v1alpha1.InfrastructureProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capd-system", Name: "docker", UID: "uid-docker", Generation: 1,
			CreationTimestamp: metav1.NewTime(created.Add(time.Minute)), Finalizers: []string{v1alpha1.Finalizer}},
		Spec: v1alpha1.ProviderSpec{Version: version, Source: ociSource(url)},
	}
}

// stalled and reconciling are the shell's kstatus conditions.
func stalled(p v1alpha1.Provider) *metav1.Condition {
	return condition(p, shell.StalledCondition)
}

func reconciling(p v1alpha1.Provider) *metav1.Condition {
	return condition(p, shell.ReconcilingCondition)
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// installCore pushes the test core provider v1.14.2 (contract v1beta2) to
// a test registry and reconciles its CoreProvider once on a fake API
// server: the Flux objects are written, Flux has reported nothing yet.
func installCore(t *testing.T) (*fakeEnv, *v1alpha1.CoreProvider, pushed, *registrytest.Registry) {
	t.Helper()
	reg := registrytest.New(t, registrytest.Options{})
	art := pushCore(t, reg, "v1.14.2", "v1beta2")
	core := coreProvider(art.URL, "v1.14.2")
	env := newFakeEnv(t, kindFor(core), core)
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	return env, core, art, reg
}
