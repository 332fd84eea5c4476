package tenants

import (
	"context"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/plane"
)

// podSecurityProbe is a Pod the baseline Pod Security Standard admits and
// restricted does not: it sets no securityContext (restricted wants
// runAsNonRoot, no privilege escalation, dropped capabilities and a
// seccomp profile).
func podSecurityProbe() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: managementNS, Name: "pod-security-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// assertPodSecurity checks that the tenant's namespace enforces its Pod
// Security level, restricted by default, and follows
// spec.management.podSecurity. The API server's Pod Security admission
// judges a dry-run create by the tenant's ServiceAccount, so nothing is
// created.
func assertPodSecurity(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + managementNS + ":" + tenantName}
	as := newClient(t, cfg)

	level := func() string {
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: managementNS}, &ns); err != nil {
			return err.Error()
		}
		return ns.Labels[render.PodSecurityEnforceLabel]
	}
	if got := level(); got != "restricted" {
		t.Fatalf("namespace %s: label %s = %q, want restricted by default", managementNS, render.PodSecurityEnforceLabel, got)
	}
	err := as.Create(ctx, podSecurityProbe(), client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
		t.Errorf("a Pod without a securityContext in the tenant's namespace: %v, want Pod Security restricted to refuse it", err)
	}

	setLevel := func(l tenancyv1alpha1.PodSecurityLevel) {
		t.Helper()
		var tn tenancyv1alpha1.Tenant
		if err := c.Get(ctx, client.ObjectKey{Name: tenantName}, &tn); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(tn.DeepCopy())
		tn.Spec.Management.PodSecurity = l
		if err := c.Patch(ctx, &tn, patch); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "namespace labelled "+string(l), func() (bool, string) {
			got := level()
			return got == string(l), got
		})
	}
	setLevel(tenancyv1alpha1.PodSecurityBaseline)
	if err := as.Create(ctx, podSecurityProbe(), client.DryRunAll); err != nil {
		t.Errorf("the same Pod with spec.management.podSecurity baseline: %v, want it admitted", err)
	}
	setLevel(tenancyv1alpha1.PodSecurityRestricted)
}

// assertManagerConfined checks the admission policies of
// manifests/rbac/manager_admission.yaml: the manager's ClusterRole lets it
// write Namespaces, ServiceAccounts, ResourceQuotas, RoleBindings and Flux
// objects anywhere, the policies only in Tenants' namespaces and only its
// own Flux objects. Each request is a
// dry run as the manager's user; without the policy all of them would be
// admitted.
func assertManagerConfined(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: plane.CapwrightUser}
	as := newClient(t, cfg)
	binding := func(ns string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "confinement-probe"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tenancyv1alpha1.TenantClusterRole},
		}
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("the manager %s: %v, want the admission policy to refuse it (%q)", what, err, want)
		}
	}
	refused("binding capwright-tenant in kube-system", as.Create(ctx, binding("kube-system"), client.DryRunAll),
		"may only write rolebindings in the namespaces of Tenants")
	refused("creating a ServiceAccount in default",
		as.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "confinement-probe"}}, client.DryRunAll),
		"may only write serviceaccounts in the namespaces of Tenants")
	refused("creating an unlabelled namespace",
		as.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "confinement-probe"}}, client.DryRunAll),
		"may only create or change the namespaces of Tenants")

	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[render.PodSecurityEnforceLabel] = "privileged"
	refused("labelling namespace default", as.Patch(ctx, &ns, patch, client.DryRunAll), "may only create or change the namespaces of Tenants")

	// Flux objects: only its own, labelled ones.
	source := func(labels map[string]string) *sourcev1.OCIRepository {
		return &sourcev1.OCIRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "confinement-probe", Labels: labels},
			Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example.com/probe", Interval: metav1.Duration{Duration: time.Hour}},
		}
	}
	refused("creating an unlabelled OCIRepository", as.Create(ctx, source(nil), client.DryRunAll),
		"may only write the Flux objects of providers, Tenants")
	if err := as.Create(ctx, source(map[string]string{tenancyv1alpha1.TenantLabel: tenantName}), client.DryRunAll); err != nil {
		t.Errorf("the manager creating a Tenant's OCIRepository: %v", err)
	}

	refused("creating a provider-labelled ServiceAccount that is no installer",
		as.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "confinement-probe",
			Labels: map[string]string{providersv1alpha1.ProviderKindLabel: "CoreProvider"}}}, client.DryRunAll),
		"may only write serviceaccounts in the namespaces of Tenants")

	// ClusterRoleBindings: only a provider's installer binding.
	installerBinding := func(name, saNamespace, sa string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{providersv1alpha1.ProviderKindLabel: "CoreProvider"}},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: saNamespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: providersv1alpha1.InstallerClusterRole},
		}
	}
	refused("binding the installer role to its own ServiceAccount",
		as.Create(ctx, installerBinding("capwright-provider-installer:capwright-system:capwright-manager", "capwright-system", "capwright-manager"), client.DryRunAll),
		"may only bind ClusterRole capwright-provider-installer to a provider's installer ServiceAccount")
	refused("binding the installer role under another provider's name",
		as.Create(ctx, installerBinding("capwright-provider-installer:capi-system:core-cluster-api", "kube-system", "core-cluster-api-installer"), client.DryRunAll),
		"may only bind ClusterRole capwright-provider-installer to a provider's installer ServiceAccount")
	if err := as.Create(ctx, installerBinding("capwright-provider-installer:capi-system:core-cluster-api", "capi-system", "core-cluster-api-installer"), client.DryRunAll); err != nil {
		t.Errorf("the manager binding a provider's installer: %v", err)
	}

	// In a Tenant's namespace the same requests pass.
	if err := as.Create(ctx, binding(managementNS), client.DryRunAll); err != nil {
		t.Errorf("the manager binding capwright-tenant in the tenant's namespace %s: %v", managementNS, err)
	}
}
