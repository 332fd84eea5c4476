package tenant

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/render"
)

// A kustomize stack's target namespace, orchestrated against a fake API
// server: the ExternalArtifact is written and points at the stored
// artifact, each cluster's namespace Kustomization is written and the
// stack's only once the namespace is Ready, without a dependsOn, a resync
// writes nothing, another replica restores the artifact, and deleting the
// Tenant removes the objects and the stored artifact.
func TestReconcileHandsFluxTheTargetNamespace(t *testing.T) {
	ctx := context.Background()
	tn := testTenant()
	tn.Finalizers = []string{tenancyv1alpha1.Finalizer}
	objs := []ctrl.Object{tn,
		testCluster("shared", "a", map[string]string{"team": "acme"}, true),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "a-kubeconfig"}},
	}
	c := indexed(fake.NewClientBuilder().WithScheme(testScheme(t))).WithObjects(objs...).
		WithStatusSubresource(&tenancyv1alpha1.Tenant{}, &sourcev1.ExternalArtifact{}, &kustomizev1.Kustomization{}).
		WithInterceptorFuncs(fluxFinalizes()).Build()
	storage, err := fluxartifact.New(t.TempDir(), "http://capwright-artifacts.capwright-system.svc:80")
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Reader: c, Clusters: c, WatchClusters: true, Artifacts: storage}
	req := reconcile.Request{NamespacedName: ctrl.ObjectKey{Name: tn.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}

	ea := &sourcev1.ExternalArtifact{}
	eaKey := ctrl.ObjectKey{Namespace: "shared", Name: render.TenantNamespaceArtifactName("acme")}
	if err := c.Get(ctx, eaKey, ea); err != nil {
		t.Fatal(err)
	}
	art := ea.Status.Artifact
	if art == nil || !strings.HasPrefix(art.URL, "http://capwright-artifacts.capwright-system.svc:80/externalartifact/shared/acme-namespace/") || !storage.Exists(*art) {
		t.Fatalf("ExternalArtifact status = %+v, want the stored artifact announced", ea.Status)
	}
	cluster := types.NamespacedName{Namespace: "shared", Name: "a"}
	nsKey := ctrl.ObjectKey{Namespace: "shared", Name: render.TenantNamespaceObjectName("acme", cluster)}
	stackKey := ctrl.ObjectKey{Namespace: "shared", Name: render.TenantClusterObjectName("acme", cluster)}
	nsKS, stack := &kustomizev1.Kustomization{}, &kustomizev1.Kustomization{}
	if err := c.Get(ctx, nsKey, nsKS); err != nil {
		t.Fatal(err)
	}
	if nsKS.Spec.SourceRef.Kind != sourcev1.ExternalArtifactKind {
		t.Fatalf("namespace source %+v, want the ExternalArtifact", nsKS.Spec.SourceRef)
	}
	if err := c.Get(ctx, stackKey, stack); !apierrors.IsNotFound(err) {
		t.Fatalf("the stack was written before its namespace exists: %v", err)
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if l := got.Status.Clusters; len(l) != 1 || l[0].Phase != tenancyv1alpha1.ClusterPhaseInstalling || !strings.Contains(l[0].Message, "is written once the target namespace exists") {
		t.Errorf("cluster lines = %+v, want Installing while the stack waits", l)
	}

	versions := namespaceVersions(t, ctx, c)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if again := namespaceVersions(t, ctx, c); !equalMaps(versions, again) {
		t.Errorf("a second reconcile with nothing changed wrote:\nbefore %v\nafter  %v", versions, again)
	}
	if err := c.Get(ctx, stackKey, stack); !apierrors.IsNotFound(err) {
		t.Fatalf("the stack was written while its namespace Kustomization had not run: %v", err)
	}

	// kustomize-controller created the namespace: the stack is written,
	// without dependsOn.
	ready := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 4, 0, time.UTC))
	nsKS.Status = kustomizev1.KustomizationStatus{ObservedGeneration: nsKS.Generation, LastAppliedRevision: art.Revision, Conditions: []metav1.Condition{
		{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, ObservedGeneration: nsKS.Generation, LastTransitionTime: ready}}}
	if err := c.Status().Update(ctx, nsKS); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, stackKey, stack); err != nil {
		t.Fatalf("the stack was not written once its namespace exists: %v", err)
	}
	if len(stack.Spec.DependsOn) > 0 {
		t.Errorf("stack dependsOn = %+v, want none", stack.Spec.DependsOn)
	}

	// The namespace Kustomization's hourly re-check does not hold an
	// existing stack back.
	nsKS.Status.Conditions[0].Status = metav1.ConditionUnknown
	nsKS.Status.Conditions[0].Reason = meta.ProgressingReason
	if err := c.Status().Update(ctx, nsKS); err != nil {
		t.Fatal(err)
	}
	tn = &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, req.NamespacedName, tn); err != nil {
		t.Fatal(err)
	}
	tn.Spec.Stack.Kustomize.Path = "./deploy"
	if err := c.Update(ctx, tn); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, stackKey, stack); err != nil || stack.Spec.Path != "./deploy" {
		t.Errorf("stack path = %q (%v), want the new spec applied while the namespace Kustomization re-checks", stack.Spec.Path, err)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}

	// A replica that does not hold the artifact restores it when asked.
	if err := os.RemoveAll(filepath.Join(storage.Root(), "externalartifact")); err != nil {
		t.Fatal(err)
	}
	restore := r.RestoreArtifacts(nil)
	if err := restore(ctx, "externalartifact", eaKey.Namespace, eaKey.Name); err != nil || !storage.Exists(*art) {
		t.Errorf("restoring %s: %v, stored %v", eaKey, err, storage.Exists(*art))
	}
	if err := restore(ctx, "ocirepository", "shared", "acme-stack"); err == nil {
		t.Error("restored an artifact no one stores")
	}

	// Deleting the Tenant deletes the Kustomizations, then the
	// ExternalArtifact and its stored artifact.
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for key, o := range map[ctrl.ObjectKey]ctrl.Object{nsKey: &kustomizev1.Kustomization{}, stackKey: &kustomizev1.Kustomization{}, eaKey: &sourcev1.ExternalArtifact{}} {
		if err := c.Get(ctx, key, o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after the Tenant's deletion: %v", o, key, err)
		}
	}
	if _, err := os.Stat(filepath.Join(storage.Root(), "externalartifact", "shared", eaKey.Name)); !os.IsNotExist(err) {
		t.Errorf("the stored artifact outlived its ExternalArtifact: %v", err)
	}
}

// resourceVersions of the namespace's objects, the stack and the Tenant.
func namespaceVersions(t *testing.T, ctx context.Context, c ctrl.Client) map[string]string {
	t.Helper()
	out := resourceVersions(t, ctx, c)
	var eas sourcev1.ExternalArtifactList
	if err := c.List(ctx, &eas); err != nil {
		t.Fatal(err)
	}
	for _, ea := range eas.Items {
		out["ea/"+ea.Namespace+"/"+ea.Name] = ea.ResourceVersion
	}
	return out
}
