package framework

import (
	"context"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient returns a client that knows the Kubernetes and Flux kinds.
func NewClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// OCIRepository points at a pushed artifact by tag on the plane's plain
// HTTP registry.
func OCIRepository(namespace, name string, a PushedArtifact) *sourcev1.OCIRepository {
	return &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: sourcev1.OCIRepositorySpec{
			URL:       a.URL,
			Reference: &sourcev1.OCIRepositoryRef{Tag: a.Tag},
			Insecure:  true,
			Interval:  metav1.Duration{Duration: time.Minute},
		},
	}
}

// Kustomization applies the root of an OCIRepository's artifact with prune
// and health checks of everything applied.
func Kustomization(namespace, name, source string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: source},
			Path:      "./",
			Prune:     true,
			Wait:      true,
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Timeout:   &metav1.Duration{Duration: 3 * time.Minute},
		},
	}
}

// Conditioned is an object with conditions: a Flux object or a provider.
type Conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// WaitReady waits until obj is Ready for its current generation. On timeout
// the error carries the last Ready condition.
func WaitReady(ctx context.Context, c client.Client, obj Conditioned, timeout time.Duration) error {
	key := client.ObjectKeyFromObject(obj)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			last = err.Error()
			return false, nil
		}
		ready := apimeta.FindStatusCondition(obj.GetConditions(), meta.ReadyCondition)
		if ready == nil {
			last = "no Ready condition yet"
			return false, nil
		}
		last = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
		return ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obj.GetGeneration(), nil
	})
	if err != nil {
		return fmt.Errorf("%T %s not Ready after %s (%s): %w", obj, key, timeout, last, err)
	}
	return nil
}

// Delivery is an artifact pushed to the plane's registry and applied by Flux.
type Delivery struct {
	Artifact      PushedArtifact
	Repository    *sourcev1.OCIRepository
	Kustomization *kustomizev1.Kustomization
}

// Deliver pushes files as an artifact to registryHost/<name>/app:v1, creates
// an OCIRepository and a Kustomization named name in namespace, and waits
// until both are Ready.
func Deliver(ctx context.Context, c client.Client, registryHost, namespace, name string, files map[string][]byte) (*Delivery, error) {
	pushed, err := PushFiles(ctx, registryHost, name+"/app", "v1", files, nil)
	if err != nil {
		return nil, err
	}
	d := &Delivery{
		Artifact:      pushed,
		Repository:    OCIRepository(namespace, name, pushed),
		Kustomization: Kustomization(namespace, name, name),
	}
	for _, obj := range []client.Object{d.Repository, d.Kustomization} {
		if err := c.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	if err := WaitReady(ctx, c, d.Repository, time.Minute); err != nil {
		return nil, err
	}
	if err := WaitApplied(ctx, c, d.Kustomization, pushed.Tag+"@"+pushed.Digest, 2*time.Minute); err != nil {
		return nil, err
	}
	return d, nil
}

// WaitApplied waits until ks is Ready for its generation with revision
// applied: kustomize-controller may report Ready a moment before it records
// lastAppliedRevision.
func WaitApplied(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, revision string, timeout time.Duration) error {
	if err := WaitReady(ctx, c, ks, timeout); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			return false, nil
		}
		return ks.Status.LastAppliedRevision == revision, nil
	})
	if err != nil {
		return fmt.Errorf("Kustomization %s/%s never recorded revision %s as applied (has %q): %w", ks.Namespace, ks.Name, revision, ks.Status.LastAppliedRevision, err)
	}
	return nil
}

// RequestReconcile asks a Flux object or a Capwright CR to reconcile now,
// as `flux reconcile` does: by setting reconcile.fluxcd.io/requestedAt.
func RequestReconcile(ctx context.Context, c client.Client, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["reconcile.fluxcd.io/requestedAt"] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
	return c.Patch(ctx, obj, patch)
}

// Poke makes the controller of a Capwright CR look at it again without
// asking for anything: it changes an annotation nobody reads, as a resync
// would. (A reconcile.fluxcd.io/requestedAt request is passed on to Flux;
// this is not.)
func Poke(ctx context.Context, c client.Client, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["e2e.capwright.io/poked-at"] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
	return c.Patch(ctx, obj, patch)
}
