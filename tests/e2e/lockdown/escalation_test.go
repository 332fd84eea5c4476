package lockdown

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// escalation is a ClusterRoleBinding that would make the tenant's
// ServiceAccount cluster-admin.
const escalation = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: acme-escalation
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: acme
  namespace: tenant-acme
`

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := framework.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{tenancyv1alpha1.AddToScheme, providersv1alpha1.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme,
		helmv2.AddToScheme, clustersv1alpha1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestTenantCannotEscalateThroughFlux: a Tenant's ServiceAccount, bound
// by Capwright to capwright-tenant in its namespace (which aggregates
// admin, which `flux install` extends with flux-edit), may create a
// Kustomization there — and under lockdown that Kustomization applies as
// a ServiceAccount of the namespace, so one that would bind cluster-admin
// is refused by the API server, whichever ServiceAccount it names or
// omits. Without lockdown kustomize-controller would apply it as itself.
func TestTenantCannotEscalateThroughFlux(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)

	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{"none-yet"}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://" + env.Registry.Host + "/stacks/acme", Insecure: true},
				Tag:                 "v1.0.0",
			}},
		},
	}
	if err := c.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(context.Background(), tn) }()
	const ns = "tenant-acme"
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, err
		}
		cond := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ManagementReadyCondition)
		last = ""
		if cond != nil {
			last = cond.Reason + ": " + cond.Message
		}
		return cond != nil && cond.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("Tenant acme's namespace and RBAC: %v; last ManagementReady %s", err, last)
	}

	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/acme-escalation", "v1", map[string][]byte{"binding.yaml": []byte(escalation)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":acme"}
	as := newClient(t, cfg)
	// The tenant's ServiceAccount may write Flux objects in its
	// namespace: the aggregation is real.
	repo := framework.OCIRepository(ns, "escalation", art)
	if err := as.Create(ctx, repo); err != nil {
		t.Fatalf("the tenant's ServiceAccount creating an OCIRepository in %s: %v (flux-edit should reach it through admin)", ns, err)
	}
	for _, sa := range []string{"", "acme"} {
		name := "escalation-" + map[string]string{"": "default", "acme": "tenant"}[sa]
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: repo.Name},
				Path: "./", Prune: true, Interval: metav1.Duration{Duration: time.Hour}, ServiceAccountName: sa}}
		if err := as.Create(ctx, ks); err != nil {
			t.Fatalf("the tenant's ServiceAccount creating a Kustomization in %s: %v", ns, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
				return false, err
			}
			cond := apimeta.FindStatusCondition(ks.Status.Conditions, "Ready")
			if cond != nil {
				last = cond.Reason + ": " + cond.Message
			}
			return cond != nil && cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "forbidden"), nil
		})
		if err != nil {
			t.Errorf("Kustomization %s/%s (serviceAccountName %q): %v; last Ready %s, want the API server to forbid the ClusterRoleBinding", ns, name, sa, err, last)
		}
		t.Logf("Kustomization %s (serviceAccountName %q): %s", name, sa, last)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "acme-escalation"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding acme-escalation: %v, want it never created", err)
	}
}
