package tenants

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestTenantNamespacesClosedToTenants: a Tenant may not select Clusters
// where a management cluster keeps what is not the tenant's. The API
// server refuses kube-system (the CRD's CEL rule); the manager, with its
// default --tenant-forbidden-namespaces, refuses flux-system and writes
// nothing for the tenant's clusters, not even in the namespace it may use.
func TestTenantNamespacesClosedToTenants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	// Never fetched: nothing may be written that would fetch it.
	art := framework.PushedArtifact{URL: "oci://" + env.Registry.Host + "/tenants/closed", Tag: "v1.0.0"}
	closed := func(ns string) *tenancyv1alpha1.Tenant {
		return kustomizeTenant("closed", art, tenancyv1alpha1.ClusterSelector{Names: []string{workloads[0].Name}, Namespaces: []string{clusterNamespace, ns}})
	}

	t.Run("kube-system is refused by the API server", func(t *testing.T) {
		tn := closed("kube-system")
		err := c.Create(ctx, tn)
		if err == nil {
			_ = c.Delete(context.Background(), tn)
			t.Fatal("the API server accepted a Tenant that lists kube-system in spec.clusters.namespaces")
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "clusters.namespaces must not list kube-system, kube-public or kube-node-lease") {
			t.Fatalf("error %q, want the CRD's rule refusing kube-system", err)
		}
	})

	t.Run("a management namespace the manager forbids is refused", func(t *testing.T) { forbiddenManagementNamespace(t, ctx, c, art) })

	tn := closed(plane.FluxNamespace)
	createTenant(t, ctx, c, tn)
	tn = waitTenant(t, ctx, c, tn.Name, time.Minute, "Tenant refused", func(tn *tenancyv1alpha1.Tenant) bool {
		stalled := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.StalledCondition)
		return stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == tenancyv1alpha1.NamespaceNotAllowedReason
	})
	cond := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ClustersReadyCondition)
	if cond == nil || cond.Reason != tenancyv1alpha1.NamespaceNotAllowedReason ||
		!strings.Contains(cond.Message, "lists namespace flux-system (listed in the manager's --tenant-forbidden-namespaces)") {
		t.Errorf("ClustersReady = %+v, want NamespaceNotAllowed naming flux-system and the flag", cond)
	}
	mine := client.MatchingLabels{tenancyv1alpha1.TenantLabel: tn.Name}
	var kss kustomizev1.KustomizationList
	var repos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &kss, mine); err != nil || len(kss.Items) > 0 {
		t.Errorf("Kustomizations written for the refused tenant: %d (%v)", len(kss.Items), err)
	}
	if err := c.List(ctx, &repos, mine); err != nil || len(repos.Items) > 0 {
		t.Errorf("OCIRepositories written for the refused tenant: %d (%v)", len(repos.Items), err)
	}
}

// forbiddenManagementNamespace: Kubernetes' own namespaces are refused as
// a tenant's management namespace by the API server, the manager's
// forbidden ones by NamespaceNotAllowed, before anything is written: the
// namespace is not created, nor the tenant's ServiceAccount.
func forbiddenManagementNamespace(t *testing.T, ctx context.Context, c client.Client, art framework.PushedArtifact) {
	tn := kustomizeTenant("squatter", art, tenancyv1alpha1.ClusterSelector{Names: []string{workloads[0].Name}})
	tn.Spec.Management = &tenancyv1alpha1.ManagementSpec{Namespace: "kube-system"}
	err := c.Create(ctx, tn.DeepCopy())
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "management.namespace must not be kube-system") {
		t.Errorf("a Tenant with management namespace kube-system: %v, want the CRD's rule to refuse it", err)
	}

	// cert-manager is forbidden by default and does not exist on this
	// plane: the manager would create it.
	const forbidden = "cert-manager"
	if err := c.Get(ctx, client.ObjectKey{Name: forbidden}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s: %v, want it absent for this test", forbidden, err)
	}
	tn.Spec.Management.Namespace = forbidden
	createTenant(t, ctx, c, tn)
	tn = waitTenant(t, ctx, c, tn.Name, time.Minute, "Tenant refused", func(tn *tenancyv1alpha1.Tenant) bool {
		stalled := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.StalledCondition)
		return stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == tenancyv1alpha1.NamespaceNotAllowedReason
	})
	for _, cond := range []string{tenancyv1alpha1.StalledCondition, tenancyv1alpha1.ManagementReadyCondition} {
		if c := apimeta.FindStatusCondition(tn.Status.Conditions, cond); c == nil ||
			!strings.Contains(c.Message, "spec.management.namespace of Tenant squatter is cert-manager (listed in the manager's --tenant-forbidden-namespaces)") {
			t.Errorf("%s = %+v, want the management namespace named and why", cond, c)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: forbidden}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the refusal: %v, want it never created", forbidden, err)
	}
	var sas corev1.ServiceAccountList
	if err := c.List(ctx, &sas, client.MatchingLabels{tenancyv1alpha1.TenantLabel: tn.Name}); err != nil || len(sas.Items) > 0 {
		t.Errorf("ServiceAccounts written for the refused tenant: %d (%v)", len(sas.Items), err)
	}
}
