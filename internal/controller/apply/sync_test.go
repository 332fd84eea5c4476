package apply

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/plan"
)

const ownerLabel = "test.capwright.io/owner"

func syncScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{sourcev1.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func repo(ns, name string, owned bool) *sourcev1.OCIRepository {
	r := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example/stack"},
	}
	if owned {
		r.Labels = map[string]string{ownerLabel: "me"}
	}
	return r
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ownerLabel: "me"}},
		Spec: kustomizev1.KustomizationSpec{Path: "./", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "stack"}},
	}
}

func ownedByMe(existing *unstructured.Unstructured, _ plan.Object) error {
	if existing.GetLabels()[ownerLabel] != "me" {
		return errors.New(existing.GetKind() + " " + plan.ObjectRef(existing) + " is someone else's")
	}
	return nil
}

// TestSyncSkipsWhatNeedsAConflict: someone else's source in namespace a
// is not written, nor is the Kustomization that needs it; namespace b
// goes on. Requests reach only the writes that ask for them, a pruned
// object goes by UID, the observed objects come back after the writes,
// and the nudges are asked given them.
func TestSyncSkipsWhatNeedsAConflict(t *testing.T) {
	theirs := repo("a", "stack", false)
	stale := kustomization("b", "old")
	stale.UID = types.UID("stale-uid")
	applied := map[string]int{}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(syncScheme(t)).WithObjects(theirs, stale).Build(), interceptor.Funcs{
		Apply: func(ctx context.Context, c ctrl.WithWatch, obj runtime.ApplyConfiguration, opts ...ctrl.ApplyOption) error {
			data, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(data); err != nil {
				return err
			}
			applied[u.GetName()]++
			return c.Apply(ctx, obj, opts...)
		},
	})
	nudged := ""
	res, err := Syncer{Client: c, Reader: c}.Sync(context.Background(), plan.Desired{
		Owned: ownedByMe,
		Writes: []plan.Write{
			{Object: repo("a", "stack", true), Group: "ns/a"},
			{Object: kustomization("a", "c1"), Group: "cluster/a/c1", Needs: []string{"ns/a"}, Request: true},
			{Object: repo("b", "stack", true), Group: "ns/b"},
			{Object: kustomization("b", "c2"), Group: "cluster/b/c2", Needs: []string{"ns/b"}, Request: true},
		},
		Request: "token-1",
		Prune:   []plan.Object{stale},
		Observe: []plan.Object{kustomization("b", "c2"), kustomization("a", "c1")},
		Nudges: func(o plan.Observed) []plan.Nudge {
			if ks := o.Get(kustomizev1.KustomizationKind, "b", "c2"); ks != nil {
				nudged = ks.GetName()
				return []plan.Nudge{{Object: ks, Token: "nudge-1"}}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || res.Conflicts["ns/a"] == "" {
		t.Fatalf("conflicts = %v, want only ns/a", res.Conflicts)
	}
	if applied["c1"] != 0 || applied["c2"] != 1 || applied["stack"] != 1 {
		t.Errorf("applies = %v, want c2 and namespace b's stack once, nothing that needs namespace a", applied)
	}
	var got kustomizev1.Kustomization
	if err := c.Get(context.Background(), ctrl.ObjectKey{Namespace: "b", Name: "c2"}, &got); err != nil {
		t.Fatal(err)
	}
	// The nudge comes after the request: its token is the one left.
	if v := got.Annotations[meta.ReconcileRequestAnnotation]; v != "nudge-1" || nudged != "c2" {
		t.Errorf("c2's request annotation = %q (nudged %q), want the nudge after the request", v, nudged)
	}
	if got.Annotations[plan.HashAnnotation] == "" {
		t.Errorf("c2 has no %s annotation", plan.HashAnnotation)
	}
	if res.Observed.Get(kustomizev1.KustomizationKind, "a", "c1") != nil || res.Observed.Get(kustomizev1.KustomizationKind, "b", "c2") == nil {
		t.Errorf("observed = %v, want c2 only", res.Observed)
	}
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(stale), &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pruned Kustomization is still there: %v", err)
	}
	var their sourcev1.OCIRepository
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(theirs), &their); err != nil || their.Labels[ownerLabel] != "" {
		t.Errorf("someone else's source was changed: %v %v", their.Labels, err)
	}

	// Again with nothing changed: nothing is applied.
	applied = map[string]int{}
	if _, err := (Syncer{Client: c, Reader: c}).Sync(context.Background(), plan.Desired{Owned: ownedByMe, Writes: []plan.Write{
		{Object: repo("b", "stack", true)}, {Object: kustomization("b", "c2")},
	}}); err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Errorf("a sync with nothing changed applied %v", applied)
	}
}

// TestSyncStoresAnExternalArtifact: the content is stored once the
// object is applied, and its status points Flux at it, Ready.
func TestSyncStoresAnExternalArtifact(t *testing.T) {
	storage, err := fluxartifact.New(t.TempDir(), "http://artifacts.example")
	if err != nil {
		t.Fatal(err)
	}
	ea := &sourcev1.ExternalArtifact{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra"},
	}
	c := fake.NewClientBuilder().WithScheme(syncScheme(t)).WithStatusSubresource(&sourcev1.ExternalArtifact{}).Build()
	data := []byte("not really a tarball, but bytes to serve")
	if _, err := (Syncer{Client: c, Reader: c, Artifacts: storage}).Sync(context.Background(), plan.Desired{Writes: []plan.Write{
		{Object: ea, Artifact: &plan.Artifact{Data: data, Of: "ConfigMap ns/extra"}},
	}}); err != nil {
		t.Fatal(err)
	}
	var got sourcev1.ExternalArtifact
	if err := c.Get(context.Background(), ctrl.ObjectKeyFromObject(ea), &got); err != nil {
		t.Fatal(err)
	}
	a := got.Status.Artifact
	if a == nil || a.Digest != fluxartifact.Digest(data) {
		t.Fatalf("status.artifact = %+v, want the digest of the data", a)
	}
	if !storage.Exists(*a) {
		t.Errorf("artifact %s is not stored", a.Path)
	}
	if _, err := os.Stat(storage.Root()); err != nil {
		t.Fatal(err)
	}
	ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Message != "stored revision "+a.Revision+" of ConfigMap ns/extra" {
		t.Errorf("Ready = %+v", ready)
	}
	// Without storage, an artifact is refused with the flag that fixes it.
	_, err = (Syncer{Client: c, Reader: c}).Sync(context.Background(), plan.Desired{Writes: []plan.Write{{Object: ea, Artifact: &plan.Artifact{Data: data}}}})
	if err == nil || !strings.Contains(err.Error(), "--artifact-storage-path") {
		t.Errorf("without storage: %v", err)
	}
}

// TestSyncAppliesABatchSideBySide: writes of one Batch are applied at
// the same time (neither waits for the other), and a conflict before the
// batch still skips what needs it.
func TestSyncAppliesABatchSideBySide(t *testing.T) {
	theirs := repo("x", "stack", false)
	inFlight, most := 0, 0
	var mu sync.Mutex
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(syncScheme(t)).WithObjects(theirs).Build(), interceptor.Funcs{
		Apply: func(ctx context.Context, c ctrl.WithWatch, obj runtime.ApplyConfiguration, opts ...ctrl.ApplyOption) error {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			inFlight--
			mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
	})
	res, err := Syncer{Client: c, Reader: c}.Sync(context.Background(), plan.Desired{Owned: ownedByMe, Writes: []plan.Write{
		{Object: repo("x", "stack", true), Group: "x"},
		{Object: kustomization("x", "a"), Batch: "pair", Needs: []string{"x"}},
		{Object: kustomization("b", "a"), Batch: "pair"},
		{Object: kustomization("b", "b"), Batch: "pair"},
		{Object: kustomization("b", "after")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if most != 2 {
		t.Errorf("at most %d applies at once, want the batch's two side by side", most)
	}
	if res.Conflicts["x"] == "" {
		t.Errorf("conflicts %v", res.Conflicts)
	}
	if err := c.Get(context.Background(), ctrl.ObjectKey{Namespace: "x", Name: "a"}, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Errorf("a write that needs a conflicting group was applied: %v", err)
	}
	for _, name := range []string{"a", "b", "after"} {
		if err := c.Get(context.Background(), ctrl.ObjectKey{Namespace: "b", Name: name}, &kustomizev1.Kustomization{}); err != nil {
			t.Errorf("b/%s: %v", name, err)
		}
	}
}
