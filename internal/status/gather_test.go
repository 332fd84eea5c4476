package status

import (
	"context"
	"errors"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/scheme"
)

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

// TestGatherReadsTheInventory: a provider's Kustomization lists what Flux
// applied, each with its health read; an object Flux applied that is gone
// is not Ready, and so neither is the report.
func TestGatherReadsTheInventory(t *testing.T) {
	labels := map[string]string{v1alpha1.ProviderKindLabel: "CoreProvider", v1alpha1.ProviderNameLabel: "cluster-api"}
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Installed", ObservedGeneration: 1}}
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", Generation: 1}}
	p.Status.Conditions = ready
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: render.ObjectName("core", "cluster-api"), Labels: labels, Generation: 1}}
	ks.Status.Conditions = ready
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: "capi-system_gone__ConfigMap", Version: "v1"}}}
	k, _ := Lookup("corep")
	r, err := (&Gatherer{Client: newClient(t, interceptor.Funcs{}, p, ks)}).Gather(context.Background(), Selection{Kind: &k, Name: "cluster-api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 1 || len(r.Objects[0].Children) != 1 || len(r.Objects[0].Children[0].Children) != 1 {
		t.Fatalf("tree %+v", r.Objects)
	}
	applied := r.Objects[0].Children[0].Children[0]
	if applied.Ref() != "ConfigMap/capi-system/gone" || applied.Ready != metav1.ConditionFalse || applied.Reason != "NotFound" || r.Ready {
		t.Errorf("applied %+v, report ready %v; want the gone ConfigMap not Ready, and the report with it", applied, r.Ready)
	}
	if got := r.NotReady(); len(got) != 1 || got[0] != applied {
		t.Errorf("NotReady() = %v", got)
	}
}

// TestGatherNotes: a Flux kind the cluster does not serve is a note, not
// an error; Capwright's kinds missing is a NotInstalledError.
func TestGatherNotes(t *testing.T) {
	noKind := func(kind string) interceptor.Funcs {
		return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			gvks, _, _ := c.Scheme().ObjectKinds(list)
			if len(gvks) > 0 && gvks[0].Kind == kind+"List" {
				return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: kind}}
			}
			return c.List(ctx, list, opts...)
		}}
	}
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}}
	r, err := (&Gatherer{Client: newClient(t, noKind(sourcev1.ExternalArtifactKind), p)}).Gather(context.Background(), Selection{})
	if err != nil || len(r.Notes) != 1 || r.Notes[0] != "the cluster does not serve Flux's ExternalArtifact kind (is Flux installed?); none shown" {
		t.Fatalf("notes %q, %v", r.Notes, err)
	}
	_, err = (&Gatherer{Client: newClient(t, noKind("CoreProvider"))}).Gather(context.Background(), Selection{})
	var e *NotInstalledError
	if !errors.As(err, &e) || e.Missing[0] != "coreproviders.providers.capwright.io" {
		t.Errorf("without Capwright's CRDs: %v", err)
	}
}
