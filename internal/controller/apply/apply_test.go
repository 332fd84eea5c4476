package apply

import (
	"reflect"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/plan"
)

func TestSubset(t *testing.T) {
	have := map[string]any{
		"spec": map[string]any{
			"interval": "10m0s", "prune": true, "provider": "generic", // provider: a server default
			"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}},
		},
		"status": map[string]any{"observedGeneration": int64(3)},
	}
	tests := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"fields the server defaulted are ignored", map[string]any{"spec": map[string]any{"interval": "10m0s", "prune": true}}, true},
		{"a changed field is seen", map[string]any{"spec": map[string]any{"interval": "5m0s"}}, false},
		{"a missing field is seen", map[string]any{"spec": map[string]any{"suspend": true}}, false},
		{"lists compare whole", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}}}}, false},
		{"equal lists", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}}}}, true},
		{"a false the server leaves out is the same", map[string]any{"spec": map[string]any{"suspend": false}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subset(tt.want, have); got != tt.ok {
				t.Fatalf("Subset = %v, want %v", got, tt.ok)
			}
		})
	}
}

// TestDesiredClaimsSuspend checks that a Flux object is applied with
// spec.suspend: false spelled out, so Capwright owns the field and takes
// back a suspension someone else made, and that other kinds are left as
// they are.
func TestDesiredClaimsSuspend(t *testing.T) {
	ks := &kustomizev1.Kustomization{TypeMeta: metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api"}}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}}
	for _, tt := range []struct {
		obj  ctrl.Object
		want any
	}{{ks, false}, {cm, nil}} {
		want, err := plan.AsApplied(tt.obj, "capwright.io/hash")
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := want.Object["spec"].(map[string]any)
		if got := spec["suspend"]; got != tt.want {
			t.Errorf("%s: spec.suspend = %v, want %v", want.GetKind(), got, tt.want)
		}
	}
	suspended := map[string]any{"spec": map[string]any{"suspend": true}}
	want, err := plan.AsApplied(ks, "capwright.io/hash")
	if err != nil {
		t.Fatal(err)
	}
	if Subset(want.Object["spec"], suspended["spec"]) {
		t.Error("a Kustomization someone suspended counts as unchanged")
	}
}

// TestDesiredClaimsFinalizer checks that the Flux objects a controller
// reconciles are applied with its finalizer, so it need not add it (and
// wait out a requeue) before its first reconcile, and that other kinds,
// ExternalArtifacts included (no Flux controller finalizes them), get
// none.
func TestDesiredClaimsFinalizer(t *testing.T) {
	typed := func(apiVersion, kind string) ctrl.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("capi-system")
		u.SetName("core-cluster-api")
		return u
	}
	for _, tt := range []struct {
		obj  ctrl.Object
		want []string
	}{
		{typed("source.toolkit.fluxcd.io/v1", "OCIRepository"), []string{"finalizers.fluxcd.io"}},
		{typed("kustomize.toolkit.fluxcd.io/v1", "Kustomization"), []string{"finalizers.fluxcd.io"}},
		{typed("helm.toolkit.fluxcd.io/v2", "HelmRelease"), []string{"finalizers.fluxcd.io"}},
		{typed("source.toolkit.fluxcd.io/v1", "ExternalArtifact"), nil},
		{typed("v1", "ConfigMap"), nil},
	} {
		want, err := plan.AsApplied(tt.obj, "capwright.io/hash")
		if err != nil {
			t.Fatal(err)
		}
		if got := want.GetFinalizers(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: finalizers = %v, want %v", want.GetKind(), got, tt.want)
		}
	}
}

// TestUnchangedFinalizers: a Flux object that still has Flux's finalizer
// is unchanged whatever other finalizers it gained; one that lost it is
// changed.
func TestUnchangedFinalizers(t *testing.T) {
	ks := &kustomizev1.Kustomization{TypeMeta: metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api"}}
	want, err := plan.AsApplied(ks, "capwright.io/hash")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		finalizers []string
		unchanged  bool
	}{
		{[]string{"finalizers.fluxcd.io"}, true},
		{[]string{"example.com/backup", "finalizers.fluxcd.io"}, true},
		{[]string{"example.com/backup"}, false},
		{nil, false},
	} {
		existing := want.DeepCopy()
		existing.SetFinalizers(tt.finalizers)
		if got := Unchanged(want, existing, "capwright.io/hash"); got != tt.unchanged {
			t.Errorf("finalizers %v: Unchanged = %v, want %v", tt.finalizers, got, tt.unchanged)
		}
	}
}
