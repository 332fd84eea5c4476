package contract

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/plan"
)

// The stages of a control plane's reconcile against a fake API server:
// facts, plan, sync and fold, twice — before and after Flux and the
// backend report ready.

func fakeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme,
		helmv2.AddToScheme, clustersv1alpha1.AddToScheme, clusterapi.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func fakeControlPlane() (*clusterapi.Cluster, *clustersv1alpha1.CapwrightControlPlane) {
	cluster := &clusterapi.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha", UID: "uid-cluster"}}
	cp := &clustersv1alpha1.CapwrightControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-cp", UID: "uid-cp", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterapi.ClusterAPIVersion, Kind: "Cluster", Name: "alpha", UID: "uid-cluster"}}},
		Spec: clustersv1alpha1.CapwrightControlPlaneSpec{
			Version: "v1.31.2",
			CapwrightControlPlaneResourceSpec: clustersv1alpha1.CapwrightControlPlaneResourceSpec{
				Backend: clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{
					OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/hcp"}, Tag: "v1"}},
				StatusFrom: clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-hcp",
					Ready: `data.ready == "true"`, Endpoint: `data.endpoint`, Version: `data.version`},
				Kubeconfig: clustersv1alpha1.KubeconfigSource{SecretName: "${CLUSTER_NAME}-admin"},
			},
		},
	}
	return cluster, cp
}

func reconcileCP(t *testing.T, r *ControlPlaneReconciler, c ctrl.Client) (*clustersv1alpha1.CapwrightControlPlane, shell.Outcome, error) {
	t.Helper()
	cp := &clustersv1alpha1.CapwrightControlPlane{}
	if err := c.Get(context.Background(), ctrl.ObjectKey{Namespace: "team", Name: "alpha-cp"}, cp); err != nil {
		t.Fatal(err)
	}
	cpSteps{r}.Init(cp)
	out, err := r.reconcile(context.Background(), cp, "")
	return cp, out, err
}

func TestControlPlaneStages(t *testing.T) {
	ctx := context.Background()
	cluster, cp := fakeControlPlane()
	c := fake.NewClientBuilder().WithScheme(fakeScheme(t)).WithObjects(cluster, cp).Build()
	r := &ControlPlaneReconciler{Shared: &Shared{Client: c, Reader: c, ResyncInterval: 30 * time.Second}}

	// Written; nothing ready yet.
	got, out, err := reconcileCP(t, r, c)
	if err != nil || out.Result.RequeueAfter != 15*time.Second {
		t.Fatalf("first reconcile: %+v, %v", out, err)
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		k := conditions.Get(got, typ)
		if k == nil || k.Status != status || k.Reason != reason || !strings.Contains(k.Message, message) {
			t.Fatalf("%s = %+v; want %s %s %q", typ, k, status, reason, message)
		}
	}
	cond(clustersv1alpha1.BackendReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "OCIRepository team/controlplane-alpha-cp")
	cond(clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionUnknown, clustersv1alpha1.WaitingForBackendReason, "Secret team/alpha-admin")
	cond(clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.StatusObjectNotFoundReason, "ConfigMap team/alpha-hcp (spec.statusFrom) does not exist yet")
	key := ctrl.ObjectKey{Namespace: "team", Name: "controlplane-alpha-cp"}
	var repo sourcev1.OCIRepository
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, key, &repo); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.PostBuild == nil || ks.Spec.PostBuild.Substitute["CLUSTER_NAME"] != "alpha" || ks.Annotations["capwright.io/applied-hash"] == "" {
		t.Fatalf("the Kustomization as written: %+v", ks.Annotations)
	}

	// Flux installed it; the backend reports its endpoint and writes the
	// kubeconfig.
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, ObservedGeneration: repo.Generation}}
	repo.Status = sourcev1.OCIRepositoryStatus{ObservedGeneration: repo.Generation, Conditions: ready, Artifact: &meta.Artifact{Revision: "v1@sha256:aa"}}
	ready[0].ObservedGeneration = ks.Generation
	ks.Status = kustomizev1.KustomizationStatus{ObservedGeneration: ks.Generation, Conditions: ready, LastAppliedRevision: "v1@sha256:aa"}
	for _, o := range []ctrl.Object{&repo, &ks} {
		if err := c.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []ctrl.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-hcp"},
			Data: map[string]string{"ready": "true", "endpoint": "https://10.0.0.1:6443", "version": "v1.31.2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-admin"}, Data: map[string][]byte{"value": []byte("a kubeconfig")}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	got, out, err = reconcileCP(t, r, c)
	if err != nil || out.Result.RequeueAfter != 15*time.Second {
		// The status view is not watched here: it is polled.
		t.Fatalf("second reconcile: %+v, %v", out, err)
	}
	cond(clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason, "Flux installed Kustomization")
	cond(clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason, "Secret team/alpha-kubeconfig holds the kubeconfig of Secret team/alpha-admin")
	cond(clustersv1alpha1.AvailableCondition, metav1.ConditionTrue, clustersv1alpha1.AvailableReason, "serves Kubernetes v1.31.2 at 10.0.0.1:6443")
	if !ptr.Deref(got.Status.Initialization.ControlPlaneInitialized, false) || got.Status.Version != "v1.31.2" {
		t.Fatalf("status %+v", got.Status)
	}
	var stored clustersv1alpha1.CapwrightControlPlane
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(cp), &stored); err != nil || stored.Spec.ControlPlaneEndpoint.Host != "10.0.0.1" || stored.Spec.ControlPlaneEndpoint.Port != 6443 {
		t.Fatalf("the endpoint was not written: %+v, %v", stored.Spec.ControlPlaneEndpoint, err)
	}
	var published corev1.Secret
	if err := c.Get(ctx, ctrl.ObjectKey{Namespace: "team", Name: "alpha-kubeconfig"}, &published); err != nil {
		t.Fatal(err)
	}
	if string(published.Data["value"]) != "a kubeconfig" || published.Type != "cluster.x-k8s.io/secret" ||
		published.Labels[clusterapi.ClusterNameLabel] != "alpha" || metav1.GetControllerOf(&published).UID != "uid-cp" {
		t.Fatalf("the published kubeconfig: %+v", published)
	}

	// A published Secret that is someone else's is refused, not written.
	if err := c.Delete(ctx, &published); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-kubeconfig"}, Data: map[string][]byte{"value": []byte("theirs")}}); err != nil {
		t.Fatal(err)
	}
	got, out, err = reconcileCP(t, r, c)
	if err != nil || out.Result.RequeueAfter != 15*time.Second {
		t.Fatalf("a Secret that is someone else's: %+v, %v", out, err)
	}
	cond(clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionFalse, clustersv1alpha1.ObjectConflictReason,
		"Secret team/alpha-kubeconfig exists and is not this control plane's")
	if err := c.Get(ctx, ctrl.ObjectKey{Namespace: "team", Name: "alpha-kubeconfig"}, &published); err != nil || string(published.Data["value"]) != "theirs" {
		t.Fatalf("someone else's Secret was written: %v", err)
	}
}

func TestControlPlaneStagesRefuse(t *testing.T) {
	t.Run("a Flux object that is someone else's", func(t *testing.T) {
		cluster, cp := fakeControlPlane()
		theirs := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "controlplane-alpha-cp"}}
		c := fake.NewClientBuilder().WithScheme(fakeScheme(t)).WithObjects(cluster, cp, theirs).Build()
		r := &ControlPlaneReconciler{Shared: &Shared{Client: c, Reader: c, ResyncInterval: 30 * time.Second}}
		got, out, err := reconcileCP(t, r, c)
		refusal, ok := plan.AsRefusal(err)
		if !ok || !refusal.Stalls || refusal.Reason != clustersv1alpha1.ObjectConflictReason ||
			!strings.Contains(refusal.Message, "OCIRepository team/controlplane-alpha-cp exists and is not this CapwrightControlPlane's") {
			t.Fatalf("outcome %+v, %v; want an ObjectConflict stall", out, err)
		}
		if k := conditions.Get(got, clustersv1alpha1.BackendReadyCondition); k.Reason != clustersv1alpha1.ObjectConflictReason {
			t.Fatalf("BackendReady %+v", k)
		}
		var ks kustomizev1.Kustomization
		if err := c.Get(context.Background(), ctrl.ObjectKey{Namespace: "team", Name: "controlplane-alpha-cp"}, &ks); err == nil {
			t.Fatal("the Kustomization was written beside someone else's source")
		}
	})
	t.Run("no Cluster yet", func(t *testing.T) {
		_, cp := fakeControlPlane()
		c := fake.NewClientBuilder().WithScheme(fakeScheme(t)).WithObjects(cp).Build()
		r := &ControlPlaneReconciler{Shared: &Shared{Client: c, Reader: c, ResyncInterval: 30 * time.Second}}
		got, out, err := reconcileCP(t, r, c)
		refusal, ok := plan.AsRefusal(err)
		retry := out.Result.RequeueAfter
		if ok && refusal.RetryAfter > 0 {
			retry = refusal.RetryAfter
		}
		if !ok || refusal.Stalls || retry != 30*time.Second {
			t.Fatalf("outcome %+v, %v; want a wait", out, err)
		}
		for _, typ := range []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.AvailableCondition} {
			if k := conditions.Get(got, typ); k.Status != metav1.ConditionFalse || k.Reason != clustersv1alpha1.WaitingForClusterReason {
				t.Fatalf("%s %+v", typ, k)
			}
		}
	})
}
